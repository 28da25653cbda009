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
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// whatifRun is one run of fixtures/whatif: its WAL, the LSN range of the
// measured pgbench run, and what pg_waldump counted over that range.
type whatifRun struct {
	dir        string
	start, end xlog.LSN
	combined   uint64 // pg_waldump --stats combined size over the run
	fpiSize    uint64
}

func loadRun(t *testing.T, name string) whatifRun {
	t.Helper()
	base := filepath.Join(testwal.Root(t), "fixtures", "whatif", name)
	var meta struct {
		RunStart string `json:"run_start_lsn"`
		RunEnd   string `json:"run_end_lsn"`
		Pg       struct {
			Combined uint64 `json:"combined_size"`
			FPI      uint64 `json:"fpi_size"`
		} `json:"pg_waldump_run"`
	}
	b, err := os.ReadFile(filepath.Join(base, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(base, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	r := whatifRun{dir: filepath.Join(dir, "archive"), combined: meta.Pg.Combined, fpiSize: meta.Pg.FPI}
	r.start, _ = xlog.ParseLSN(meta.RunStart)
	r.end, _ = xlog.ParseLSN(meta.RunEnd)
	return r
}

// each reads the run's records from its checkpoint's redo point on (so the
// first cycle is known) and calls fn for those of the measured run.
func (w whatifRun) each(t *testing.T, from xlog.LSN, fn func(*decode.Record)) {
	t.Helper()
	src, err := xlog.OpenDir(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := xlog.NewReader(src, xlog.Options{Start: from, End: w.end, Timeline: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", w.dir, err)
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		fn(d)
	}
}

func estimate(t *testing.T, w whatifRun) (Scenario, map[string]Scenario) {
	in := WhatIfInput{PageSize: 8192, SegSize: 1 << 20, BlockSize: 8192, WalLevel: -1}
	var learner DataLenLearner
	var level LevelGuesser
	w.each(t, w.start, func(d *decode.Record) {
		if in.Start == 0 {
			in.Start = d.LSN
		}
		learner.Add(d)
		level.Add(d)
		if cp, ok := rmgr.Checkpoint(d); ok {
			in.Redo = append(in.Redo, cp.Redo)
		}
	})
	in.WalLevel = level.Level()
	in.DataLen = learner.Means()
	var rc decode.Recompressor
	in.Sizer = rc.Estimate
	wi := NewWhatIf(in)
	w.each(t, w.start, func(d *decode.Record) { wi.Add(d) })
	actual, sc := wi.Results()
	m := map[string]Scenario{}
	for _, s := range sc {
		m[s.Setting+"="+s.Value] = s
	}
	return actual, m
}

func within(t *testing.T, what string, est, real uint64, tol float64) {
	t.Helper()
	off := float64(est)/float64(real) - 1
	t.Logf("%s: estimated %d, real %d (%+.2f%%)", what, est, real, 100*off)
	if off < -tol || off > tol {
		t.Errorf("%s: estimate %d is %+.1f%% off the real %d", what, est, 100*off, real)
	}
}

// TestWhatIfAgainstRealRuns: the estimates made from one real run match the
// real runs of the same deterministic pgbench workload under the other
// setting (fixtures/whatif, made by its generate.sh).
func TestWhatIfAgainstRealRuns(t *testing.T) {
	off := loadRun(t, "compression-off")
	actual, est := estimate(t, off)
	within(t, "actual record bytes (self-check)", actual.RecordBytes, off.combined, 0.0001)
	for _, m := range []string{"pglz", "lz4", "zstd"} {
		real := loadRun(t, "compression-"+m)
		within(t, "wal_compression="+m+" record bytes", est["wal_compression="+m].RecordBytes, real.combined, 0.05)
	}
	fpw := loadRun(t, "fpw-off")
	within(t, "full_page_writes=off record bytes", est["full_page_writes=off"].RecordBytes, fpw.combined, 0.05)
}

// TestWhatIfCheckpointSpacing compares the 2x estimate from the run with a
// checkpoint every 500 transactions with the run with one every 1000.
func TestWhatIfCheckpointSpacing(t *testing.T) {
	dense := loadRun(t, "checkpoint-every-500")
	sparse := loadRun(t, "checkpoint-every-1000")
	_, est := estimate(t, dense)
	within(t, "checkpoint_distance=2x record bytes", est["checkpoint_distance=2x"].RecordBytes, sparse.combined, 0.10)
	_, est = estimate(t, sparse)
	within(t, "checkpoint_distance=0.5x record bytes", est["checkpoint_distance=0.5x"].RecordBytes, dense.combined, 0.10)
}

// TestSawtooth: within each checkpoint cycle of a steady workload, the image
// bytes of the first tenth exceed those of the last: pages imaged once are
// not imaged again until the next redo point.
func TestSawtooth(t *testing.T) {
	w := loadRun(t, "checkpoint-every-500")
	var finder stats.RedoFinder
	var start xlog.LSN
	w.each(t, w.start, func(d *decode.Record) {
		if start == 0 {
			start = d.LSN
		}
		finder.Add(d)
	})
	b := stats.NewBreakdown(time.Minute, finder.Sorted(), start, w.end)
	w.each(t, w.start, func(d *decode.Record) { b.Add(d) })
	b.Finish()
	n := 0
	for _, c := range b.Cycles {
		if c.Checkpoint == 0 || c.ImageBytes < 100000 || c.End-c.Redo < 1<<20 {
			continue // not a whole cycle of the run
		}
		n++
		t.Logf("cycle %s: image bytes per tenth %v", c.Redo, c.Tenths)
		if c.Tenths[0] <= c.Tenths[9] {
			t.Errorf("cycle at %s: first tenth %d image bytes, last %d", c.Redo, c.Tenths[0], c.Tenths[9])
		}
	}
	if n < 2 {
		t.Fatalf("only %d whole cycles", n)
	}
}

// TestWhatIfWalLevel compares the lower-level estimates with the real runs at
// those levels.
func TestWhatIfWalLevel(t *testing.T) {
	replica := loadRun(t, "level-replica")
	minimal := loadRun(t, "level-minimal")
	_, est := estimate(t, replica)
	within(t, "wal_level=minimal record bytes (from replica)", est["wal_level=minimal"].RecordBytes, minimal.combined, 0.05)
	if _, err := os.Stat(filepath.Join(testwal.Root(t), "fixtures", "whatif", "level-logical")); err == nil {
		logical := loadRun(t, "level-logical")
		_, est = estimate(t, logical)
		within(t, "wal_level=replica record bytes (from logical)", est["wal_level=replica"].RecordBytes, replica.combined, 0.05)
		within(t, "wal_level=minimal record bytes (from logical)", est["wal_level=minimal"].RecordBytes, minimal.combined, 0.05)
	}
}

// TestImagePipeline: a WhatIf fed by an ImagePipeline (two workers, spans
// of one segment, so that the WhatIf waits on the engine and the engine on
// the WhatIf) gives exactly the sequential results, also when the WhatIf
// skips records (as filters do) and when the pipeline stops early.
func TestImagePipeline(t *testing.T) {
	w := loadRun(t, "compression-off")
	run := func(pipe bool, keep func(i int) bool, stopAfter int) []Scenario {
		in := WhatIfInput{PageSize: 8192, SegSize: 1 << 20, BlockSize: 8192, WalLevel: 1, Start: w.start}
		var rc decode.Recompressor
		in.Sizer = rc.Estimate
		if pipe {
			in.Images = w.pipeline(t, func() ImageSizer { var rc decode.Recompressor; return rc.Estimate }, stopAfter)
			defer in.Images.Close()
		}
		wi := NewWhatIf(in)
		i := 0
		w.each(t, w.start, func(d *decode.Record) {
			if keep(i) {
				wi.Add(d)
			}
			i++
		})
		actual, sc := wi.Results()
		return append([]Scenario{actual}, sc...)
	}
	all := func(int) bool { return true }
	odd := func(i int) bool { return i%3 != 1 }
	for _, c := range []struct {
		name      string
		keep      func(int) bool
		stopAfter int
	}{{"all", all, 0}, {"skipping", odd, 0}, {"stopped", all, 2000}} {
		seq, par := run(false, c.keep, 0), run(true, c.keep, c.stopAfter)
		if len(seq) != len(par) {
			t.Fatalf("%s: %d and %d scenarios", c.name, len(seq), len(par))
		}
		for k := range seq {
			if seq[k].Setting != par[k].Setting || seq[k].Value != par[k].Value || seq[k].RecordBytes != par[k].RecordBytes ||
				seq[k].WALBytes != par[k].WALBytes || seq[k].ImageBytes != par[k].ImageBytes {
				t.Errorf("%s: %s=%s: pipeline %d/%d/%d, sequential %d/%d/%d", c.name, seq[k].Setting, seq[k].Value,
					par[k].RecordBytes, par[k].WALBytes, par[k].ImageBytes, seq[k].RecordBytes, seq[k].WALBytes, seq[k].ImageBytes)
			}
		}
		if seq[1].Setting != "wal_compression" || seq[2].ImageBytes >= seq[1].ImageBytes {
			t.Errorf("%s: the compression scenarios estimate nothing: %+v %+v", c.name, seq[1], seq[2])
		}
	}
}

// TestWhatIfSameMethod: from a run written with a wal_compression method,
// that method's scenario is the run itself, exactly (its images are taken as
// stored, not compressed again).
func TestWhatIfSameMethod(t *testing.T) {
	for _, m := range []string{"pglz", "lz4", "zstd"} {
		actual, sc := estimate(t, loadRun(t, "compression-"+m))
		s := sc["wal_compression="+m]
		if s.RecordBytes != actual.RecordBytes || s.ImageBytes != actual.ImageBytes || s.WALBytes != actual.WALBytes {
			t.Errorf("%s run, %s scenario: %d/%d/%d, actual %d/%d/%d", m, m, s.RecordBytes, s.ImageBytes, s.WALBytes,
				actual.RecordBytes, actual.ImageBytes, actual.WALBytes)
		}
		if actual.ImageBytes == 0 {
			t.Errorf("%s run: no images", m)
		}
	}
}
