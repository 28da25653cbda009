package stats

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// SegmentVolume is the WAL of the records that start in one segment file.
type SegmentVolume struct {
	Name  string // the segment file's name
	TLI   xlog.TimeLineID
	Segno uint64
	First xlog.LSN // the first record starting in it
	Last  xlog.LSN // the last one
	End   xlog.LSN // where the last one ends
	Volume
}

// SegmentCounter counts the records of each segment file. A stream read in
// spans takes a counter per span, merged in WAL order.
type SegmentCounter struct {
	Segments map[string]*SegmentVolume // by name
	// the segment of the last record (a name and a map lookup per record
	// were a third of the breakdown)
	cur *SegmentVolume
	key [2]uint64
}

// NewSegmentCounter returns an empty counter.
func NewSegmentCounter() *SegmentCounter {
	return &SegmentCounter{Segments: map[string]*SegmentVolume{}}
}

// Add counts one record holding images full-page images and returns its
// segment's volume.
func (c *SegmentCounter) Add(rec *decode.Record, images uint64) *SegmentVolume {
	segno := uint64(rec.LSN) / uint64(rec.SegSize)
	if c.cur == nil || c.key != [2]uint64{uint64(rec.TLI), segno} {
		c.key = [2]uint64{uint64(rec.TLI), segno}
		name := xlog.NewSegmentName(rec.TLI, segno, rec.SegSize).String()
		c.cur = c.Segments[name]
		if c.cur == nil {
			c.cur = &SegmentVolume{Name: name, TLI: rec.TLI, Segno: segno, First: rec.LSN}
			c.Segments[name] = c.cur
		}
	}
	s := c.cur
	s.Last, s.End = rec.LSN, rec.EndLSN
	s.add(rec, images)
	return s
}

// Merge adds p, the span of the stream that follows what c holds. It takes
// over the volumes of the segments c does not hold.
func (c *SegmentCounter) Merge(p *SegmentCounter) {
	for name, ps := range p.Segments {
		s := c.Segments[name]
		if s == nil {
			c.Segments[name] = ps
			continue
		}
		s.Last, s.End = ps.Last, ps.End
		s.plus(ps.Volume)
	}
	c.cur = nil
}
