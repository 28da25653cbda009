package whatif

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// settingsRun is one run of fixtures/whatif-settings (run.json; generate.sh
// there made it on PostgreSQL 15).
type settingsRun struct {
	Name     string `json:"name"`
	Settings struct {
		MaxWALSize string `json:"max_wal_size"`
		Timeout    string `json:"checkpoint_timeout"`
	} `json:"settings"`
	PrerunRedo string `json:"prerun_redo_lsn"`
	RunStart   string `json:"run_start_insert_lsn"`
	RunEnd     string `json:"run_end_insert_lsn"`
	Pg         struct {
		Combined uint64 `json:"combined_size"`
	} `json:"pg_waldump_from_redo_to_run_end"`
	CheckpointsInRun int `json:"checkpoints_in_run"`
	Checkpoints      []struct {
		Redo  string `json:"redo_lsn"`
		Cause string `json:"cause"`
	} `json:"checkpoints"`
	PgWALMaxSegments int    `json:"pg_wal_max_segments"`
	dir              string // the extracted archive, for the runs that keep one
}

func loadSettingsRun(t *testing.T, name string, extract bool) settingsRun {
	t.Helper()
	base := filepath.Join(testwal.Root(t), "fixtures", "whatif-settings", name)
	b, err := os.ReadFile(filepath.Join(base, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r settingsRun
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if extract {
		dir := t.TempDir()
		if err := testwal.UntarZstd(filepath.Join(base, "archive.tar.zst"), dir); err != nil {
			t.Fatal(err)
		}
		r.dir = filepath.Join(dir, "archive")
	}
	return r
}

func lsnOf(t *testing.T, s string) xlog.LSN {
	t.Helper()
	l, err := xlog.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// records calls fn for the run's records from from to to (0: the whole
// archive).
func (r settingsRun) records(t *testing.T, from, to xlog.LSN, fn func(*decode.Record)) {
	t.Helper()
	src, err := xlog.OpenDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := xlog.NewReader(src, xlog.Options{Start: from, End: to, Timeline: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", r.dir, err)
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		fn(d)
	}
}

// predict runs the what-if over run r with the scenarios asked for.
func (r settingsRun) predict(t *testing.T, sizes []uint64, timeouts []time.Duration) (*WhatIf, Scenario, []Scenario, []stats.CycleInfo) {
	t.Helper()
	in := WhatIfInput{PageSize: 8192, SegSize: 1 << 20, BlockSize: 8192, WalLevel: xlog.WalLevelUnknown, Version: xlog.V15,
		Start: lsnOf(t, r.PrerunRedo), MaxWALSizes: sizes, Timeouts: timeouts,
		Given: GivenSettings{Base: CheckpointSettings{MinWALSize: 4 << 20, CompletionTarget: 0.9}, CompletionTarget: true}}
	// The first pass reads the whole archive, as whatif does: the
	// checkpoint still running at the end of the run is known.
	var parts [1]WhatIfPass
	r.records(t, in.Start, 0, func(d *decode.Record) { parts[0].Add(d) })
	FillWhatIfInput(&in, parts[:])
	var rc decode.Recompressor
	in.Sizer = rc.Estimate
	w := NewWhatIf(in)
	r.records(t, in.Start, lsnOf(t, r.RunEnd), func(d *decode.Record) { w.Add(d) })
	a, sc := w.Results()
	return w, a, sc, in.Cycles
}

// TestCheckpointCauses: the causes walscope tells from the WAL are those the
// server logged ("checkpoint starting: wal", "time", "immediate force
// wait"), and the settings it infers are the run's.
func TestCheckpointCauses(t *testing.T) {
	for _, c := range []struct {
		run     string
		segs    int
		timeout time.Duration
		maxWAL  string
	}{{"wal-32MB", 16, 0, "32MB"}, {"paced-time-60s", 0, time.Minute, "1GB"}} {
		r := loadSettingsRun(t, c.run, true)
		// The whole archive: the checkpoint before the pre-run one is
		// read, so that one has a predecessor.
		var parts [1]WhatIfPass
		r.records(t, 0, 0, func(d *decode.Record) { parts[0].Add(d) })
		in := WhatIfInput{}
		FillWhatIfInput(&in, parts[:])
		logged := map[xlog.LSN]string{lsnOf(t, r.PrerunRedo): "immediate force wait"}
		for _, ck := range r.Checkpoints {
			logged[lsnOf(t, ck.Redo)] = ck.Cause
		}
		want := map[string]stats.CheckpointCause{"wal": stats.CauseWAL, "time": stats.CauseTime, "immediate force wait": stats.CauseRequested}
		n := 0
		for i, cy := range in.Cycles {
			cause, ok := logged[cy.Redo]
			if !ok {
				continue
			}
			n++
			if i <= 1 && cy.Cause == stats.CauseUnknown {
				// the first checkpoint of the archive: nothing before it
				// to measure its spacing from
				continue
			}
			if cy.Cause != want[cause] {
				t.Errorf("%s: checkpoint at %s: %s, the server logged %q", c.run, cy.Redo, cy.Cause, cause)
			}
		}
		if n != len(logged) {
			t.Errorf("%s: %d of the %d logged checkpoints found", c.run, n, len(logged))
		}
		inf := stats.InferSettings(in.Cycles)
		cur, _ := CurrentSettings(inf, 1<<20, xlog.V15, GivenSettings{})
		t.Logf("%s: inferred %+v, max_wal_size %s", c.run, inf, FormatSize(cur.MaxWALSize))
		if inf.CheckpointSegments != c.segs || inf.Timeout != c.timeout {
			t.Errorf("%s: inferred %+v, want %d segments and %v", c.run, inf, c.segs, c.timeout)
		}
		if c.segs > 0 && FormatSize(cur.MaxWALSize) != c.maxWAL {
			t.Errorf("%s: max_wal_size inferred %s, want %s", c.run, FormatSize(cur.MaxWALSize), c.maxWAL)
		}
	}
}

// TestWhatIfSettingsAgainstRealRuns: from one real run, the record bytes
// and the number of checkpoints of the runs of the same workload under
// other max_wal_size and checkpoint_timeout values are predicted within 3%
// and one checkpoint.
func TestWhatIfSettingsAgainstRealRuns(t *testing.T) {
	for _, c := range []struct {
		base   string
		others []string
	}{
		{"wal-32MB", []string{"wal-8MB", "wal-16MB", "wal-32MB", "wal-64MB"}},
		{"paced-time-60s", []string{"paced-time-30s", "paced-time-60s", "paced-time-30s-wal-8MB", "paced-time-30s-wal-20MB"}},
	} {
		base := loadSettingsRun(t, c.base, true)
		var sizes []uint64
		var timeouts []time.Duration
		var runs []settingsRun
		for _, name := range c.others {
			r := loadSettingsRun(t, name, false)
			runs = append(runs, r)
			m, err := ParseSize(r.Settings.MaxWALSize)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseTimeout(r.Settings.Timeout)
			if err != nil {
				t.Fatal(err)
			}
			sizes, timeouts = append(sizes, m), append(timeouts, d)
		}
		_, actual, sc, _ := base.predict(t, sizes, timeouts)
		within(t, c.base+": actual record bytes (self-check)", actual.RecordBytes, base.Pg.Combined, 0.0001)
		start, end := lsnOf(t, base.RunStart), lsnOf(t, base.RunEnd)
		for _, r := range runs {
			var got *Scenario
			m, _ := ParseSize(r.Settings.MaxWALSize)
			d, _ := ParseTimeout(r.Settings.Timeout)
			for i := range sc {
				if sc[i].Setting == "max_wal_size+checkpoint_timeout" && sc[i].Value == FormatSize(m)+","+FormatTimeout(d) {
					got = &sc[i]
				}
			}
			if got == nil {
				t.Fatalf("%s: no scenario %s,%s", c.base, r.Settings.MaxWALSize, r.Settings.Timeout)
			}
			n := 0
			for _, l := range got.Redo {
				if l >= start && l < end {
					n++
				}
			}
			what := c.base + " -> " + r.Name
			within(t, what+" record bytes", got.RecordBytes, r.Pg.Combined, 0.03)
			real := map[string]int{}
			for _, ck := range r.Checkpoints {
				real[ck.Cause]++
			}
			pred := map[string]int{}
			for i, l := range got.Redo {
				if l >= start && l < end {
					pred[got.Causes[i].String()]++
				}
			}
			t.Logf("%s: checkpoints predicted %d %v, real %d %v; pg_wal predicted %d segments, sampled %d", what, n, pred, r.CheckpointsInRun,
				real, got.PgWALBytes>>20, r.PgWALMaxSegments)
			if n < r.CheckpointsInRun-1 || n > r.CheckpointsInRun+1 {
				t.Errorf("%s: %d checkpoints predicted, %d real", what, n, r.CheckpointsInRun)
			}
			for _, cause := range []string{"wal", "time"} {
				if d := pred[cause] - real[cause]; d < -1 || d > 1 {
					t.Errorf("%s: %d %s checkpoints predicted, %d real", what, pred[cause], cause, real[cause])
				}
			}
		}
	}
}
