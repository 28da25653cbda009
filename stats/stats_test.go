package stats

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
)

// TestStatsPartsEqualSequential: statistics counted in parts of 256 kB,
// merged in WAL order, equal one Stats fed the whole stream, row for row
// (the per-type rows are allocated as managers occur, and Merge adds only
// the managers a part holds); every other part is the previous one, Reset
// (its rows kept and cleared), as the engine's reused parts are.
func TestStatsPartsEqualSequential(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			var seq, merged Stats
			part := new(Stats)
			cut, parts := uint64(0), 0
			waltest.ReadSet(t, dir, func(d *decode.Record) {
				seq.Add(d)
				if c := uint64(d.LSN) / partBytes; c != cut {
					merged.Merge(part)
					if parts%2 == 0 {
						part.Reset()
					} else {
						part = new(Stats)
					}
					cut = c
					parts++
				}
				part.Add(d)
			})
			merged.Merge(part)
			if parts < 3 || seq.Count == 0 {
				t.Fatalf("%d parts, %d records", parts, seq.Count)
			}
			for _, perRecord := range []bool{false, true} {
				one, got := seq.Rows(perRecord), merged.Rows(perRecord)
				if !reflect.DeepEqual(one, got) {
					t.Errorf("per record %v: rows differ:\n%s", perRecord, firstDiff(one, got))
				}
				if len(one) < 5 {
					t.Errorf("per record %v: %d rows", perRecord, len(one))
				}
			}
			if seq.Totals() != merged.Totals() || seq.Start != merged.Start || seq.End != merged.End || seq.Count != merged.Count || seq.Version != merged.Version {
				t.Errorf("totals %+v %v..%v, merged %+v %v..%v", seq.Totals(), seq.Start, seq.End, merged.Totals(), merged.Start, merged.End)
			}
		})
	}
}
