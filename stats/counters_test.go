package stats

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// counters are the analyze counters the breakdown and the export share.
type counters struct {
	cycles *CycleCounter
	xacts  *XactCounter
	segs   *SegmentCounter
	ended  []XidVolume
}

func newCounters(cycles []CycleInfo, end xlog.LSN, openEnd, keepTops bool) *counters {
	c := &counters{cycles: NewCycleCounter(cycles, end, openEnd), segs: NewSegmentCounter()}
	c.xacts = NewXactCounter(func(x *XidVolume) { c.ended = append(c.ended, *x) })
	c.xacts.KeepTops = keepTops
	return c
}

func (c *counters) add(d *decode.Record) {
	var images uint64
	for i := range d.Blocks {
		if d.Blocks[i].HasImage {
			images++
		}
	}
	end, isEnd := rmgr.XactEnd(d)
	var endp *rmgr.XactEndInfo
	if isEnd {
		endp = &end
	}
	c.xacts.Add(d, images, endp)
	c.cycles.Add(d, images)
	c.segs.Add(d, images)
}

// results renders what the counters found, for comparison.
func (c *counters) results(end xlog.LSN) (cycles []Cycle, ended, open []XidVolume, segs []SegmentVolume) {
	for _, cy := range c.cycles.Finish(end) {
		cycles = append(cycles, *cy)
	}
	for _, x := range c.xacts.Open() {
		open = append(open, *x)
	}
	for _, xs := range [][]XidVolume{open, c.ended} {
		for i := range xs {
			xs[i].last = 0 // (the timeline taken from it is compared)
		}
	}
	for _, s := range c.segs.Segments {
		segs = append(segs, *s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Name < segs[j].Name })
	return cycles, c.ended, open, segs
}

// partBytes is the WAL of a part in the tests of parts.
const partBytes = 256 << 10

// TestCountersPartsEqualSequential: the cycle, transaction and segment
// counters fed the stream in parts of 256 kB each, merged in WAL
// order, find what one counter fed the whole stream finds, whether the
// last cycle's end is known up front (the breakdown) or given at the end
// (the export); the transactions end in the same order.
func TestCountersPartsEqualSequential(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			var finder RedoFinder
			start, end := waltest.ReadSet(t, dir, finder.Add)
			cycles := finder.Cycles(start)
			for _, keepTops := range []bool{false, true} {
				seq := newCounters(cycles, end, false, keepTops)
				root := newCounters(cycles, 0, true, keepTops)
				var part *counters
				var cut uint64
				merge := func() {
					if part != nil {
						root.cycles.Merge(part.cycles)
						root.xacts.Merge(part.xacts)
						root.segs.Merge(part.segs)
					}
				}
				waltest.ReadSet(t, dir, func(d *decode.Record) {
					seq.add(d)
					if c := uint64(d.LSN) / partBytes; part == nil || c != cut {
						merge()
						cut = c
						part = &counters{cycles: root.cycles.NewPart(), xacts: root.xacts.NewPart(), segs: NewSegmentCounter()}
					}
					part.add(d)
				})
				merge()
				sc, se, so, ss := seq.results(end)
				pc, pe, po, ps := root.results(end)
				for _, cmp := range []struct {
					name     string
					one, got any
				}{{"cycles", sc, pc}, {"ended transactions", se, pe}, {"open transactions", so, po}, {"segments", ss, ps}} {
					if !reflect.DeepEqual(cmp.one, cmp.got) {
						t.Errorf("keepTops %v: %s in parts differ from one counter's:\n%s", keepTops, cmp.name, firstDiff(cmp.one, cmp.got))
					}
				}
				if len(sc) < 2 || len(se) < 10 || len(ss) == 0 {
					t.Errorf("%d cycles, %d transactions ended, %d segments", len(sc), len(se), len(ss))
				}
			}
		})
	}
}

// firstDiff describes the first element where two slices differ.
func firstDiff(a, b any) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := 0; i < min(va.Len(), vb.Len()); i++ {
		if !reflect.DeepEqual(va.Index(i).Interface(), vb.Index(i).Interface()) {
			return fmt.Sprintf("[%d] one counter %+v\n    parts %+v", i, va.Index(i).Interface(), vb.Index(i).Interface())
		}
	}
	return fmt.Sprintf("one counter %d, parts %d", va.Len(), vb.Len())
}

// TestRedoFinderAppend: finders of consecutive parts, appended in order,
// give the cycles (with the wal_level of the last PARAMETER_CHANGE before
// each checkpoint) one finder gives.
func TestRedoFinderAppend(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			var one, all RedoFinder
			var part *RedoFinder
			var cut uint64
			start, _ := waltest.ReadSet(t, dir, func(d *decode.Record) {
				one.Add(d)
				if c := uint64(d.LSN) / partBytes; part == nil || c != cut {
					if part != nil {
						all.Append(part)
					}
					part, cut = &RedoFinder{}, c
				}
				part.Add(d)
			})
			all.Append(part)
			want, got := one.Cycles(start), all.Cycles(start)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("in parts:\n%s", firstDiff(want, got))
			}
			if len(got) < 2 || got[0].Redo != start {
				t.Fatalf("cycles %+v", got)
			}
		})
	}
}
