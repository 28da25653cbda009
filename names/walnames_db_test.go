package names

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// TestDatabaseNames: on real WAL of PostgreSQL 10 to 18
// (fixtures/versions/pgN, made by fixtures/versions.sh: initdb's template0
// and postgres, then `create database fxdb1 strategy wal_log; create
// database fxdb2 strategy file_copy` from 15 on, `create database fxdb2`
// before, each dropped afterwards), the databases that pg_waldump's oracle
// shows created (Database CREATE records, in WAL order) are named as the
// script and initdb named them, through both readings the commands use
// (LearnNames, and XLOGPassWithNames, the export's), dropped ones included.
func TestDatabaseNames(t *testing.T) {
	created := regexp.MustCompile(`desc: CREATE\S* (?:copy|create) dir (?:.* )?(\d+)/(\d+)\s*$`)
	for _, v := range []int{10, 11, 12, 13, 14, 15, 16, 17, 18} {
		name := "versions/pg" + strconv.Itoa(v)
		t.Run(name, func(t *testing.T) {
			dir, ok := waltest.FixtureSet(t, name)
			if !ok {
				t.Fatalf("fixtures/%s: no archive", name)
			}
			refs, _ := filepath.Glob(filepath.Join(dir, "ref", "*records-00000001.txt"))
			if len(refs) != 1 {
				t.Fatalf("fixtures/%s: want one records-00000001.txt oracle, have %v", name, refs)
			}
			f, err := os.Open(refs[0])
			if err != nil {
				t.Fatal(err)
			}
			var oids []uint32
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				m := created.FindStringSubmatch(sc.Text())
				if m == nil {
					continue
				}
				// "1663/16562" from 12 on; "16558/1663" (database first) in 10
				s := m[2]
				if v == 10 {
					s = m[1]
				}
				oid, _ := strconv.ParseUint(s, 10, 32)
				oids = append(oids, uint32(oid))
			}
			f.Close()
			want := []string{"template0", "postgres", "fxdb2"}
			if v >= 15 {
				want = []string{"template0", "postgres", "fxdb1", "fxdb2"}
			}
			if len(oids) < len(want)-2 || len(oids) > len(want) {
				t.Fatalf("the oracle shows %d databases created (%v), the script %d or, with initdb's, %d", len(oids), oids, len(want)-2, len(want))
			}
			want = want[len(want)-len(oids):]
			src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
			if err != nil {
				t.Fatal(err)
			}
			opts := xlog.Options{FollowHistory: true}
			seq, err := LearnNames(src, opts, 8192)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, par, err := XLOGPassWithNames(src, opts, 8192, 2, 1, func(*stats.RedoFinder, *decode.Record) {})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []*WALNames{seq, par} {
				for i, oid := range oids {
					if got, ok := w.DatabaseName(oid); got != want[i] {
						t.Errorf("database %d: named %q (%v), created as %q", oid, got, ok, want[i])
					}
				}
				// template1 is the one database whose oid is fixed in every version
				if got, ok := w.DatabaseName(1); ok && got != "template1" {
					t.Errorf("database 1 named %q", got)
				}
			}
		})
	}
}
