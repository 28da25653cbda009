package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// refError matches pg_waldump's closing error line.
var refError = regexp.MustCompile(`error in WAL record at [0-9A-F]+/[0-9A-F]+: (.*)`)

// TestDumpMatchesPgWaldump runs `walscope dump` and `walscope dump -b` with
// pg_waldump's own arguments over every fixture and corpus timeline and
// compares with the pg_waldump output stored beside it: the same number of
// records, every line equal up to and including the record type name, every
// block reference equal, and the run ending where pg_waldump's ended.
func TestDumpMatchesPgWaldump(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := testwal.Extract(t, set)
			for _, tl := range testwal.Timelines(t, dir) {
				for _, mode := range []struct{ flag, ref string }{{"", "records-"}, {"-b", "bkp-"}} {
					want, err := testwal.ReadRef(dir, mode.ref+tl.TLI+".txt")
					if err != nil {
						t.Fatal(err)
					}
					args := []string{"dump", "-p", "archive", tl.First, tl.Last}
					if mode.flag != "" {
						args = []string{"dump", mode.flag, "-p", "archive", tl.First, tl.Last}
					}
					got, stderr, code := walscope(t, dir, args...)
					name := mode.ref + tl.TLI
					compareDump(t, name, got, want)
					refErr, _ := testwal.ReadRef(dir, "records-"+tl.TLI+".err")
					if m := refError.FindStringSubmatch(refErr); m != nil {
						if !strings.Contains(stderr, m[1]) {
							t.Errorf("%s: pg_waldump ended with %q; walscope's stderr is %q", name, m[1], stderr)
						}
					} else if code != 0 {
						t.Errorf("%s: exit code %d, stderr %q; pg_waldump ended cleanly", name, code, stderr)
					}
				}
			}
		})
	}
}

// compareDump compares walscope's dump with pg_waldump's line by line, byte
// for byte, and reports the first differing line.
func compareDump(t *testing.T, name, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g := strings.Split(got, "\n")
	w := strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			t.Errorf("%s: line %d differs:\n got: %s\nwant: %s", name, i+1, g[i], w[i])
			return
		}
	}
	t.Errorf("%s: %d lines, pg_waldump printed %d", name, len(g), len(w))
}

// TestEveryManagerDescribes: every built-in resource manager has its
// descriptions, so every line is compared whole.
func TestEveryManagerDescribes(t *testing.T) {
	for id := xlog.RmgrID(0); id <= xlog.RmgrMaxBuiltin; id++ {
		if m := rmgr.Lookup(id); m == nil || m.Desc == nil {
			t.Errorf("resource manager %d (%s) has no descriptions", id, rmgr.Name(id))
		}
	}
}

// TestSaveFullpageMatchesPgWaldump18 checks --save-fullpage against the file
// names and SHA-256 sums of pg_waldump 18's files.
func TestSaveFullpageMatchesPgWaldump18(t *testing.T) {
	checked := 0
	for _, set := range testwal.Sets(t) {
		dir := testwal.Extract(t, set)
		for _, tl := range testwal.Timelines(t, dir) {
			ref, err := testwal.ReadRef(dir, "save-fullpage-"+tl.TLI+".sha256")
			if err != nil {
				continue
			}
			out := filepath.Join(t.TempDir(), "fpw")
			if _, stderr, code := walscope(t, dir, "dump", "-q", "--save-fullpage", out, "-p", "archive", tl.First, tl.Last); code != 0 {
				t.Fatalf("%s %s: exit %d: %s", set.Name, tl.TLI, code, stderr)
			}
			var got []string
			ents, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(out, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				got = append(got, hex.EncodeToString(sum[:])+"  "+e.Name())
			}
			want := strings.Split(strings.TrimSpace(ref), "\n")
			sort.Strings(got)
			sort.Strings(want)
			if len(got) != len(want) {
				t.Errorf("%s %s: %d files, pg_waldump wrote %d", set.Name, tl.TLI, len(got), len(want))
			}
			for i := 0; i < len(got) && i < len(want); i++ {
				if got[i] != want[i] {
					t.Errorf("%s %s: first difference:\n got: %s\nwant: %s", set.Name, tl.TLI, got[i], want[i])
					break
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no save-fullpage reference found")
	}
}
