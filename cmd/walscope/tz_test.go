package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zones for the test, whatever the machine has

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/internal/testwal"
)

// TestTimeZones: descriptions print timestamps in the zone TZ names, as
// pg_waldump does. The references are pg_waldump 15's output with TZ set
// (fixtures/tz/generate.sh); walscope reads TZ through time.Local, which the
// test sets the same way.
func TestTimeZones(t *testing.T) {
	root := testwal.Root(t)
	var set testwal.Set
	for _, s := range testwal.Sets(t) {
		if s.Name == "fixtures/pg15-replica-lz4" {
			set = s
		}
	}
	dir := testwal.Extract(t, set)
	tl := testwal.Timelines(t, dir)[0]
	for _, zone := range []string{"America/St_Johns", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(root, "fixtures", "tz", "records-"+strings.ReplaceAll(zone, "/", "_")+".txt.zst"))
		if err != nil {
			t.Fatal(err)
		}
		zr, _ := zstd.NewReader(f)
		want, err := io.ReadAll(zr)
		zr.Close()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		saved := time.Local
		time.Local = loc
		got, _, _ := walscope(t, dir, "dump", "-p", "archive", tl.First, tl.Last)
		time.Local = saved
		if !strings.Contains(string(want), "COMMIT 20") {
			t.Fatal("reference has no commit timestamps")
		}
		compareDump(t, zone, got, string(want))
	}
}
