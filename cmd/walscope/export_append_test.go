package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// The "nights" of these tests are the real WAL of a fixture cut by segment
// index (PostgreSQL wrote it in minutes, so every row's day is the same
// real date): night k's archive holds the segments of nights 1 to k, as a
// WAL archive grows.

// killEnv makes the test binary, run as a child, a walscope that exits
// (137, as SIGKILL's) at an append step: a kill at a chosen point, with no
// deferred clean-up.
const killEnv = "WALSCOPE_TEST_APPEND_KILL_AT"

func init() {
	step := os.Getenv(killEnv)
	if step == "" {
		return
	}
	appendHook = func(s string) error {
		if s == step {
			os.Exit(137)
		}
		return nil
	}
	os.Exit(run(append([]string{"walscope"}, os.Args[1:]...), os.Stdout, os.Stderr))
}

// killedAppend runs walscope args in a child killed at step.
func killedAppend(t *testing.T, step string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), killEnv+"="+step)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 137 {
		t.Fatalf("append killed at %q: %v, want exit 137\n%s", step, err, out)
	}
}

// nights copies the fixture's segments into one archive directory per
// night, the segments of night k being cuts[k-1] <= index < cuts[k] of the
// sorted segment files (other files, .history and .backup, go with the
// segment they follow).
func nights(t *testing.T, archive string, cuts []int) []string {
	t.Helper()
	ents, err := os.ReadDir(archive)
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
	for k := 1; k <= len(cuts); k++ {
		d := filepath.Join(base, fmt.Sprintf("night%d", k))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		seg := -1
		for _, n := range names {
			if !strings.Contains(n, ".") || strings.HasSuffix(n, ".partial") {
				seg++
			}
			if seg >= cuts[k-1] {
				break
			}
			copyFile(t, filepath.Join(archive, n), filepath.Join(d, n))
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendOK runs export --append and fails the test unless it exits 0.
func appendOK(t *testing.T, ds, wal string, extra ...string) string {
	t.Helper()
	_, stderr, code := walscope(t, "", append(append([]string{"export", "--append", ds, "--span-bytes", "1500000", "-j", "2"}, extra...), wal)...)
	if code != 0 {
		t.Fatalf("export --append %s %s: exit %d\n%s", ds, wal, code, stderr)
	}
	return stderr
}

// parquetRows reads files with pqarrow (arrow-go, not walscope's own
// reader) and returns each row as its cells' text, with the day partition
// of its path appended when day is set.
func parquetRows(t *testing.T, files []string, day bool) (cols []string, rows []string) {
	t.Helper()
	for _, path := range files {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := int(tbl.NumRows())
		cells := make([][]string, n)
		cols = cols[:0]
		for c := 0; c < int(tbl.NumCols()); c++ {
			cols = append(cols, tbl.Schema().Field(c).Name)
			i := 0
			for _, ch := range tbl.Column(c).Data().Chunks() {
				for j := 0; j < ch.Len(); j++ {
					cells[i] = append(cells[i], ch.ValueStr(j))
					i++
				}
			}
		}
		d := ""
		if day {
			for _, el := range strings.Split(filepath.ToSlash(path), "/") {
				if v, ok := strings.CutPrefix(el, "day="); ok {
					d = "\tday=" + v
				}
			}
		}
		for _, r := range cells {
			rows = append(rows, strings.Join(r, "\t")+d)
		}
		tbl.Release()
		pf.Close()
	}
	sort.Strings(rows)
	return cols, rows
}

// listed returns the files the dataset's manifest lists for table.
func listed(t *testing.T, ds, table string) []string {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil || m == nil {
		t.Fatalf("manifest of %s: %v %v", ds, m, err)
	}
	var out []string
	for _, f := range m.Files(table) {
		out = append(out, filepath.Join(ds, filepath.FromSlash(f)))
	}
	return out
}

// globbed returns the Parquet files a glob reader finds under dir (names
// starting with "." or "_" skipped, as Spark and DuckDB's hive globs do).
func globbed(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: first difference at sorted row %d:\n got %s\nwant %s", what, i, got[i], want[i])
			return
		}
	}
}

// sums adds up the numeric columns of rows grouped by key column, keeping
// the last non-empty value of the others (the parts of a transaction, a
// checkpoint cycle or a segment that two batches share).
func sums(t *testing.T, cols, rows []string, key string, add ...string) map[string]string {
	t.Helper()
	ki := slices.Index(cols, key)
	out := map[string][]int64{}
	for _, r := range rows {
		cells := strings.Split(r, "\t")
		s := out[cells[ki]]
		if s == nil {
			s = make([]int64, len(add))
		}
		for i, a := range add {
			v, err := strconv.ParseInt(cells[slices.Index(cols, a)], 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", a, cells[slices.Index(cols, a)], err)
			}
			s[i] += v
		}
		out[cells[ki]] = s
	}
	res := map[string]string{}
	for k, v := range out {
		res[k] = fmt.Sprint(v)
	}
	return res
}

func sameSums(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	n := 0
	for k, w := range want {
		if got[k] != w {
			if n++; n <= 3 {
				t.Errorf("%s %s: %s, want %s", what, k, got[k], w)
			}
		}
	}
}

// unnamedRows blanks, in both row sets, the relation and database names of
// the rows whose night-by-night name is null where the single export has
// one: names the WAL gave after the row's batch (a catalog's first tuple
// seen nights later), which a batch cannot know; the single export names
// every row with the names learnt from the whole WAL. A name that differs
// otherwise is left to fail the comparison. It returns the rows blanked.
func unnamedRows(t *testing.T, cols, got, want []string) int {
	t.Helper()
	var idx []int
	for i, c := range cols {
		if c == "database_name" || c == "schema_name" || c == "relation_name" || c == "relkind" {
			idx = append(idx, i)
		}
	}
	if len(got) != len(want) {
		return 0
	}
	n := 0
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		g, w := strings.Split(got[i], "\t"), strings.Split(want[i], "\t")
		if len(g) != len(w) {
			continue
		}
		future := true
		for _, j := range idx {
			if g[j] != w[j] && g[j] != "(null)" {
				future = false
			}
		}
		if !future {
			continue
		}
		for _, j := range idx {
			g[j], w[j] = "", ""
		}
		if slices.Equal(g, w) {
			got[i], want[i] = strings.Join(g, "\t"), strings.Join(w, "\t")
			n++
		}
	}
	return n
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

// crc32cFile is the CRC-32C (Castagnoli) of the file, as 8 hex digits (as
// `gsutil hash -c -h` prints it, in upper case: checked by hand on a
// segment of pg15-replica-lz4).
func crc32cFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%08x", crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// compareDatasets checks that the night-by-night dataset holds the rows of
// the single export: records and blocks identical (with their day), the
// transactions, checkpoint cycles and segments that two batches share
// adding up to the single export's rows.
func compareDatasets(t *testing.T, nightly, whole string) {
	t.Helper()
	compareDatasetsDays(t, nightly, whole, false)
}

// compareDatasetsDays is compareDatasets, where undated says that a row
// the night-by-night dataset puts in day=unknown may be in a day in the
// single export: a batch without any commit or abort has no time for its
// records, which the single export takes from its first commit after them.
func compareDatasetsDays(t *testing.T, nightly, whole string, undated bool) {
	t.Helper()
	for _, table := range []string{export.TableRecords, export.TableBlocks} {
		cols, got := parquetRows(t, listed(t, nightly, table), true)
		_, want := parquetRows(t, listed(t, whole, table), true)
		if len(want) == 0 {
			t.Errorf("%s: no rows", table)
		}
		if undated {
			n := 0
			for i := range got {
				if g, ok := strings.CutSuffix(got[i], "\tday=unknown"); ok {
					if i < len(want) && strings.HasPrefix(want[i], g+"\tday=") {
						got[i], n = want[i], n+1
					}
				}
			}
			t.Logf("%s: %d rows undated in their batch (no commit in it), dated in the single export", table, n)
		}
		unnamed := unnamedRows(t, cols, got, want)
		sameRows(t, table, got, want)
		t.Logf("%s: %d rows identical (%d of them once the names the single export learnt from WAL after the row are blanked)", table, len(got), unnamed)
	}
	cols, got := parquetRows(t, listed(t, nightly, export.TableTransactions), false)
	_, want := parquetRows(t, listed(t, whole, export.TableTransactions), false)
	vol := []string{"records", "record_bytes", "wal_bytes", "images", "image_bytes"}
	sameSums(t, "transaction", sums(t, cols, got, "xid", vol...), sums(t, cols, want, "xid", vol...))
	cols, got = parquetRows(t, listed(t, nightly, export.TableCheckpoints), false)
	_, want = parquetRows(t, listed(t, whole, export.TableCheckpoints), false)
	sameSums(t, "checkpoint cycle", sums(t, cols, got, "redo_lsn", vol...), sums(t, cols, want, "redo_lsn", vol...))
	cols, got = parquetRows(t, listed(t, nightly, export.TableSegments), false)
	_, want = parquetRows(t, listed(t, whole, export.TableSegments), false)
	sameSums(t, "segment", sums(t, cols, got, "segment", "records", "record_bytes"), sums(t, cols, want, "segment", "records", "record_bytes"))
	// What the archive says of each segment file: the same in every row.
	facts := func(rows []string) []string {
		set := map[string]bool{}
		for _, r := range rows {
			c := strings.Split(r, "\t")
			set[strings.Join([]string{c[slices.Index(cols, "segment")], c[slices.Index(cols, "size")], c[slices.Index(cols, "compression")], c[slices.Index(cols, "validation")]}, " ")] = true
		}
		var out []string
		for k := range set {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	sameRows(t, "segment facts", facts(got), facts(want))
}

// TestAppendNightByNight builds a dataset night by night from a real
// archive (pg15-replica-lz4: 13 segments in four nights, each holding a
// checkpoint record: a batch ends at the last one's redo point), re-runs
// each night (a no-op), and compares it with the same WAL exported in one
// batch and with `export --out` (to the dataset's end).
func TestAppendNightByNight(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	ns := nights(t, archive, []int{3, 9, 10, 13})
	ds := filepath.Join(t.TempDir(), "ds")
	for k, n := range ns {
		appendOK(t, ds, n)
		m, _ := export.ReadManifest(os.DirFS(ds))
		if len(m.Batches) != k+1 {
			t.Fatalf("night %d: %d batches", k+1, len(m.Batches))
		}
		// The same night again: nothing new, nothing written.
		stderr := appendOK(t, ds, n)
		if !strings.Contains(stderr, "nothing to append") {
			t.Errorf("night %d re-run: %q", k+1, stderr)
		}
		if m2, _ := export.ReadManifest(os.DirFS(ds)); len(m2.Batches) != k+1 {
			t.Errorf("night %d re-run added a batch", k+1)
		}
		// A glob reader sees exactly the listed files.
		for _, table := range export.Tables {
			if g, l := globbed(t, filepath.Join(ds, table)), listed(t, ds, table); !slices.Equal(g, sortedCopy(l)) {
				t.Errorf("night %d %s: glob finds %d files, the manifest lists %d", k+1, table, len(g), len(l))
			}
		}
	}
	m, _ := export.ReadManifest(os.DirFS(ds))
	// Each batch begins where the last ended; every segment of the archive
	// is listed with the CRC-32C of its file (manifest version 2).
	for i := 1; i < len(m.Batches); i++ {
		if m.Batches[i].Start != m.Batches[i-1].End {
			t.Errorf("batch %d starts at %s, batch %d ended at %s", i+1, m.Batches[i].Start, i, m.Batches[i-1].End)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(archive, "0000000100000000000000??"))
	if m.Segments() != len(segs) {
		t.Errorf("manifest lists %d segments, the archive holds %d", m.Segments(), len(segs))
	}
	for _, s := range segs {
		e, ok := m.Segment(filepath.Base(s))
		if !ok || e.CRC32C != crc32cFile(t, s) || e.SHA256 != "" || e.Size != 1<<20 {
			t.Errorf("%s: manifest %+v", filepath.Base(s), e)
		}
	}
	whole := filepath.Join(t.TempDir(), "whole")
	appendOK(t, whole, archive)
	compareDatasets(t, ds, whole)

	// export --out: the same records and blocks.
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := walscope(t, "", "export", "--out", out, "--tables", "records,blocks", archive); code != 0 {
		t.Fatalf("export --out: %s", stderr)
	}
	end, _ := xlog.ParseLSN(m.Last().End)
	if end != 0x1200058 { // the shutdown checkpoint's: the cycle it begins has not ended
		t.Errorf("the dataset ends at %s", end)
	}
	for _, table := range []string{export.TableRecords, export.TableBlocks} {
		cols, got := parquetRows(t, listed(t, ds, table), false)
		_, want := parquetRows(t, globbed(t, filepath.Join(out, table)), false)
		// export --out read to the end of the WAL: its rows before the
		// dataset's end
		lsnCol := slices.Index(cols, "lsn")
		want = slices.DeleteFunc(want, func(r string) bool {
			v, err := strconv.ParseUint(strings.Split(r, "\t")[lsnCol], 10, 64)
			if err != nil {
				t.Fatalf("lsn %q: %v", r, err)
			}
			return xlog.LSN(v) >= end
		})
		unnamed := unnamedRows(t, cols, got, want)
		sameRows(t, table+" against export --out", got, want)
		t.Logf("%s against export --out: %d rows identical (%d once names learnt from later WAL are blanked)", table, len(got), unnamed)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// TestAppendKilled kills the second night's append at each step of its
// commit: no reader of the manifest sees any of its rows, and the next run
// completes it to the dataset an uninterrupted run writes.
func TestAppendKilled(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	ns := nights(t, archive, []int{5, 13})
	ref := filepath.Join(t.TempDir(), "ref")
	appendOK(t, ref, ns[0])
	appendOK(t, ref, ns[1])
	steps := []string{"staged"}
	for _, table := range export.Tables {
		steps = append(steps, "published "+table)
	}
	steps = append(steps, "manifest")
	for _, step := range steps {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "ds")
			appendOK(t, ds, ns[0])
			before := map[string][]string{}
			for _, table := range export.Tables {
				before[table] = listed(t, ds, table)
			}
			killedAppend(t, step, "export", "--append", ds, "--span-bytes", "1500000", ns[1])
			for _, table := range export.Tables {
				if l := listed(t, ds, table); !slices.Equal(l, before[table]) {
					t.Errorf("%s: the manifest lists %d files after the kill, %d before", table, len(l), len(before[table]))
				}
				for _, f := range before[table] {
					if _, err := os.Stat(f); err != nil {
						t.Errorf("a listed file is gone: %v", err)
					}
				}
			}
			appendOK(t, ds, ns[1])
			m, _ := export.ReadManifest(os.DirFS(ds))
			if len(m.Batches) != 2 {
				t.Fatalf("%d batches after the resumed run", len(m.Batches))
			}
			for _, table := range export.Tables {
				_, got := parquetRows(t, listed(t, ds, table), true)
				_, want := parquetRows(t, listed(t, ref, table), true)
				sameRows(t, table, got, want)
				// nothing but the listed files, for glob readers too
				if g := globbed(t, filepath.Join(ds, table)); !slices.Equal(g, sortedCopy(listed(t, ds, table))) {
					t.Errorf("%s: glob finds %d files, the manifest lists %d", table, len(g), len(listed(t, ds, table)))
				}
			}
		})
	}
}

// TestAppendChangedSegment: a segment that changed under a name an earlier
// batch exported is reported (exit 3) and nothing is appended; the segment
// the last batch ended in is always checked, the others with
// --verify-exported (or when a plain file's size changed).
func TestAppendChangedSegment(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	ns := nights(t, archive, []int{5, 9})
	ds := filepath.Join(t.TempDir(), "ds")
	appendOK(t, ds, ns[0])
	m, _ := export.ReadManifest(os.DirFS(ds))
	segs := m.Last().Segments
	boundary, early := segs[len(segs)-1].Name, segs[0].Name
	flip := func(name string, off int64) func() {
		p := filepath.Join(ns[1], name)
		orig, _ := os.ReadFile(p)
		b := slices.Clone(orig)
		b[off] ^= 0xFF
		os.WriteFile(p, b, 0o644)
		return func() { os.WriteFile(p, orig, 0o644) }
	}
	expectChanged := func(what string, args ...string) {
		t.Helper()
		_, stderr, code := walscope(t, "", append([]string{"export", "--append", ds}, append(args, ns[1])...)...)
		if code != exitSegmentChanged || !strings.Contains(stderr, "changed since batch 1") {
			t.Errorf("%s: exit %d, %q; want exit %d", what, code, stderr, exitSegmentChanged)
		}
		if !strings.Contains(what, "cut short") && !strings.Contains(stderr, ": crc32c ") {
			t.Errorf("%s: %q does not give the segment's CRC-32C", what, stderr)
		}
		if m2, _ := export.ReadManifest(os.DirFS(ds)); len(m2.Batches) != 1 {
			t.Errorf("%s: a batch was appended", what)
		}
	}
	undo := flip(boundary, 100000)
	expectChanged("the boundary segment changed")
	undo()
	undo = flip(early, 200000)
	expectChanged("an early segment, --verify-exported", "--verify-exported")
	undo()
	// truncated: its size differs
	p := filepath.Join(ns[1], early)
	orig, _ := os.ReadFile(p)
	os.WriteFile(p, orig[:len(orig)/2], 0o644)
	expectChanged("an early segment cut short")
	os.WriteFile(p, orig, 0o644)
	// The next night's segments alone: the boundary segment is missing.
	alone := t.TempDir()
	for _, e := range mustReadDir(t, ns[1]) {
		if _, ok := m.Segment(e.Name()); !ok {
			copyFile(t, filepath.Join(ns[1], e.Name()), filepath.Join(alone, e.Name()))
		}
	}
	if _, stderr, code := walscope(t, "", "export", "--append", ds, alone); code != exitProblem || !strings.Contains(stderr, boundary+", which the input does not hold") {
		t.Errorf("without the boundary segment: exit %d, %q", code, stderr)
	}
	appendOK(t, ds, ns[1])
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

// TestAppendManifestV1: a dataset a walscope of manifest version 1 wrote
// (fixtures/append-v1: its segments recorded with their SHA-256; made by
// that walscope over the first night of these tests' nights) is read, its
// segments checked with the SHA-256 it recorded (a changed one is
// reported, exit 3), and appended to: the new batches record the CRC-32C
// (manifest version 2), a changed segment of theirs is reported too, and
// the rows are those of one export of the same WAL.
func TestAppendManifestV1(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	ns := nights(t, archive, []int{5, 9, 13})
	ds := filepath.Join(t.TempDir(), "ds")
	if err := testwal.UntarZstd(filepath.Join(testwal.Root(t), "fixtures", "append-v1", "dataset.tar.zst"), filepath.Dir(ds)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(filepath.Dir(ds), "dataset"), ds); err != nil {
		t.Fatal(err)
	}
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil {
		t.Fatal(err)
	}
	b1 := m.Last()
	if len(m.Batches) != 1 || b1.ManifestVersion != 1 || len(b1.Segments) != 5 {
		t.Fatalf("the fixture's manifest: %d batches, version %d, %d segments", len(m.Batches), b1.ManifestVersion, len(b1.Segments))
	}
	for _, e := range b1.Segments {
		if e.CRC32C != "" || e.SHA256 != sha256File(t, filepath.Join(ns[0], e.Name)) {
			t.Fatalf("the fixture's %s: %+v, not the SHA-256 of the fixture's segment", e.Name, e)
		}
	}
	boundary, early := b1.Segments[4].Name, b1.Segments[0].Name
	flip := func(dir, name string, off int64) func() {
		p := filepath.Join(dir, name)
		orig, _ := os.ReadFile(p)
		b := slices.Clone(orig)
		b[off] ^= 0xFF
		os.WriteFile(p, b, 0o644)
		return func() { os.WriteFile(p, orig, 0o644) }
	}
	expectChanged := func(what, night, batch, alg string, batches int, args ...string) {
		t.Helper()
		_, stderr, code := walscope(t, "", append([]string{"export", "--append", ds}, append(args, night)...)...)
		if code != exitSegmentChanged || !strings.Contains(stderr, "changed since batch "+batch) || !strings.Contains(stderr, ": "+alg+" ") {
			t.Errorf("%s: exit %d, %q; want exit %d naming the %s", what, code, stderr, exitSegmentChanged, alg)
		}
		if m2, _ := export.ReadManifest(os.DirFS(ds)); len(m2.Batches) != batches {
			t.Errorf("%s: a batch was appended", what)
		}
	}
	undo := flip(ns[1], boundary, 100000)
	expectChanged("batch 1's boundary segment changed", ns[1], "1", "sha256", 1)
	undo()
	undo = flip(ns[1], early, 200000)
	expectChanged("batch 1's early segment, --verify-exported", ns[1], "1", "sha256", 1, "--verify-exported")
	undo()
	appendOK(t, ds, ns[1])
	m, _ = export.ReadManifest(os.DirFS(ds))
	b2 := m.Last()
	if b2.ManifestVersion != export.ManifestVersion || b2.Segments[0].Name != boundary {
		t.Fatalf("batch 2: version %d, segments %+v", b2.ManifestVersion, b2.Segments)
	}
	for _, e := range b2.Segments {
		if e.SHA256 != "" || e.CRC32C != crc32cFile(t, filepath.Join(ns[1], e.Name)) {
			t.Errorf("batch 2's %s: %+v, not the CRC-32C of the segment", e.Name, e)
		}
	}
	// Batch 2's last segment (CRC-32C) and batch 1's first (SHA-256)
	// changed in the third night, with --verify-exported (batch 2 ended
	// at a segment's start: no segment is read by two batches).
	undo = flip(ns[2], b2.Segments[len(b2.Segments)-1].Name, 300000)
	expectChanged("batch 2's last segment, --verify-exported", ns[2], "2", "crc32c", 2, "--verify-exported")
	undo()
	undo = flip(ns[2], early, 200000)
	expectChanged("batch 1's early segment in the third night, --verify-exported", ns[2], "2", "sha256", 2, "--verify-exported")
	undo()
	appendOK(t, ds, ns[2], "--verify-exported")
	whole := filepath.Join(t.TempDir(), "whole")
	appendOK(t, whole, archive)
	compareDatasets(t, ds, whole)
}

// TestAppendTimelineSwitch: the fixture whose standby was promoted
// (timeline 2 from 0/11000A0); the third night brings the .partial segment,
// the history file and timeline 2's segment: the batch follows the history
// onto timeline 2, as a single export does.
func TestAppendTimelineSwitch(t *testing.T) {
	root := testwal.Root(t)
	dir := testwal.Extract(t, testwal.Set{Name: "fixtures/pg15-replica-pglz-k-tl", Dir: filepath.Join(root, "fixtures", "pg15-replica-pglz-k-tl")})
	archive := filepath.Join(dir, "archive")
	ns := nights(t, archive, []int{4, 8, 11})
	ds := filepath.Join(t.TempDir(), "ds")
	for _, n := range ns {
		appendOK(t, ds, n)
	}
	m, _ := export.ReadManifest(os.DirFS(ds))
	last := m.Last()
	if last.EndTimeline != 2 || len(last.Timelines) != 2 || last.Timelines[0].Timeline != 1 || last.Timelines[1].Timeline != 2 || last.Timelines[1].Start > "0/11000A0" {
		t.Errorf("last batch's timelines: %+v, end timeline %d", last.Timelines, last.EndTimeline)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	appendOK(t, whole, archive)
	compareDatasets(t, ds, whole)
	// A history that leaves timeline 1 before where batch 2 read it to
	// (the real file, its switch point moved back into batch 2's WAL).
	forked := t.TempDir()
	for _, e := range mustReadDir(t, ns[2]) {
		copyFile(t, filepath.Join(ns[2], e.Name()), filepath.Join(forked, e.Name()))
	}
	ds2 := filepath.Join(t.TempDir(), "ds2")
	appendOK(t, ds2, ns[0])
	appendOK(t, ds2, ns[1])
	hist := filepath.Join(forked, "00000002.history")
	b, _ := os.ReadFile(hist)
	os.WriteFile(hist, []byte(strings.Replace(string(b), "0/11000A0", "0/C00000", 1)), 0o644)
	if _, stderr, code := walscope(t, "", "export", "--append", ds2, forked); code != exitProblem || !strings.Contains(stderr, "[timeline-fork]") {
		t.Errorf("a fork before the last batch's end: exit %d, %q", code, stderr)
	}

	cols, rows := parquetRows(t, listed(t, ds, export.TableRecords), false)
	ti := slices.Index(cols, "timeline")
	tls := map[string]int{}
	for _, r := range rows {
		tls[strings.Split(r, "\t")[ti]]++
	}
	if tls["1"] == 0 || tls["2"] == 0 {
		t.Errorf("records by timeline: %v", tls)
	}
}

// TestAppendLegacyDataset: a dataset `export --out` wrote has no manifest:
// --append says so and which dataset it needs, exit 2.
func TestAppendLegacyDataset(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := walscope(t, "", "export", "--out", out, "--tables", "records", archive); code != 0 {
		t.Fatal(stderr)
	}
	_, stderr, code := walscope(t, "", "export", "--append", out, archive)
	if code != exitUsage || !strings.Contains(stderr, "without a batch manifest") || !strings.Contains(stderr, fmt.Sprintf("manifest version %d", export.ManifestVersion)) {
		t.Errorf("exit %d, %q", code, stderr)
	}
	_, stderr, code = walscope(t, "", "export", "--append", out, "--label", "x", archive)
	if code != exitUsage || !strings.Contains(stderr, "cannot be combined with --label") {
		t.Errorf("--label: exit %d, %q", code, stderr)
	}
	_, stderr, code = walscope(t, "", "export", "--out", t.TempDir(), "--file-rows", "10", archive)
	if code != exitUsage || !strings.Contains(stderr, "--file-rows applies to --append only") {
		t.Errorf("--file-rows without --append: exit %d, %q", code, stderr)
	}
}

// TestAppendFileRows: --file-rows splits a batch's files at that many rows
// (the pending rows of a span placed in their day's directory included);
// the rows are the same.
func TestAppendFileRows(t *testing.T) {
	archive := filepath.Join(exportFixture(t), "archive")
	one := filepath.Join(t.TempDir(), "one")
	appendOK(t, one, archive)
	split := filepath.Join(t.TempDir(), "split")
	appendOK(t, split, archive, "--file-rows", "3000")
	m, _ := export.ReadManifest(os.DirFS(split))
	for _, table := range []string{export.TableRecords, export.TableBlocks} {
		files := m.Last().Tables[table].Files
		for _, f := range files {
			if f.Rows > 3000 || f.Rows == 0 {
				t.Errorf("%s: %d rows", f.Path, f.Rows)
			}
		}
		_, got := parquetRows(t, listed(t, split, table), true)
		_, want := parquetRows(t, listed(t, one, table), true)
		sameRows(t, table, got, want)
		if n := len(listed(t, one, table)); len(files) < len(got)/3000 || len(files) <= n {
			t.Errorf("%s: %d files of at most 3000 rows for %d rows (%d without --file-rows)", table, len(files), len(got), n)
		}
	}
	if _, stderr, code := walscope(t, "", "export", "--append", split, "--file-rows", "0", archive); code != exitUsage || !strings.Contains(stderr, "--file-rows") {
		t.Errorf("--file-rows 0: exit %d %q", code, stderr)
	}
}
