package names

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// TestXLOGPassWithNames: on every fixture archive (real WAL of PostgreSQL
// 13, 15 and 18, VACUUM FULL of pg_class among them), the one reading of
// XLOGPassWithNames, a segment per span, learns exactly the names
// LearnNames' single reader learns, and finds exactly XLOGPass's
// checkpoint cycles. Both of its ways are taken: catalogs in their
// default files (the parallel reading) and pg_class moved (LearnNames).
func TestXLOGPassWithNames(t *testing.T) {
	sets, err := filepath.Glob(filepath.Join("..", "fixtures", "*", "archive.tar.zst"))
	if err != nil || len(sets) == 0 {
		t.Fatalf("no fixture archives: %v", err)
	}
	moved, inPlace := 0, 0
	for _, p := range sets {
		name := filepath.Base(filepath.Dir(p))
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "ref.tar.zst")); err != nil {
			continue // not a set (fixtures/rows: a backup and its archive)
		}
		t.Run(name, func(t *testing.T) {
			dir, ok := waltest.FixtureSet(t, name)
			if !ok {
				t.Fatalf("fixtures/%s: no archive", name)
			}
			src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
			if err != nil {
				t.Fatal(err)
			}
			opts := xlog.Options{FollowHistory: true}
			want, err := LearnNames(src, opts, 8192)
			if err != nil {
				t.Fatal(err)
			}
			add := func(f *stats.RedoFinder, d *decode.Record) { f.Add(d) }
			wantParts, wantStart, wantEnd, err := pass.XLOGPass(src, opts, 8192, 2, 1, true, add)
			if err != nil {
				t.Fatal(err)
			}
			parts, start, end, got, err := XLOGPassWithNames(src, opts, 8192, 2, 1, add)
			if err != nil {
				t.Fatal(err)
			}
			if start != wantStart || end != wantEnd {
				t.Errorf("read %s to %s, XLOGPass %s to %s", start, end, wantStart, wantEnd)
			}
			if c, w := cyclesOf(parts, start), cyclesOf(wantParts, wantStart); !reflect.DeepEqual(c, w) {
				t.Errorf("cycles %+v, XLOGPass's %+v", c, w)
			}
			if len(want.Files()) == 0 {
				t.Fatal("LearnNames named no file")
			}
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"files", got.Files(), want.Files()},
				{"relation maps", got.relmap, want.relmap},
				{"mapped", got.mapped, want.mapped},
				{"pg_class files", got.classFile, want.classFile},
				{"pg_namespace files", got.nspFile, want.nspFile},
				{"histories", got.history, want.history},
				{"unresolved", got.Unresolved, want.Unresolved},
				{"bad images", got.BadImages, want.BadImages},
				{"version", got.version, want.version},
				{"namespaces", got.nsp, want.nsp},
				{"database names", got.datname, want.datname},
				{"pg_database file", got.dbFile, want.dbFile},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s differ from LearnNames'", c.what)
				}
			}
			if want.movedCatalogs() {
				moved++
			} else {
				inPlace++
			}
		})
	}
	if moved == 0 || inPlace == 0 {
		t.Errorf("%d sets move pg_class or pg_namespace, %d do not: one way is untested", moved, inPlace)
	}
}

func cyclesOf(parts []stats.RedoFinder, start xlog.LSN) []stats.CycleInfo {
	var all stats.RedoFinder
	for i := range parts {
		all.Append(&parts[i])
	}
	return all.Cycles(start)
}
