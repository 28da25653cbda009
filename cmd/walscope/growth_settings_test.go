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

// whatifSaved runs `walscope whatif --format json` over archive and
// returns the actual record bytes and, by growth's scenario name, what each
// full_page_writes and wal_level scenario saves in record bytes.
func whatifSaved(t *testing.T, archive string, flags ...string) (uint64, map[string]int64) {
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
	saved := map[string]int64{}
	for _, s := range w.Scenarios {
		if s.Setting == "full_page_writes" || s.Setting == "wal_level" {
			saved[s.Setting+"="+s.Value] = int64(w.Actual.RecordBytes) - int64(s.RecordBytes)
		}
	}
	return w.Actual.RecordBytes, saved
}

// datasetEnd is where the append dataset ds ends (its last batch's end:
// the last checkpoint's redo point its input held).
func datasetEnd(t *testing.T, ds string) string {
	t.Helper()
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil || m == nil {
		t.Fatalf("manifest of %s: %v", ds, err)
	}
	return m.Last().End
}

// checkSettingsEqualWhatIf checks a dataset's settings estimate, summed
// over its days, against `walscope whatif` over the same WAL (to the
// dataset's end, ds's): every
// scenario growth says applies saves exactly what whatif's does, and
// whatif has no scenario growth says does not apply.
func checkSettingsEqualWhatIf(t *testing.T, name string, r *growth.Report, archive, ds string) {
	t.Helper()
	actual, saved := whatifSaved(t, archive, "-e", datasetEnd(t, ds))
	s := r.Settings
	if s == nil || s.Days == 0 || len(s.NotRecorded) != 0 || s.Bytes != r.Total.Bytes || r.Total.Bytes != actual {
		t.Fatalf("%s: settings %+v; growth %d bytes, whatif %d", name, s, r.Total.Bytes, actual)
	}
	for _, sc := range s.Scenarios {
		w, ok := saved[sc.Scenario]
		if ok != sc.Applies || sc.SavedBytes != w {
			t.Errorf("%s: %s: growth saves %d (applies %v), whatif %d (has it %v)", name, sc.Scenario, sc.SavedBytes, sc.Applies, w, ok)
		}
		t.Logf("%s: %s saves %d bytes of %d (%.2f%%); whatif over the whole stream %d", name, sc.Scenario, sc.SavedBytes, s.Bytes, sc.Percent, w)
	}
	// the days and weeks add up to the total
	var days, weeks int64
	for _, d := range r.Days {
		days += d.SettingsSaved[growth.ScenarioFPWOff]
	}
	for _, w := range s.Weeks {
		weeks += w.Saved[growth.ScenarioFPWOff]
	}
	if days != s.Scenarios[0].SavedBytes || weeks != days {
		t.Errorf("%s: full_page_writes=off: days %d, weeks %d, total %d", name, days, weeks, s.Scenarios[0].SavedBytes)
	}
}

// TestGrowthSettings: the settings estimate of the growth aggregate
// (full_page_writes = off, wal_level replica and minimal) against real
// PostgreSQL 15 and against `walscope whatif`. fixtures/whatif's runs of
// one pgbench workload are each appended in four nights (a quarter of the
// segments more each night, small spans so that a batch is several spans):
// the nights' estimate summed equals whatif over the whole archive exactly,
// and is compared with the run that had the other setting (the estimate's
// bytes, the run's bytes less the saving, against that run's bytes):
// within 2% (full_page_writes = off from compression-off against fpw-off:
// +1.5%; wal_level = minimal from level-replica against level-minimal:
// exact; from level-logical, replica and minimal +0.46%, the prefix and
// suffix compression of HOT updates below logical that whatif does not
// model). fixtures/growth's 42 days appended every fourth night: equal to
// whatif over its whole archive; with half its manifests stripped of the
// estimate (as an earlier walscope wrote them), their days are said not
// recorded and left out.
func TestGrowthSettings(t *testing.T) {
	bytes := map[string]uint64{}
	reports := map[string]*growth.Report{}
	for _, name := range []string{"compression-off", "fpw-off", "level-replica", "level-minimal", "level-logical"} {
		dir := t.TempDir()
		if err := testwal.UntarZstd(filepath.Join(testwal.Root(t), "fixtures", "whatif", name, "archive.tar.zst"), dir); err != nil {
			t.Fatal(err)
		}
		files := archiveFiles(t, filepath.Join(dir, "archive"))
		ds := filepath.Join(dir, "ds")
		for q := 1; q <= 4; q++ {
			night := files[:max(1, len(files)*q/4)]
			if _, stderr, code := walscope(t, "", append([]string{"export", "--append", ds, "-q", "--span-bytes", "300000", "-j", "2"}, night...)...); code != 0 && !strings.Contains(stderr, "nothing to append") {
				t.Fatalf("%s: night %d: exit %d\n%s", name, q, code, stderr)
			}
		}
		r := growthJSON(t, "--dataset", ds)
		// A batch ends at a checkpoint's redo point: these short runs
		// hold a checkpoint at their start and at their end, so the four
		// nights make two batches (fpw-off's WAL is 2 segments: one).
		if name != "fpw-off" && r.Batches < 2 {
			t.Errorf("%s: %d batches", name, r.Batches)
		}
		checkSettingsEqualWhatIf(t, name, r, filepath.Join(dir, "archive"), ds)
		bytes[name], reports[name] = r.Total.Bytes, r
	}
	saved := func(name, scenario string) int64 {
		for _, sc := range reports[name].Settings.Scenarios {
			if sc.Scenario == scenario {
				return sc.SavedBytes
			}
		}
		t.Fatalf("%s: no %s", name, scenario)
		return 0
	}
	for _, p := range []struct {
		from, scenario, to string
		within             float64 // percent
	}{
		{"compression-off", growth.ScenarioFPWOff, "fpw-off", 2},
		{"level-replica", growth.ScenarioWalLevelMinimal, "level-minimal", 0},
		{"level-logical", growth.ScenarioWalLevelReplica, "level-replica", 0.6},
		{"level-logical", growth.ScenarioWalLevelMinimal, "level-minimal", 0.6},
	} {
		est := float64(bytes[p.from]) - float64(saved(p.from, p.scenario))
		real := float64(bytes[p.to])
		d := 100 * (est - real) / real
		t.Logf("from %s, %s: %.0f bytes estimated, %s wrote %.0f (%+.2f%%)", p.from, p.scenario, est, p.to, real, d)
		if math.Abs(d) > p.within {
			t.Errorf("from %s, %s: %.0f bytes estimated, %s wrote %.0f (%+.2f%%, more than %.1f%%)", p.from, p.scenario, est, p.to, real, d, p.within)
		}
	}
	// Levels: the stream's, and the scenarios that apply.
	for name, want := range map[string]string{"level-minimal": "minimal", "level-replica": "replica", "level-logical": "logical"} {
		if got := reports[name].Settings.WalLevel; got != want {
			t.Errorf("%s: wal_level %s", name, got)
		}
	}

	t.Run("growth", func(t *testing.T) {
		fx := growthFixture(t)
		ds := filepath.Join(t.TempDir(), "ds")
		nights := nightFiles(t, fx)
		for i := 3; i < len(nights)+3; i += 4 {
			// spans of 300 kB: a bulk load's relation created in one span
			// and written in the next (without carrying it, minimal's
			// saving here is 3,989,475 bytes instead of 4,312,880)
			args := append([]string{"export", "--append", ds, "-q", "--span-bytes", "300000", "-j", "2"}, nights[min(i, len(nights)-1)]...)
			if _, stderr, code := walscope(t, "", args...); code != 0 && !strings.Contains(stderr, "nothing to append") {
				t.Fatalf("night %d: exit %d\n%s", i, code, stderr)
			}
		}
		r := growthJSON(t, "--dataset", ds)
		if r.Batches < 8 || len(r.Settings.Weeks) < 6 {
			t.Errorf("%d batches, %d weeks", r.Batches, len(r.Settings.Weeks))
		}
		checkSettingsEqualWhatIf(t, "growth", r, filepath.Join(fx, "archive"), ds)

		// --since/--until: the days of the bounds only, their weeks, and
		// the days adding up to the scenarios.
		b := growthJSON(t, "--dataset", ds, "--since", "2026-09-21", "--until", "2026-10-04")
		var fpw, minimal int64
		for _, d := range b.Days {
			fpw += d.SettingsSaved[growth.ScenarioFPWOff]
			minimal += d.SettingsSaved[growth.ScenarioWalLevelMinimal]
		}
		if b.Settings.Days != 14 || len(b.Settings.Weeks) != 2 || b.Settings.Bytes != b.Total.Bytes ||
			fpw != b.Settings.Scenarios[0].SavedBytes || minimal != b.Settings.Scenarios[2].SavedBytes || fpw <= 0 || fpw >= r.Settings.Scenarios[0].SavedBytes {
			t.Errorf("2026-09-21 to 2026-10-04: %+v; days' sums %d, %d", b.Settings, fpw, minimal)
		}

		// Manifests of a walscope before the estimate: the first half of
		// the batches without growth.settings. Their days are not
		// recorded, named, and left out of the sums; the others' kept.
		old := manifestsWithout(t, ds, "settings")
		o := growthJSON(t, "--dataset", old)
		withWAL := 0
		for _, d := range o.Days {
			if d.Records == 0 {
				continue // a day of a segment or checkpoint only
			}
			withWAL++
			if (d.SettingsSaved == nil) != slices.Contains(o.Settings.NotRecorded, d.Day) {
				t.Errorf("%s: saved %v, not recorded %v", d.Day, d.SettingsSaved, o.Settings.NotRecorded)
			}
		}
		if len(o.Settings.NotRecorded) < 5 || o.Settings.Days == 0 || o.Settings.Days+len(o.Settings.NotRecorded) != withWAL || o.Settings.Bytes >= r.Settings.Bytes {
			t.Errorf("half recorded: %d days, %d not recorded, of %d", o.Settings.Days, len(o.Settings.NotRecorded), withWAL)
		}
		text, _, _ := walscope(t, "", "growth", "--dataset", old)
		if !strings.Contains(text, "not recorded (batches written before the settings estimate)") {
			t.Errorf("text does not say what is not recorded:\n%s", text)
		}
	})
}
