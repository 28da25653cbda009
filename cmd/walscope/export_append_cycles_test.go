package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestAppendCheckpointStraddle appends a pgbench run whose checkpoints are
// spread (fixtures/whatif-settings/wal-32MB, PostgreSQL 15: 33 segments,
// checkpoint_completion_target 0.9) night by night, with nights that end
// between a checkpoint's redo point and its checkpoint record: before
// PostgreSQL 17 only that record, in the next night's WAL, says where the
// cycle began. The night-by-night dataset must hold the single export's
// rows: records (their checkpoint_cycle) and blocks identical, and every
// checkpoint cycle's row identical, every column (a cycle is never split
// between batches). Before the batches ended at a redo point, the fourth
// night of the first pattern had four rows of redo 0/17000D8 and none of
// 0/2700138, whose 42,559 records were counted in the cycle before.
func TestAppendCheckpointStraddle(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(testwal.Root(t), "fixtures", "whatif-settings", "wal-32MB", "archive.tar.zst")
	if err := testwal.UntarZstd(fx, dir); err != nil {
		t.Fatal(err)
	}
	checkNightsEqualWhole(t, filepath.Join(dir, "archive"), 1<<20, true, map[string][]int{ // (initdb --wal-segsize=1)
		"quarters": {8, 16, 24, 33},
		"uneven":   {5, 6, 13, 21, 22, 29, 33},
	})
}

// TestAppendCheckpointsPG18: the same on PostgreSQL 18 WAL (its redo
// points are XLOG_CHECKPOINT_REDO records), corpora/pg18-8k-mixed: 24
// segments of timeline 1, its .partial, 00000002.history and a segment of
// timeline 2; a shutdown, immediate checkpoints and the end-of-recovery
// checkpoint (no spread checkpoint to cut inside).
func TestAppendCheckpointsPG18(t *testing.T) {
	var archive string
	for _, s := range testwal.Sets(t) {
		if s.Name == "corpora/pg18-8k-mixed" {
			archive = filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	if archive == "" {
		t.Fatal("corpora/pg18-8k-mixed not found")
	}
	checkNightsEqualWhole(t, archive, 16<<20, false, map[string][]int{
		"quarters": {6, 13, 19, 26},
		"uneven":   {2, 7, 8, 17, 24, 26}, // (24: to TL 1's .partial)
	})
}

// checkNightsEqualWhole appends archive's segment files (segSize bytes)
// night by night, each pattern giving the segments of each night's input,
// and compares each night-by-night dataset with the archive appended in
// one batch; straddle says the patterns must hold a night that ends
// between a redo point and its checkpoint record.
func checkNightsEqualWhole(t *testing.T, archive string, segSize uint64, straddle bool, patterns map[string][]int) {
	files := archiveFiles(t, archive)
	dir := t.TempDir()

	whole := filepath.Join(dir, "whole")
	appendOK(t, whole, archive, "-q")
	m, err := export.ReadManifest(os.DirFS(whole))
	if err != nil || m == nil || len(m.Batches) != 1 {
		t.Fatalf("whole: %v %v", m, err)
	}
	// The whole export ends at its last checkpoint's redo point: that
	// cycle is the next append's.
	cols, wantCk := parquetRows(t, listed(t, whole, export.TableCheckpoints), false)
	redoCol, ckCol, endCol := slices.Index(cols, "redo_lsn_text"), slices.Index(cols, "checkpoint_lsn_text"), slices.Index(cols, "end_lsn_text")
	type cycle struct{ redo, ckpt, end xlog.LSN }
	var cycles []cycle
	for _, r := range wantCk {
		c := strings.Split(r, "\t")
		var cy cycle
		cy.redo, _ = xlog.ParseLSN(c[redoCol])
		cy.ckpt, _ = xlog.ParseLSN(c[ckCol])
		cy.end, _ = xlog.ParseLSN(c[endCol])
		cycles = append(cycles, cy)
	}
	if len(cycles) < 3 {
		t.Fatalf("whole: %d checkpoint cycles", len(cycles))
	}
	wholeEnd, _ := xlog.ParseLSN(m.Batches[0].End)
	var lastEnd xlog.LSN
	for _, c := range cycles {
		lastEnd = max(lastEnd, c.end)
	}
	if lastEnd != wholeEnd {
		t.Errorf("whole: the last cycle ends at %s, the batch at %s", lastEnd, wholeEnd)
	}

	for name, cuts := range patterns {
		t.Run(name, func(t *testing.T) {
			nightly := filepath.Join(t.TempDir(), "nightly")
			straddles := 0
			for k, n := range cuts {
				// Does the input end between a redo point and its
				// checkpoint record (the case this test is about)?
				seg, _, err := xlog.ParseSegmentName(strings.TrimSuffix(filepath.Base(files[n-1]), ".partial"))
				if err != nil {
					t.Fatalf("night %d ends with %s", k+1, files[n-1])
				}
				inputEnd := xlog.LSN((uint64(seg.Log)<<32 | uint64(seg.Seg)*segSize) + segSize)
				for _, c := range cycles {
					if c.redo < inputEnd && inputEnd <= c.ckpt {
						straddles++
					}
				}
				args := append([]string{"export", "--append", nightly, "--span-bytes", "300000", "-j", "2"}, files[:n]...)
				_, stderr, code := walscope(t, "", args...)
				if code != 0 {
					t.Fatalf("night %d: exit %d\n%s", k+1, code, stderr)
				}
				t.Logf("night %d (%d segments): %s", k+1, n, strings.TrimSpace(stderr))
			}
			if straddle && straddles == 0 {
				t.Fatalf("no night ends inside a spread checkpoint: the cuts test nothing")
			}
			nm, _ := export.ReadManifest(os.DirFS(nightly))
			if got := nm.Last().End; got != m.Batches[0].End {
				t.Errorf("nightly ends at %s, whole at %s", got, m.Batches[0].End)
			}
			for i := 1; i < len(nm.Batches); i++ {
				if nm.Batches[i].Start != nm.Batches[i-1].End {
					t.Errorf("batch %d starts at %s, batch %d ended at %s", i+1, nm.Batches[i].Start, i, nm.Batches[i-1].End)
				}
			}
			compareDatasetsDays(t, nightly, whole, true)
			_, gotCk := parquetRows(t, listed(t, nightly, export.TableCheckpoints), false)
			sameRows(t, "checkpoints (every column)", gotCk, wantCk)
			t.Logf("%d nights (%d ending inside a spread checkpoint): %d checkpoint rows identical", len(nm.Batches), straddles, len(gotCk))
		})
	}
}

// archiveFiles returns the paths of the files of the archive directory,
// sorted (segments, .partial, .history and .backup files in WAL order).
func archiveFiles(t *testing.T, archive string) []string {
	t.Helper()
	ents, err := os.ReadDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		files = append(files, filepath.Join(archive, e.Name()))
	}
	sort.Strings(files)
	return files
}

// TestExportEndLeavesNoTempFiles: pg15-replica-lz4 holds a record torn at
// 0/11FD400 (its continuation overwritten: OVERWRITE_CONTRECORD at
// 0/1200028), so `-e 0/1200058` ends the reading at 0/11FD400, in the
// span before the one that read 0/1200028. That span is never merged: its
// file was left in the output as records/.part-0000000001200028.parquet.tmp.
func TestExportEndLeavesNoTempFiles(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := walscope(t, "", "export", "--out", out, "-e", "0/1200058", "--span-bytes", "1500000", "-j", "2", archive)
	if code != 0 || !strings.Contains(stderr, "stopped at 0/11FD400") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var files []string
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, out+string(filepath.Separator)))
		}
		return nil
	})
	parquet := 0
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".parquet") && !strings.HasPrefix(filepath.Base(f), "."):
			parquet++
		case f == ".walscope.lock", filepath.Base(f) == "_walscope_complete.json":
		default:
			t.Errorf("left in the output: %s", f)
		}
	}
	if parquet == 0 {
		t.Errorf("no Parquet file: %q", files)
	}
}
