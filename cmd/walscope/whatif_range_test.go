package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/whatif"
)

// rangeRun is fixtures/whatif-range/NAME/run.json: a real run's range and
// what the server wrote in it.
type rangeRun struct {
	MaxWALSize string `json:"max_wal_size"`
	Start      string `json:"range_start_lsn"`
	End        string `json:"range_end_lsn"`
	Pg         struct {
		Combined uint64 `json:"combined_size"`
		FPI      uint64 `json:"fpi_size"`
	} `json:"pg_waldump_range"`
	Checkpoints []struct {
		Cause string `json:"cause"`
	} `json:"checkpoints_in_range"`
}

func loadRangeRun(t *testing.T, name string) rangeRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "whatif-range", name, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r rangeRun
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWhatIfRangeInsideArchive (issue 28.2): one pgbench workload run by a
// real PostgreSQL 15 at max_wal_size 32MB and 128MB (fixtures/whatif-range);
// the range starts after 4,000 of its 12,000 transactions, where the 32MB
// run's WAL-triggered checkpoint has not begun yet and its redo point lies
// in the range; the 128MB run has no checkpoint in the range. From the 32MB
// run's archive, `whatif -s START -e END` must predict the 128MB run's
// range (record bytes and images within 1%, no checkpoint), and the 32MB
// scenario must match the run it was read from (within 1%, one checkpoint,
// caused by WAL). Before the fix every scenario kept the range's one
// checkpoint as if requested and predicted the 128MB range at 4x its real
// size (17,337,751 record bytes against 4,355,056). advise reads through
// the same path.
func TestWhatIfRangeInsideArchive(t *testing.T) {
	r32, r128 := loadRangeRun(t, "wal-32MB"), loadRangeRun(t, "wal-128MB")
	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(testwal.Root(t), "fixtures", "whatif-range", "wal-32MB", "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")
	for _, given := range [][]string{nil, {"--current-max-wal-size", "32MB", "--current-checkpoint-timeout", "1h"}} {
		args := append([]string{"whatif", "--format", "json", "--max-wal-size", "32MB,128MB", "-s", r32.Start, "-e", r32.End}, given...)
		out, stderr, code := walscope(t, "", append(args, archive)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var res struct {
			Actual    whatif.Scenario   `json:"actual"`
			Scenarios []whatif.Scenario `json:"scenarios"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if res.Actual.RecordBytes != r32.Pg.Combined {
			t.Errorf("actual record bytes %d, pg_waldump over the range %d", res.Actual.RecordBytes, r32.Pg.Combined)
		}
		byValue := map[string]whatif.Scenario{}
		for _, s := range res.Scenarios {
			if s.Setting == "max_wal_size" {
				byValue[s.Value] = s
			}
		}
		for _, c := range []struct {
			value string
			run   rangeRun
		}{{"32MB", r32}, {"128MB", r128}} {
			s, ok := byValue[c.value]
			if !ok {
				t.Fatalf("%v: no max_wal_size %s scenario", given, c.value)
			}
			within(t, c.value+" record bytes", s.RecordBytes, c.run.Pg.Combined, 0.01)
			within(t, c.value+" image bytes", s.ImageBytes, c.run.Pg.FPI, 0.01)
			if s.Checkpoints != len(c.run.Checkpoints) {
				t.Errorf("%v: %s: %d checkpoints in the range, the real run %d", given, c.value, s.Checkpoints, len(c.run.Checkpoints))
			}
		}
		if s := byValue["32MB"]; s.CheckpointsByCause["wal"] != 1 {
			t.Errorf("%v: 32MB causes %v, want one wal", given, s.CheckpointsByCause)
		}
	}
}

func within(t *testing.T, what string, est, real uint64, tol float64) {
	t.Helper()
	if d := float64(est)/float64(real) - 1; d > tol || d < -tol {
		t.Errorf("%s: estimated %d, real %d (%+.2f%%)", what, est, real, 100*d)
	} else {
		t.Logf("%s: estimated %d, real %d (%+.2f%%)", what, est, real, 100*d)
	}
}
