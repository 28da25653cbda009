package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/verify"
)

type catalogueCase struct {
	Name   string `json:"name"`
	Files  []string
	Expect []struct {
		Class, File, LSN string
	}
	VerifyExit int `json:"verify_exit"`
	Records    int `json:"records"`
	PgWaldump  struct {
		Exit   int
		Stderr string
		LSN    string
	} `json:"pg_waldump"`
}

// pgMessage is the xlogreader or file message of pg_waldump's error line.
var pgMessage = regexp.MustCompile(`pg_waldump: error: (?:error in WAL record at [0-9A-F]+/[0-9A-F]+: )?(.*)`)

// TestCorruptionCatalogue runs walscope verify over every case of
// fixtures/corrupt (made by fixtures/corrupt/gen from real PostgreSQL 15
// segments): it must report exactly the planted problems, with their class,
// file and LSN, and the expected exit code; where pg_waldump 15 reported an
// error, walscope must name the same LSN, and walscope dump in pg_waldump's
// form must end with pg_waldump's own message.
func TestCorruptionCatalogue(t *testing.T) {
	root := testwal.Root(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "fixtures", "corrupt", "*", "case.json"))
	if len(dirs) < 15 {
		t.Fatalf("only %d catalogue cases", len(dirs))
	}
	classes := map[string]bool{}
	for _, cj := range dirs {
		var c catalogueCase
		b, err := os.ReadFile(cj)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := testwal.UntarZstd(filepath.Join(filepath.Dir(cj), "segments.tar.zst"), dir); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := walscope(t, dir, "verify", "--format", "json", ".")
			if code != c.VerifyExit {
				t.Errorf("verify exit %d, want %d; stderr %q", code, c.VerifyExit, stderr)
			}
			var rep verify.VerifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("verify output: %v\n%s", err, out)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Class.String()+" "+filepath.Base(p.File)+" "+p.LSNStr)
			}
			if rep.End != nil {
				got = append(got, "end-of-wal "+filepath.Base(rep.End.File)+" "+rep.End.LSNStr)
			}
			var want []string
			for _, e := range c.Expect {
				want = append(want, e.Class+" "+e.File+" "+e.LSN)
				classes[e.Class] = true
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("verify found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if c.Records >= 0 && rep.Records != uint64(c.Records) {
				t.Errorf("verify read %d records, pg_waldump read %d around the same damage", rep.Records, c.Records)
			}
			if c.PgWaldump.LSN != "" && (len(got) == 0 || !strings.HasSuffix(got[0], " "+c.PgWaldump.LSN)) {
				t.Errorf("pg_waldump names %s, walscope's first finding is %v", c.PgWaldump.LSN, got)
			}
			if c.PgWaldump.Exit != 0 {
				m := pgMessage.FindStringSubmatch(c.PgWaldump.Stderr)
				_, derr, _ := walscope(t, dir, "dump", "-p", ".", c.Files[0], c.Files[len(c.Files)-1])
				if m == nil || !strings.Contains(derr, m[1]) {
					t.Errorf("dump ended with %q; pg_waldump with %q", derr, c.PgWaldump.Stderr)
				}
			}
		})
	}
	for _, cl := range []verify.Class{verify.ClassEnd, verify.ClassZeroedTorn, verify.ClassRecycled, verify.ClassCRC,
		verify.ClassRecordHeader, verify.ClassPageHeader, verify.ClassMissingSegment, verify.ClassTruncated,
		verify.ClassOtherSystem, verify.ClassUnknownVersion} {
		if !classes[string(cl)] {
			t.Errorf("no catalogue case of class %s", cl)
		}
	}
}

// TestCatalogFromDevice: --catalog /dev/zero (no line end, ever) is refused
// as no catalog, exit 2; it was read without end.
func TestCatalogFromDevice(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, stderr, code := walscope(t, "", "stats", "--by", "relation", "--catalog", "/dev/zero", sampleWAL(t))
		if code != exitUsage || !strings.Contains(stderr, `catalog "/dev/zero": a line longer than`) {
			t.Errorf("exit %d, want %d: %s", code, exitUsage, stderr)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("--catalog /dev/zero: still reading after a minute")
	}
}
