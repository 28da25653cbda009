package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog"
)

// newWALOnly returns the night's files that a nightly job that keeps only
// new WAL gives: of the night's archive (files, sorted), those from the
// segment the dataset's last batch ended in on.
func newWALOnly(t *testing.T, ds string, files []string) []string {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil {
		t.Fatal(err)
	}
	last := m.Last()
	if last == nil {
		return files
	}
	end, _ := xlog.ParseLSN(last.End)
	const segSize = 1 << 20 // fixtures/growth's
	from := xlog.NewSegmentName(xlog.TimeLineID(last.EndTimeline), uint64(end)/segSize, segSize).String()
	var out []string
	for _, f := range files {
		if filepath.Base(f) >= from {
			out = append(out, f)
		}
	}
	return out
}

// parquetCount is the number of Parquet files under ds.
func parquetCount(t *testing.T, ds string) int {
	n := 0
	for _, table := range export.Tables {
		n += len(globbed(t, filepath.Join(ds, table)))
	}
	return n
}

// relListed returns the files the manifest lists for every table,
// relative to the dataset's root.
func relListed(t *testing.T, ds string) []string {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil || m == nil {
		t.Fatalf("manifest of %s: %v", ds, err)
	}
	var out []string
	for _, table := range export.Tables {
		out = append(out, m.Files(table)...)
	}
	sort := slices.Clone(out)
	slices.Sort(sort)
	return sort
}

// globEqualsListed checks that a glob over the dataset reads exactly the
// files the manifest lists (no replaced file left).
func globEqualsListed(t *testing.T, what, ds string) {
	t.Helper()
	for _, table := range export.Tables {
		if g, l := globbed(t, filepath.Join(ds, table)), sortedCopy(listed(t, ds, table)); !slices.Equal(g, l) {
			t.Errorf("%s %s: the glob finds %d files, the manifest lists %d", what, table, len(g), len(l))
		}
	}
}

// TestAppendMerge builds fixtures/growth's dataset night by night (42
// simulated days of a real PostgreSQL 15), each night given only the WAL
// from the segment the last batch ended in, once merging small batches
// (the default) and once with --no-merge: the merged dataset holds the
// rows of one export of the whole archive, walscope growth over it is the
// same JSON as over the unmerged one, a glob reads exactly the listed
// files after every night, and it has fewer files.
func TestAppendMerge(t *testing.T) {
	fx := growthFixture(t)
	merged := filepath.Join(t.TempDir(), "merged")
	plain := filepath.Join(t.TempDir(), "plain")
	merging, replaced := 0, 0
	for i, files := range nightFiles(t, fx) {
		appendNight(t, merged, newWALOnly(t, merged, files))
		noMerge := newWALOnly(t, plain, files)
		appendNight(t, plain, append([]string{"--no-merge"}, noMerge...))
		if i%10 == 0 {
			globEqualsListed(t, "night "+filepath.Base(files[len(files)-1]), merged)
		}
	}
	m, _ := export.ReadManifest(os.DirFS(merged))
	mp, _ := export.ReadManifest(os.DirFS(plain))
	for _, b := range m.Batches {
		if len(b.Replaces) > 0 {
			merging++
			replaced += len(b.Replaces)
		}
	}
	for _, b := range mp.Batches {
		if len(b.Replaces) > 0 {
			t.Errorf("--no-merge: batch %d replaces %v", b.ID, b.Replaces)
		}
	}
	if len(m.Batches) != len(mp.Batches) || merging == 0 {
		t.Errorf("%d batches merged (%d merging), %d with --no-merge", len(m.Batches), merging, len(mp.Batches))
	}
	globEqualsListed(t, "last night", merged)
	whole := filepath.Join(t.TempDir(), "whole")
	appendNight(t, whole, []string{"--no-merge", filepath.Join(fx, "archive")})
	compareDatasets(t, merged, whole)

	// growth reads every batch's aggregate: merging changes none.
	a, _, _ := runOut(t, "growth", "--dataset", merged, "--format", "json", "--by", "hour")
	b, _, _ := runOut(t, "growth", "--dataset", plain, "--format", "json", "--by", "hour")
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("growth over the merged dataset (%d bytes of JSON) differs from over the unmerged one (%d)", len(a), len(b))
	}
	nm, np, nw := parquetCount(t, merged), parquetCount(t, plain), parquetCount(t, whole)
	t.Logf("%d batches (%d merged %d earlier files into theirs): %d Parquet files merged, %d with --no-merge, %d for one export of the whole archive", len(m.Batches), merging, replaced, nm, np, nw)
	if nm >= np || nm > nw {
		t.Errorf("merged: %d files, --no-merge %d, one export %d", nm, np, nw)
	}
}

// TestAppendMergeKilled kills a night's append that merges at each step
// (before the commit: staged, each table published, manifest; after it:
// committed, before the merged batches' files are removed): the manifest's
// readers read the rows of before the run, or of after it, never a mix;
// the next run completes it to the dataset an uninterrupted run writes,
// file for file, and removes what the killed one left.
func TestAppendMergeKilled(t *testing.T) {
	fx := growthFixture(t)
	nights := nightFiles(t, fx)
	// The first night from the 5th on that brings a segment of its own
	// (a quiet night's WAL may all be in the segment the last batch
	// read: nothing to append).
	k := 4
	for nights[k][len(nights[k])-1] == nights[k-1][len(nights[k-1])-1] {
		k++
	}
	base := filepath.Join(t.TempDir(), "base")
	for _, files := range nights[:k] {
		appendNight(t, base, newWALOnly(t, base, files))
	}
	last := newWALOnly(t, base, nights[k])
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.CopyFS(ref, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	appendNight(t, ref, last)
	mr, _ := export.ReadManifest(os.DirFS(ref))
	if len(mr.Last().Replaces) == 0 {
		t.Fatalf("the reference's last batch merges nothing: %+v", mr.Last())
	}
	rows := func(ds string) map[string][]string {
		out := map[string][]string{}
		for _, table := range export.Tables {
			_, out[table] = parquetRows(t, listed(t, ds, table), true)
		}
		return out
	}
	before, after := rows(base), rows(ref)
	steps := []string{"staged"}
	for _, table := range export.Tables {
		steps = append(steps, "published "+table)
	}
	steps = append(steps, "manifest", "committed")
	for _, step := range steps {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "ds")
			if err := os.CopyFS(ds, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			killedAppend(t, step, append([]string{"export", "--append", ds, "--span-bytes", "1500000", "-j", "2"}, last...)...)
			want := before
			if step == "committed" {
				want = after
				// the merged batches' files are still there, unlisted
				if g, l := len(globbed(t, filepath.Join(ds, export.TableRecords))), len(listed(t, ds, export.TableRecords)); g <= l {
					t.Errorf("killed after the commit: the glob finds %d records files, the manifest lists %d", g, l)
				}
			}
			for table, w := range want {
				_, got := parquetRows(t, listed(t, ds, table), true)
				sameRows(t, "after the kill: "+table, got, w)
			}
			appendNight(t, ds, newWALOnly(t, ds, last))
			if a, b := relListed(t, ds), relListed(t, ref); !slices.Equal(a, b) {
				t.Errorf("resumed: %d files listed, the uninterrupted run %d", len(a), len(b))
			}
			for table, w := range after {
				_, got := parquetRows(t, listed(t, ds, table), true)
				sameRows(t, "resumed: "+table, got, w)
			}
			globEqualsListed(t, "resumed", ds)
		})
	}
}

// TestAppendMergeFlags: --merge-below takes a size, not with --no-merge,
// and both apply to --append only.
func TestAppendMergeFlags(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--append", t.TempDir(), "--merge-below", "lots"}, `invalid value "lots" for option --merge-below`},
		{[]string{"--append", t.TempDir(), "--merge-below", "0"}, `invalid value "0" for option --merge-below`},
		{[]string{"--append", t.TempDir(), "--merge-below", "1MB", "--no-merge"}, "--no-merge and --merge-below cannot be combined"},
		{[]string{"--out", t.TempDir(), "--merge-below", "1MB"}, "--merge-below applies to --append only"},
		{[]string{"--out", t.TempDir(), "--no-merge"}, "--no-merge applies to --append only"},
	} {
		_, stderr, code := walscope(t, "", append(append([]string{"export"}, c.args...), archive)...)
		if code != exitUsage || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, %q; want exit %d, %q", c.args, code, stderr, exitUsage, c.msg)
		}
	}
	// 64kB: the fixture's nights merge less than by default (files of at
	// most 64 kB), more than with --no-merge; the same rows.
	ns := nights(t, archive, []int{3, 7, 10, 13})
	count := map[string]int{}
	var rows map[string][]string
	for _, flags := range [][]string{nil, {"--merge-below", "64kB"}, {"--no-merge"}} {
		ds := filepath.Join(t.TempDir(), "ds")
		for _, n := range ns {
			appendOK(t, ds, n, flags...)
		}
		globEqualsListed(t, fmt.Sprint(flags), ds)
		count[fmt.Sprint(flags)] = parquetCount(t, ds)
		got := map[string][]string{}
		for _, table := range export.Tables {
			_, got[table] = parquetRows(t, listed(t, ds, table), true)
		}
		if rows == nil {
			rows = got
		}
		for table, r := range rows {
			sameRows(t, fmt.Sprint(flags, " ", table), got[table], r)
		}
	}
	t.Logf("Parquet files: %v", count)
	if d, k, n := count["[]"], count["[--merge-below 64kB]"], count["[--no-merge]"]; !(d < k && k < n) {
		t.Errorf("files: %d merged below 64MB, %d below 64kB, %d unmerged", d, k, n)
	}
}

// TestAppendMergeUnsized: a dataset whose manifests give no file sizes (a
// walscope before merging wrote them: made here by removing the sizes from
// 15 --no-merge nights' manifests) has its small files merged all the
// same, stat'ed: the next nights replace some of them, and the dataset
// still holds the rows of one export of the same WAL, a glob reading
// exactly the listed files.
func TestAppendMergeUnsized(t *testing.T) {
	fx := growthFixture(t)
	ds := filepath.Join(t.TempDir(), "ds")
	nights := nightFiles(t, fx)[:30]
	for _, files := range nights[:15] {
		appendNight(t, ds, append([]string{"--no-merge"}, newWALOnly(t, ds, files)...))
	}
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil {
		t.Fatal(err)
	}
	unsized, before := map[string]bool{}, len(m.Batches)
	for _, b := range m.Batches {
		for table, bt := range b.Tables {
			for i := range bt.Files {
				bt.Files[i].Bytes = 0
				unsized[bt.Files[i].Path] = true
			}
			b.Tables[table] = bt
		}
		if err := os.WriteFile(filepath.Join(ds, export.ManifestDir, export.BatchFileName(b.ID)), b.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(ds, export.ManifestDir, export.BatchFileName(1))); strings.Contains(string(data), `"bytes"`) {
		t.Fatalf("batch 1's manifest still gives sizes")
	}
	for _, files := range nights[15:] {
		appendNight(t, ds, newWALOnly(t, ds, files))
	}
	m, _ = export.ReadManifest(os.DirFS(ds))
	merged := 0
	if len(m.Batches) <= before {
		t.Fatalf("%d batches, %d before", len(m.Batches), before)
	}
	for _, b := range m.Batches[before:] {
		for _, p := range b.Replaces {
			if unsized[p] {
				merged++
			}
		}
	}
	if merged == 0 {
		t.Errorf("no file of the unsized batches merged")
	}
	globEqualsListed(t, "last night", ds)
	whole := filepath.Join(t.TempDir(), "whole")
	appendNight(t, whole, append([]string{"--no-merge"}, nights[len(nights)-1]...))
	compareDatasets(t, ds, whole)
	t.Logf("%d batches without sizes, then %d: %d files of the first merged", before, len(m.Batches)-before, merged)
}
