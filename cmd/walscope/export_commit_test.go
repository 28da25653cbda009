//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/walscope/walscope/export"
)

// leftovers fails on any staging directory or temporary file under out.
func leftovers(t *testing.T, out string) {
	t.Helper()
	filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") && d.Name() != ".walscope.lock" {
			t.Errorf("left behind: %s", path)
		}
		return nil
	})
}

// marker reads a dataset's completion marker.
func marker(t *testing.T, dir string) *export.Marker {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, export.MarkerName))
	if err != nil {
		t.Errorf("no completion marker: %v", err)
		return nil
	}
	var m export.Marker
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestExportMarker: each published dataset holds a marker listing its
// files and rows, and nothing else is left in the output directory.
func TestExportMarker(t *testing.T) {
	wal := sampleWAL(t)
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := walscope(t, "", "export", "-q", "--out", out, "--tables", "records,blocks,segments", "--format", "jsonl", "--span-bytes", "1000000", wal); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	statsOut, _, _ := walscope(t, "", "stats", "--format", "json", wal)
	var st struct{ Rows []struct{ Count int64 } }
	json.Unmarshal([]byte(statsOut), &st)
	var want int64
	for _, r := range st.Rows {
		want += r.Count
	}
	for _, table := range []string{"records", "blocks", "segments"} {
		m := marker(t, filepath.Join(out, table))
		if m == nil {
			continue
		}
		var lines int64
		for _, f := range m.Files {
			b, err := os.ReadFile(filepath.Join(out, table, f.Path))
			if err != nil {
				t.Fatal(err)
			}
			n := int64(strings.Count(string(b), "\n"))
			if n != f.Rows {
				t.Errorf("%s/%s: %d rows, the marker says %d", table, f.Path, n, f.Rows)
			}
			lines += n
		}
		if lines != m.Rows || m.Rows == 0 || (table == "records" && m.Rows != want) {
			t.Errorf("%s: marker rows %d, files %d, stats %d", table, m.Rows, lines, want)
		}
		if len(m.Files) < 2 && table == "records" {
			t.Errorf("records in %d files: the test wants several spans", len(m.Files))
		}
	}
	leftovers(t, out)
}

// TestExportOverwriteScope: --overwrite replaces the dataset it names and
// no other (it removed the other labels' datasets).
func TestExportOverwriteScope(t *testing.T) {
	wal := sampleWAL(t)
	out := filepath.Join(t.TempDir(), "out")
	exp := func(extra ...string) (string, int) {
		_, stderr, code := walscope(t, "", append(append([]string{"export", "-q", "--out", out, "--tables", "records"}, extra...), wal)...)
		return stderr, code
	}
	for _, l := range []string{"a", "b"} {
		if stderr, code := exp("--label", l); code != 0 {
			t.Fatalf("--label %s: %s", l, stderr)
		}
	}
	if stderr, code := exp(); code != 0 {
		t.Fatalf("no label beside labels: exit %d: %s", code, stderr)
	}
	if stderr, code := exp(); code != exitProblem || !strings.Contains(stderr, "--overwrite") {
		t.Errorf("rerun without a label: exit %d: %s", code, stderr)
	}
	a1 := marker(t, filepath.Join(out, "records", "label=a"))
	if stderr, code := exp("--overwrite"); code != 0 {
		t.Fatalf("--overwrite without a label: exit %d: %s", code, stderr)
	}
	time.Sleep(10 * time.Millisecond)
	if stderr, code := exp("--overwrite", "--label", "b"); code != 0 {
		t.Fatalf("--overwrite --label b: exit %d: %s", code, stderr)
	}
	if a2 := marker(t, filepath.Join(out, "records", "label=a")); a1 == nil || a2 == nil || !a1.Completed.Equal(a2.Completed) {
		t.Errorf("label=a was touched: %v then %v", a1, a2)
	}
	if m := marker(t, filepath.Join(out, "records", "label=b")); m == nil || !m.Completed.After(a1.Completed) {
		t.Errorf("label=b was not replaced: %+v", m)
	}
	if m := marker(t, filepath.Join(out, "records")); m == nil || m.Rows != a1.Rows || len(m.Files) != 1 {
		t.Errorf("the unlabeled dataset: %+v", m)
	}
	ents, _ := os.ReadDir(filepath.Join(out, "records"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "_walscope_complete.json label=a label=b part-0000000000600100.parquet" {
		t.Errorf("records holds %s", got)
	}
	leftovers(t, out)
}

// TestExportOverlappingRanges: a segment range overlapping one exported is
// refused, even with --overwrite; the same range is a rerun; a disjoint one
// goes beside.
func TestExportOverlappingRanges(t *testing.T) {
	wal := sampleWAL(t)
	out := filepath.Join(t.TempDir(), "out")
	const s6, s7 = "000000010000000000000006", "000000010000000000000007"
	exp := func(segs ...string) (string, int) {
		args := append([]string{"export", "-q", "--out", out, "--tables", "records", "--partition-by", "segment-range", "-p", wal}, segs...)
		_, stderr, code := walscope(t, "", args...)
		return stderr, code
	}
	if stderr, code := exp(s6); code != 0 {
		t.Fatalf("6: exit %d: %s", code, stderr)
	}
	if stderr, code := exp(s6, s7); code != exitProblem || !strings.Contains(stderr, "overlap") {
		t.Errorf("6-7 over 6: exit %d: %s", code, stderr)
	}
	if stderr, code := exp("--overwrite", s6, s7); code != exitProblem || !strings.Contains(stderr, "overlap") {
		t.Errorf("6-7 over 6 with --overwrite: exit %d: %s", code, stderr)
	}
	if stderr, code := exp(s6); code != exitProblem || !strings.Contains(stderr, "--overwrite") {
		t.Errorf("6 again: exit %d: %s", code, stderr)
	}
	if stderr, code := exp(s7); code != 0 {
		t.Errorf("7 beside 6: exit %d: %s", code, stderr)
	}
	ents, _ := os.ReadDir(filepath.Join(out, "records"))
	if len(ents) != 2 {
		t.Errorf("records holds %d datasets", len(ents))
	}
	leftovers(t, out)
}

// TestExportConcurrent: two exports of one dataset at once: one publishes,
// the other refuses cleanly; of two labels, both publish.
func TestExportConcurrent(t *testing.T) {
	wal := sampleWAL(t)
	for _, labels := range [][2]string{{"same", "same"}, {"x", "y"}} {
		out := filepath.Join(t.TempDir(), "out")
		var wg sync.WaitGroup
		var codes [2]int
		var stderrs [2]strings.Builder
		for i, l := range labels {
			wg.Go(func() {
				codes[i] = run([]string{"walscope", "export", "-q", "--out", out, "--label", l, "--span-bytes", "1000000", wal}, &strings.Builder{}, &stderrs[i])
			})
		}
		wg.Wait()
		if labels[0] == labels[1] {
			if codes[0]+codes[1] != exitProblem {
				t.Errorf("one dataset twice: exits %v: %q %q", codes, stderrs[0].String(), stderrs[1].String())
			}
		} else if codes != [2]int{0, 0} {
			t.Errorf("two labels: exits %v: %q %q", codes, stderrs[0].String(), stderrs[1].String())
		}
		for _, table := range export.Tables {
			for _, l := range labels {
				if m := marker(t, filepath.Join(out, table, "label="+l)); m != nil {
					for _, f := range m.Files {
						if fi, err := os.Stat(filepath.Join(out, table, "label="+l, f.Path)); err != nil || fi.Size() == 0 {
							t.Errorf("%s label=%s %s: %v", table, l, f.Path, err)
						}
					}
				}
			}
		}
		leftovers(t, out)
	}
}

// TestExportDiskFull: an export failing on a full file system (a small
// tmpfs, as root) leaves nothing, and a rerun after space is freed works
// without --overwrite.
func TestExportDiskFull(t *testing.T) {
	wal := sampleWAL(t)
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		if os.Getenv("WALSCOPE_REQUIRE_ROOT") == "1" {
			t.Fatalf("mount a tmpfs: %v", err)
		}
		t.Skip("mounting a tmpfs needs root:", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	filler := filepath.Join(mnt, "filler")
	// Leave about 24 kB: the records alone take about 60 kB.
	if err := os.WriteFile(filler, make([]byte, 1<<20-24<<10), 0o644); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	out := filepath.Join(mnt, "out")
	args := []string{"export", "-q", "--out", out, "--tables", "records,segments", "--span-bytes", "1000000", wal}
	_, stderr, code := walscope(t, "", args...)
	if code != exitUsage || !strings.Contains(stderr, "no space left") {
		t.Errorf("export into a full file system: exit %d: %s", code, stderr)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if e.Name() != ".walscope.lock" {
			t.Errorf("left in the output directory: %s", e.Name())
		}
	}
	os.Remove(filler)
	if _, stderr, code := walscope(t, "", args...); code != 0 {
		t.Errorf("rerun after freeing space: exit %d: %s", code, stderr)
	}
	marker(t, filepath.Join(out, "records"))
	leftovers(t, out)
}

// TestExportSignal sends SIGINT and SIGTERM to a real walscope process in
// the middle of an export: it exits as the signal would, leaves nothing,
// and a rerun works without --overwrite.
func TestExportSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildWalscope(t)
	wal := filepath.Join(exportFixture(t), "archive")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out := filepath.Join(t.TempDir(), "out")
		// Slow enough to be caught in the middle: text with descriptions,
		// one worker.
		args := []string{"export", "-q", "--out", out, "--tables", "records", "--format", "jsonl", "--desc", "-j", "1", "--span-bytes", "1000000", wal}
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for a part file being written in the staging directory.
		deadline := time.Now().Add(20 * time.Second)
		for {
			m, _ := filepath.Glob(filepath.Join(out, ".walscope-staging-*", "records", ".part-*"))
			if len(m) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		want := 128 + int(sig)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
			t.Fatalf("%v: %v (want exit %d): %s", sig, err, want, stderr.String())
		}
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			if e.Name() != ".walscope.lock" {
				t.Errorf("%v: left in the output directory: %s", sig, e.Name())
			}
		}
		// The same dataset (records, no label), quicker.
		b, err := exec.Command(bin, "export", "-q", "--out", out, "--tables", "records", wal).CombinedOutput()
		if err != nil {
			t.Errorf("%v: rerun: %v: %s", sig, err, b)
		}
		marker(t, filepath.Join(out, "records"))
		leftovers(t, out)
	}

	// SIGKILL cannot be caught: the staging directory stays, unpublished,
	// and the next export into the directory removes it.
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"export", "-q", "--out", out, "--tables", "records", "--format", "jsonl", "--desc", "-j", "1", "--span-bytes", "1000000", wal}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var staged []string
	for deadline := time.Now().Add(20 * time.Second); len(staged) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		staged, _ = filepath.Glob(filepath.Join(out, ".walscope-staging-*", "records", ".part-*"))
	}
	cmd.Process.Kill()
	cmd.Wait()
	stages, _ := filepath.Glob(filepath.Join(out, ".walscope-staging-*"))
	if len(stages) != 1 || len(staged) == 0 {
		t.Fatalf("after SIGKILL: staging directories %v", stages)
	}
	if _, err := os.Stat(filepath.Join(out, "records")); err == nil {
		t.Error("a killed export published records")
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stages[0], old, old)
	if b, err := exec.Command(bin, "export", "-q", "--out", out, "--tables", "segments", wal).CombinedOutput(); err != nil {
		t.Errorf("export after SIGKILL: %v: %s", err, b)
	}
	leftovers(t, out)
}
