package objstoretest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog/objstore"
)

// tlNights copies the timeline-switch fixture's files into three growing
// archive directories, cut by segment index (the third night brings the
// .partial segment, the history file and timeline 2).
func tlNights(t *testing.T) []string {
	t.Helper()
	var src string
	for _, s := range testwal.Sets(t) {
		if s.Name == fixtureSet {
			src = filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	base := t.TempDir()
	var dirs []string
	for k, cut := range []int{4, 8, 11} {
		d := filepath.Join(base, "night"+string(rune('1'+k)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		seg := -1
		for _, n := range names {
			if !strings.Contains(n, ".") || strings.HasSuffix(n, ".partial") {
				seg++
			}
			if seg >= cut {
				break
			}
			b, err := os.ReadFile(filepath.Join(src, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// batchOf decodes a manifest file with what differs between two runs (the
// commit time) cleared.
func batchOf(t *testing.T, b []byte) *export.Batch {
	t.Helper()
	batch, err := export.ParseBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	batch.Created = time.Time{}
	return batch
}

// TestAppendToStore grows an incremental dataset night by night in each
// store (S3: versitygw), from the same nights as a local one: the objects
// are the local files byte for byte (the manifests alike but for their
// commit time); a re-run is a no-op; a batch directory no manifest lists (a
// killed run's upload) is replaced by the next night's. The third night's
// WAL is read from the store itself. walscope growth gives the same over
// the store's dataset as over the local one.
func TestAppendToStore(t *testing.T) {
	ns := tlNights(t)
	local := filepath.Join(t.TempDir(), "ds")
	for _, n := range ns {
		if r := run(t, nil, "export", "--append", local, n); r.code != 0 {
			t.Fatalf("local append %s: exit %d: %s", n, r.code, r.stderr)
		}
	}
	want := readLocal(t, local)
	for _, mk := range []func(testing.TB) *Store{S3, GCS, Azure} {
		s := mk(t)
		t.Run(s.Name, func(t *testing.T) {
			out := s.Bucket + "/lake/wal"
			for i, n := range ns {
				if i == 2 {
					// A killed run of night 3 uploaded a file of its batch
					// and no manifest.
					junk := t.TempDir()
					p := filepath.Join(junk, "records", "batch=3", "day=2026-11-30")
					os.MkdirAll(p, 0o755)
					os.WriteFile(filepath.Join(p, "part-0000000000000000.parquet"), []byte("partial"), 0o644)
					upload(t, s, junk, "lake/wal")
				}
				if i == 2 {
					// The third night read in place from the store too
					// (checksums through ranged reads).
					n = upload(t, s, n, "archive/night3")
				}
				if r := run(t, s.Env, "export", "--append", out, n); r.code != 0 {
					t.Fatalf("append %s: exit %d: %s", n, r.code, r.stderr)
				}
				if i == 2 {
					// A run killed after committing its merge (batch 3)
					// leaves the files it merged, and their directories'
					// markers: the re-run removes them (the keys compared
					// below).
					restoreReplaced(t, s, local, out)
				}
				if r := run(t, s.Env, "export", "--append", out, n); r.code != 0 || !strings.Contains(r.stderr, "nothing to append") {
					t.Errorf("re-run of %s: exit %d: %s", n, r.code, r.stderr)
				}
			}
			got := download(t, out)
			if !reflect.DeepEqual(keys(got), keys(want)) {
				t.Fatalf("objects %v\nwant the local files %v", keys(got), keys(want))
			}
			for k, b := range want {
				switch {
				case strings.HasPrefix(k, export.ManifestDir+"/") && strings.HasSuffix(k, ".json"):
					if g, w := batchOf(t, got[k]), batchOf(t, b); !reflect.DeepEqual(g, w) {
						t.Errorf("%s: %+v\nwant %+v", k, g, w)
					}
				case strings.HasSuffix(k, export.MarkerName):
					if m1, m2 := marker(t, got[k]), marker(t, b); !reflect.DeepEqual(m1, m2) {
						t.Errorf("%s: %+v, want %+v", k, m1, m2)
					}
				case !bytes.Equal(got[k], b):
					t.Errorf("%s differs from the local file", k)
				}
			}
			m := batchOf(t, got[export.ManifestDir+"/"+export.BatchFileName(3)])
			if m.EndTimeline != 2 {
				t.Errorf("batch 3 ends on timeline %d", m.EndTimeline)
			}
			// Each night merged its day's files with the small files of
			// that day before it (export/merge.go): the replaced objects
			// are removed from the store, as the files are from the local
			// dataset (the keys above).
			if len(m.Replaces) == 0 {
				t.Errorf("batch 3 merged no earlier file")
			}
			// growth reads the store's dataset as the local one
			for _, args := range [][]string{{"--format", "json"}, {"--format", "csv", "--by", "hour"}} {
				g := run(t, s.Env, append([]string{"growth", "--dataset", out}, args...)...)
				l := run(t, nil, append([]string{"growth", "--dataset", local}, args...)...)
				if g.code != 0 || l.code != 0 || g.stdout != l.stdout || len(g.stdout) < 100 {
					t.Errorf("growth %v: store exit %d (%d bytes), local exit %d (%d bytes), equal %v: %s %s",
						args, g.code, len(g.stdout), l.code, len(l.stdout), g.stdout == l.stdout, g.stderr, l.stderr)
				}
			}
		})
	}
}

// restoreReplaced puts back into the store dataset out the files the
// local dataset's last batch merged into its own, and their directories'
// markers, as a run killed between its merge's commit and their removal
// leaves them.
func restoreReplaced(t *testing.T, s *Store, local, out string) {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(local))
	if err != nil {
		t.Fatal(err)
	}
	markers, files := export.ReplacedFiles(m.Last())
	if len(files) == 0 || len(markers) == 0 {
		t.Fatalf("batch %d replaced %d files", m.Last().ID, len(files))
	}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	tree, err := objstore.Open(context.Background(), out, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := objstore.ParseURL(out)
	root := strings.TrimSuffix(loc.String(), "/")
	for _, f := range append(files, markers...) {
		if err := tree.Create(tree.Join(root, f), []byte("left by a killed run")); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
