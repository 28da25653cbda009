package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/growth"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/whatif"
)

// whatifSpacing runs `walscope whatif --format json` over archive with
// flags and returns the actual record bytes and, by max_wal_size and
// checkpoint_timeout scenario ("max_wal_size 8MB", "checkpoint_timeout
// 1min"), what it saves in record bytes and its checkpoints.
func whatifSpacing(t *testing.T, archive string, flags ...string) (uint64, map[string][2]int64) {
	t.Helper()
	out, stderr, code := walscope(t, "", append(append([]string{"whatif", "--format", "json"}, flags...), archive)...)
	if code != 0 {
		t.Fatalf("whatif %s: exit %d\n%s", archive, code, stderr)
	}
	var w struct {
		Actual    whatif.Scenario   `json:"actual"`
		Scenarios []whatif.Scenario `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatal(err)
	}
	saved := map[string][2]int64{}
	for _, s := range w.Scenarios {
		if s.Setting == "max_wal_size" || s.Setting == "checkpoint_timeout" {
			saved[s.Setting+" "+s.Value] = [2]int64{int64(w.Actual.RecordBytes) - int64(s.RecordBytes), int64(s.Checkpoints)}
		}
	}
	return w.Actual.RecordBytes, saved
}

// whatifName is the name of whatif's scenario that growth's scenario sc
// (one pair of settings) is: its max_wal_size for the max_wal_size ones,
// its checkpoint_timeout for the other.
func whatifName(sc growth.SpacingScenario) string {
	m, to, _ := strings.Cut(sc.Settings[0], " ")
	if strings.HasPrefix(sc.Scenario, "max_wal_size") {
		return "max_wal_size " + m
	}
	return "checkpoint_timeout " + to
}

// checkSpacingAgainstWhatIf compares a dataset's spacing estimate, summed
// over its days, with `walscope whatif` over the same WAL given the same
// current settings: each scenario's saving within bound bytes, its
// checkpoints within one (bound 0: equal, the checkpoints too). It
// returns the estimate.
func checkSpacingAgainstWhatIf(t *testing.T, name string, r *growth.Report, archive string, bound int64, flags ...string) *growth.Spacing {
	t.Helper()
	actual, saved := whatifSpacing(t, archive, flags...)
	s := r.Spacing
	if s == nil || s.Days == 0 || len(s.NotRecorded) != 0 || s.Bytes != actual || len(s.Current) != 1 || s.DroppedBlocks != 0 {
		t.Fatalf("%s: spacing %+v; whatif %d bytes", name, s, actual)
	}
	for _, sc := range s.Scenarios {
		if len(sc.Settings) != 1 {
			t.Fatalf("%s: %s: settings %v (one pair expected: the flags give them)", name, sc.Scenario, sc.Settings)
		}
		w, ok := saved[whatifName(sc)]
		if !ok {
			t.Fatalf("%s: %s (%s): whatif has no %s", name, sc.Scenario, sc.Settings[0], whatifName(sc))
		}
		d := sc.SavedBytes - w[0]
		t.Logf("%s: %s (%s) saves %d bytes of %d (%.2f%%), %d checkpoints; whatif over the whole stream %d, %d checkpoints (%+d bytes, %+.3f%% of the bytes)",
			name, sc.Scenario, growth.SettingsLabel(sc.Settings[0]), sc.SavedBytes, s.Bytes, sc.Percent, sc.Checkpoints, w[0], w[1], d, 100*float64(d)/float64(s.Bytes))
		ck := int64(sc.Checkpoints) - w[1]
		if d < -bound || d > bound || bound == 0 && ck != 0 || ck < -1 || ck > 1 {
			t.Errorf("%s: %s: %d bytes saved, %d checkpoints; whatif %d, %d (bound %d bytes)", name, sc.Scenario, sc.SavedBytes, sc.Checkpoints, w[0], w[1], bound)
		}
	}
	// the days and the weeks add up to the total
	for _, sc := range s.Scenarios {
		var days, weeks int64
		for _, d := range r.Days {
			days += d.SpacingSaved[sc.Scenario]
		}
		for _, w := range s.Weeks {
			weeks += w.Saved[sc.Scenario]
		}
		if days != sc.SavedBytes || weeks != days {
			t.Errorf("%s: %s: days %d, weeks %d, total %d", name, sc.Scenario, days, weeks, sc.SavedBytes)
		}
	}
	return s
}

// spacingStates logs the size of the carried state of each batch, and
// checks that the dataset keeps the last batch's state file only, of the
// size and CRC-32C its manifest says.
func spacingStates(t *testing.T, name, ds string) {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil || m == nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sizes []int
	var last *export.GrowthSpacing
	for i := range m.Batches {
		g, err := m.Batches[i].ParseGrowth()
		if err != nil || g.Spacing == nil || g.Spacing.StateFile != export.SpacingStateName(m.Batches[i].ID) || g.Spacing.State != "" {
			t.Fatalf("%s: batch %d: spacing estimate %+v (%v)", name, m.Batches[i].ID, g, err)
		}
		sizes = append(sizes, g.Spacing.StateBytes)
		last = g.Spacing
	}
	files, _ := filepath.Glob(filepath.Join(ds, export.ManifestDir, "_spacing-*"))
	if len(files) != 1 || filepath.Base(files[0]) != last.StateFile {
		t.Fatalf("%s: state files %q, want %s only", name, files, last.StateFile)
	}
	data, _ := os.ReadFile(files[0])
	if len(data) != last.StateBytes || crc32cFile(t, files[0]) != last.StateCRC32C {
		t.Errorf("%s: %s: %d bytes of CRC-32C %s, the manifest says %d, %s", name, files[0], len(data), crc32cFile(t, files[0]), last.StateBytes, last.StateCRC32C)
	}
	t.Logf("%s: %d batches, carried state %v bytes (state files), %d blocks at the end", name, len(sizes), sizes, last.StateBlocks)
}

// TestGrowthSpacing: the checkpoint spacing estimate of the growth
// aggregate (max_wal_size 2x and 4x, checkpoint_timeout 2x) appended
// night by night, against `walscope whatif` over the whole stream given
// the same settings, and against real PostgreSQL 15.
//
//   - fixtures/growth every night (17 nights over 42 days, 14 batches, the
//     server's 4MB and 30s given): equal to whatif to the dataset's end to
//     the byte and the checkpoint.
//   - fixtures/whatif-settings/wal-32MB (one pgbench run, 2 checkpoints
//     by WAL) as one batch, and in four nights of small spans, nights 2
//     and 3 ending inside a spread checkpoint (its record is the fourth
//     night's: they append nothing, a batch ends at a redo point): equal
//     to whatif to the datasets' end (the last redo point). Against the real run with max_wal_size 64MB: the
//     run's bytes less the 2x saving within 1% of what that server wrote
//     (pg_waldump's combined size; +0.04%).
//   - Manifests without the estimate (half of them stripped): their days
//     are not recorded, named, and left out.
func TestGrowthSpacing(t *testing.T) {
	t.Run("whatif-settings", func(t *testing.T) {
		dir := t.TempDir()
		fx := filepath.Join(testwal.Root(t), "fixtures", "whatif-settings")
		if err := testwal.UntarZstd(filepath.Join(fx, "wal-32MB", "archive.tar.zst"), dir); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dir, "archive")
		files := archiveFiles(t, archive)
		flags := []string{"--current-max-wal-size", "32MB", "--current-checkpoint-timeout", "1h"}
		whole := filepath.Join(dir, "whole")
		appendNight(t, whole, []string{archive}, flags...)
		checkSpacingAgainstWhatIf(t, "wal-32MB whole", growthJSON(t, "--dataset", whole), archive, 0, append(flags, "-e", datasetEnd(t, whole))...)

		nightly := filepath.Join(dir, "nightly")
		for q := 1; q <= 4; q++ {
			args := append(append([]string{"export", "--append", nightly, "-q", "--span-bytes", "300000", "-j", "2"}, flags...), files[:len(files)*q/4]...)
			if _, stderr, code := walscope(t, "", args...); code != 0 {
				t.Fatalf("night %d: exit %d\n%s", q, code, stderr)
			}
		}
		r := growthJSON(t, "--dataset", nightly)
		// A batch ends at a checkpoint's redo point: nights 2 and 3 end
		// before the record of the checkpoint whose redo point night 2
		// passed (0/2700138, its record 0/356B860 in night 4's WAL) and
		// append nothing.
		if r.Batches != 2 {
			t.Fatalf("%d batches", r.Batches)
		}
		s := checkSpacingAgainstWhatIf(t, "wal-32MB nightly", r, archive, 0, append(flags, "-e", datasetEnd(t, nightly))...)
		spacingStates(t, "wal-32MB nightly", nightly)

		// The real run with max_wal_size = 64MB.
		var runs [2]struct {
			Pg struct {
				Combined int64 `json:"combined_size"`
			} `json:"pg_waldump_from_redo_to_run_end"`
		}
		for i, name := range []string{"wal-32MB", "wal-64MB"} {
			data, err := os.ReadFile(filepath.Join(fx, name, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &runs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if s.Scenarios[0].Scenario != growth.ScenarioMaxWALSize2x || s.Scenarios[0].Settings[0] != "64MB 1h" {
			t.Fatalf("scenarios %+v", s.Scenarios)
		}
		est := runs[0].Pg.Combined - s.Scenarios[0].SavedBytes
		d := 100 * float64(est-runs[1].Pg.Combined) / float64(runs[1].Pg.Combined)
		t.Logf("from wal-32MB nightly, max_wal_size=2x (64MB): %d bytes estimated, wal-64MB wrote %d (%+.2f%%)", est, runs[1].Pg.Combined, d)
		if math.Abs(d) > 1 {
			t.Errorf("max_wal_size=2x: %d bytes estimated, the 64MB run wrote %d (%+.2f%%, more than 1%%)", est, runs[1].Pg.Combined, d)
		}
	})

	t.Run("growth", func(t *testing.T) {
		fx := growthFixture(t)
		flags := []string{"--current-max-wal-size", "4MB", "--current-checkpoint-timeout", "30s"}
		ds := filepath.Join(t.TempDir(), "ds")
		for _, files := range nightFiles(t, fx) {
			appendNight(t, ds, files, flags...)
		}
		r := growthJSON(t, "--dataset", ds)
		// (17 nights; 3 end before any new checkpoint record and append
		// nothing: a batch ends at a redo point)
		if r.Batches < 14 || len(r.Spacing.Weeks) < 6 {
			t.Errorf("%d batches, %d weeks", r.Batches, len(r.Spacing.Weeks))
		}
		checkSpacingAgainstWhatIf(t, "growth nightly", r, filepath.Join(fx, "archive"), 0, append(flags, "-e", datasetEnd(t, ds))...)
		spacingStates(t, "growth nightly", ds)

		// Manifests of a walscope before the estimate: the first half of
		// the batches without growth.spacing.
		old := manifestsWithout(t, ds, "spacing")
		o := growthJSON(t, "--dataset", old)
		withWAL := 0
		for _, d := range o.Days {
			if d.Records == 0 {
				continue
			}
			withWAL++
			if (d.SpacingSaved == nil) != slices.Contains(o.Spacing.NotRecorded, d.Day) {
				t.Errorf("%s: saved %v, not recorded %v", d.Day, d.SpacingSaved, o.Spacing.NotRecorded)
			}
		}
		if len(o.Spacing.NotRecorded) < 5 || o.Spacing.Days == 0 || o.Spacing.Days+len(o.Spacing.NotRecorded) != withWAL {
			t.Errorf("half recorded: %d days, %d not recorded, of %d", o.Spacing.Days, len(o.Spacing.NotRecorded), withWAL)
		}
		text, _, _ := walscope(t, "", "growth", "--dataset", old)
		if !strings.Contains(text, "not recorded (batches written before the spacing estimate)") || !strings.Contains(text, "max_wal_size=4x") {
			t.Errorf("text does not say what is not recorded:\n%s", text)
		}
		csv, _, _ := walscope(t, "", "growth", "--dataset", ds, "--format", "csv")
		if n := strings.Count(csv, ",spacing_saved,"); n != 3*r.Spacing.Days {
			t.Errorf("%d spacing_saved rows for %d days", n, r.Spacing.Days)
		}
	})
}

// TestGrowthSpacingStateFile: the spacing state lives beside the manifest
// (_spacing-NNNNNN.state), one a dataset. A state file that does not match
// what its manifest says (damaged, or missing) leaves the next batch
// without the estimate, its days named not recorded, and the batch after
// it begins afresh; the other aggregates are not touched.
func TestGrowthSpacingStateFile(t *testing.T) {
	fx := growthFixture(t)
	nights := nightFiles(t, fx)
	ds := filepath.Join(t.TempDir(), "ds")
	for _, files := range nights[:3] {
		appendNight(t, ds, files)
	}
	states, _ := filepath.Glob(filepath.Join(ds, export.ManifestDir, "_spacing-*.state"))
	if len(states) != 1 {
		t.Fatalf("state files %q, want one", states)
	}
	data, err := os.ReadFile(states[0])
	if err != nil || len(data) < 10 {
		t.Fatalf("%s: %d bytes, %v", states[0], len(data), err)
	}
	data[len(data)/2] ^= 0xff
	os.WriteFile(states[0], data, 0o644)
	before := growthJSON(t, "--dataset", ds)
	// the next nights until two more batches (a night without a new
	// checkpoint record appends nothing)
	next := 3
	appendBatch := func() *export.Batch {
		m, _ := export.ReadManifest(os.DirFS(ds))
		n := len(m.Batches)
		for ; next < len(nights); next++ {
			appendNight(t, ds, nights[next])
			if m, _ = export.ReadManifest(os.DirFS(ds)); len(m.Batches) > n {
				next++
				return m.Last()
			}
		}
		t.Fatalf("no night after %d adds a batch", next)
		return nil
	}
	damaged := appendBatch()
	appendBatch()
	r := growthJSON(t, "--dataset", ds)
	if len(damaged.Days) == 0 || r.Batches != before.Batches+2 {
		t.Fatalf("batches %d then %d, damaged batch's days %v", before.Batches, r.Batches, damaged.Days)
	}
	for _, d := range damaged.Days {
		if !slices.Contains(r.Spacing.NotRecorded, d) {
			t.Errorf("%s (the batch after the damaged state): not said not recorded: %v", d, r.Spacing.NotRecorded)
		}
	}
	if r.Spacing.Days <= before.Spacing.Days {
		t.Errorf("the batch after: no estimate (%d days with it, %d before)", r.Spacing.Days, before.Spacing.Days)
	}
	if r.Total.Records <= before.Total.Records {
		t.Errorf("records %d, %d before", r.Total.Records, before.Total.Records)
	}
	t.Logf("damaged state: batch %d's days %v not recorded; %d days with the estimate", damaged.ID, damaged.Days, r.Spacing.Days)
}
