package export

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// TestGrowthSummaryCap: a day of more than GrowthMaxRelations relations
// keeps those of at least GrowthRelationShare of the day's bytes (at most
// GrowthMaxRelations), folds the rest into one row per rmgr and hour, and
// every hour's relation rows still add up to its rmgr rows; a day of few
// relations keeps them all, however small; pending cells take the carried
// last time's hour.
func TestGrowthSummaryCap(t *testing.T) {
	day1 := time.Date(2026, 9, 7, 8, 30, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	e := &Exporter{cfg: Config{LastTime: day1.Add(-3 * time.Hour)}}
	heap, btree := xlog.RmgrID(10), xlog.RmgrID(11)
	add := func(t time.Time, rm xlog.RmgrID, rel uint32, bytes uint64) {
		k := growthKey{hour: unixHour(t), rmgr: rm, hasRel: true, rel: decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: rel}}
		e.growth.cells.at(k).Add(&GrowthCounts{Records: 1, Bytes: bytes})
	}
	// day 1: 700 relations: 10 big ones, 690 of 10 bytes each (under 0.1%)
	for r := range uint32(10) {
		add(day1, heap, 100+r, 100000)
		add(day1.Add(time.Hour), btree, 100+r, 50000)
	}
	for r := range uint32(690) {
		add(day1, heap, 1000+r, 10)
	}
	// day 2: 3 relations, one tiny
	add(day2, heap, 100, 100000)
	add(day2, heap, 101, 100000)
	add(day2, heap, 102, 1)
	// a pending cell: the carried time's hour
	e.growth.cells.at(growthKey{pending: true, rmgr: heap}).Add(&GrowthCounts{Records: 2, Bytes: 7})
	g := e.growthSummary()
	if len(g.Days) != 2 || g.Days[0] != (GrowthDay{"2026-09-07", 690}) || g.Days[1] != (GrowthDay{"2026-09-08", 0}) {
		t.Fatalf("days %+v", g.Days)
	}
	if g.Hours[0].Hour != "2026-09-07T05" || len(g.Hours[0].Rmgr) != 1 || g.Hours[0].Rmgr[0][2] != 7 {
		t.Errorf("pending hour %+v", g.Hours[0])
	}
	kept := map[string]int{}
	for _, h := range g.Hours {
		var rm, rel int64
		for _, r := range h.Rmgr {
			rm += r[2]
		}
		for _, r := range h.Rel {
			rel += r[3]
			if r[0] >= 0 {
				kept[h.Hour]++
			} else if h.Hour != "2026-09-07T08" || r[3] != 6900 || r[2] != 690 {
				t.Errorf("%s: folded row %v", h.Hour, r)
			}
		}
		if h.Hour != "2026-09-07T05" && rm != rel {
			t.Errorf("%s: rmgr rows %d bytes, relation rows %d", h.Hour, rm, rel)
		}
	}
	if kept["2026-09-07T08"] != 10 || kept["2026-09-07T09"] != 10 || kept["2026-09-08T08"] != 3 {
		t.Errorf("kept %v", kept)
	}
	// A batch without any time: its records' hour is unknown, as their
	// day partition is.
	u := &Exporter{}
	u.growth.cells.at(growthKey{pending: true, rmgr: heap}).Add(&GrowthCounts{Records: 1, Bytes: 50})
	if ug := u.growthSummary(); len(ug.Hours) != 1 || ug.Hours[0].Hour != UnknownHour || ug.Hours[0].Day() != UnknownDay || ug.Days[0].Day != UnknownDay {
		t.Errorf("a batch without time: %+v", ug.Hours)
	}
	// The manifest round trip.
	b := Batch{ID: 3, Walscope: "test", Start: "0/1000000", End: "0/2000000", EndTimeline: 1}
	b.Growth, _ = json.Marshal(g)
	pb, err := ParseBatch(b.Encode())
	if err != nil {
		t.Fatal(err)
	}
	g2, err := pb.ParseGrowth()
	if err != nil || len(g2.Hours) != len(g.Hours) || len(g2.Relations) != len(g.Relations) {
		t.Fatalf("round trip: %v", err)
	}
	pb.Growth = nil
	if _, err := pb.ParseGrowth(); !errors.Is(err, ErrNoGrowth) {
		t.Errorf("no aggregate: %v", err)
	}
	pb.Growth = json.RawMessage(`{"growth_version": 1, "rmgrs": [], "hours": [{"hour": "2026-09-07T08", "rmgr": [[3, 1, 1, 0, 0, 0]]}]}`)
	if _, err := pb.ParseGrowth(); !errors.Is(err, ErrManifest) {
		t.Errorf("bad rmgr index: %v", err)
	}
}

// FuzzParseGrowth: any manifest bytes parse or fail with an error, and an
// aggregate that parses indexes its dictionaries only within bounds.
func FuzzParseGrowth(f *testing.F) {
	f.Add([]byte(`{"growth_version": 1, "rmgrs": ["Heap"], "relations": [{"spc": 1, "db": 2, "relfilenode": 3}], "hours": [{"hour": "2026-09-07T08", "rmgr": [[0, 1, 2, 0, 0, 0]], "rel": [[0, 0, 1, 2, 0, 0, 0], [-1, 0, 1, 1, 0, 0, 0]]}]}`))
	f.Add([]byte(`{"growth_version": 2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := Batch{ID: 1, Growth: data}
		g, err := b.ParseGrowth()
		if err != nil {
			return
		}
		for _, h := range g.Hours {
			for _, r := range h.Rmgr {
				_ = g.Rmgrs[r[0]]
			}
			for _, r := range h.Rel {
				if r[0] >= 0 {
					_ = g.Relations[r[0]]
				}
				_ = g.Rmgrs[r[1]]
			}
		}
	})
}
