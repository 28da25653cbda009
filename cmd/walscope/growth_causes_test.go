package main

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestGrowthServerCheckpointSettings: with the server's max_wal_size given
// (fixtures/growth/generate.sh sets 4MB on 1 MB segments), every night's
// checkpoint causes equal those of one export of the whole archive given
// the same, day by day. Without it, 3 days of 42 differ (TestGrowthFixture:
// a night with too little history to show the WAL distance calls
// "requested" what the whole export calls "wal"; the server's log,
// ref/checkpoints-log.txt, says wal), so this test fails if the flag does
// nothing.
func TestGrowthServerCheckpointSettings(t *testing.T) {
	fx := growthFixture(t)
	settings := []string{"--current-max-wal-size", "4MB"}
	nightly := filepath.Join(t.TempDir(), "nightly")
	for _, files := range nightFiles(t, fx) {
		appendNight(t, nightly, files, settings...)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	appendNight(t, whole, []string{filepath.Join(fx, "archive")}, settings...)
	n := growthJSON(t, "--dataset", nightly)
	w := growthJSON(t, "--dataset", whole)
	if len(n.Days) != len(w.Days) || len(n.Days) < 42 {
		t.Fatalf("%d days nightly, %d whole", len(n.Days), len(w.Days))
	}
	checkpoints, wal := 0, 0
	for i, d := range n.Days {
		if !reflect.DeepEqual(d.Checkpoints, w.Days[i].Checkpoints) {
			t.Errorf("%s: causes nightly %v, whole %v", d.Day, d.Checkpoints, w.Days[i].Checkpoints)
		}
		for cause, k := range d.Checkpoints {
			checkpoints += k
			if cause == "wal" {
				wal += k
			}
		}
	}
	t.Logf("%d checkpoints, %d of them wal, equal night by night and whole", checkpoints, wal)
	if wal == 0 {
		t.Errorf("no checkpoint named wal (the server's log names 11)")
	}
}
