package stats

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Counter is one row's sums, as XLogRecStats (src/include/access/xlogstats.h).
type Counter struct {
	Count  uint64
	RecLen uint64 // xl_tot_len minus image bytes, summed
	FPILen uint64 // stored image bytes (bimg_len), summed
}

// Total is RecLen + FPILen, the WAL the records occupy (without alignment).
func (c Counter) Total() uint64 { return c.RecLen + c.FPILen }

func (c *Counter) add(rec, fpi uint32) {
	c.Count++
	c.RecLen += uint64(rec)
	c.FPILen += uint64(fpi)
}

// Stats is pg_waldump --stats's accumulator (XLogStats and
// XLogRecStoreStats in src/backend/access/transam/xlogstats.c). Records are
// added in WAL order; Merge combines the stats of consecutive ranges.
//
// The per-record-type rows of a resource manager are allocated when its first
// record is counted: a Stats is then about 8 KB, not 104 KB, which a reading
// cut into many spans (one Stats each: short, switched segments) paid in
// page faults and clearing, and Merge walks only the managers that occurred
// (issue 16). A Stats shares those rows with its copies: copy one only with
// Merge.
type Stats struct {
	Version xlog.Version
	Start   xlog.LSN // LSN of the first record counted
	End     xlog.LSN // end of the last record counted (EndRecPtr)
	Count   uint64
	Rmgr    [256]Counter
	// by rmgr and stats bucket (info >> 4; Transaction drops HAS_INFO); nil
	// for a manager with no record
	record [256]*[16]Counter
}

// buckets returns the per-record-type rows of manager id, allocating them.
func (s *Stats) buckets(id xlog.RmgrID) *[16]Counter {
	b := s.record[id]
	if b == nil {
		b = new([16]Counter)
		s.record[id] = b
	}
	return b
}

// Add counts one record.
func (s *Stats) Add(rec *decode.Record) {
	if s.Count == 0 {
		s.Start = rec.LSN
		s.Version = rec.Version
	}
	s.Count++
	s.End = rec.EndLSN
	fpi := rec.FPILen
	recLen := rec.Header.TotLen - fpi
	id := rec.Header.Rmid
	s.Rmgr[id].add(recLen, fpi)
	s.buckets(id)[rmgr.StatsBucket(id, rec.Header.Info)].add(recLen, fpi)
}

// Merge adds o, the stats of a later range, to s.
func (s *Stats) Merge(o *Stats) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 {
		s.Start, s.Version = o.Start, o.Version
	}
	s.End = o.End
	s.Count += o.Count
	for i := range s.Rmgr {
		if o.Rmgr[i].Count == 0 {
			continue // no record of this manager: its rows are empty
		}
		s.Rmgr[i].Count += o.Rmgr[i].Count
		s.Rmgr[i].RecLen += o.Rmgr[i].RecLen
		s.Rmgr[i].FPILen += o.Rmgr[i].FPILen
		sb, ob := s.buckets(xlog.RmgrID(i)), o.record[i]
		for j := range sb {
			sb[j].Count += ob[j].Count
			sb[j].RecLen += ob[j].RecLen
			sb[j].FPILen += ob[j].FPILen
		}
	}
}

// Reset empties s for counting another range, keeping the per-record-type
// rows it allocated (cleared): a reading that counts span after span in one
// Stats writes to memory already touched.
func (s *Stats) Reset() {
	rows := s.record
	for _, b := range rows {
		if b != nil {
			*b = [16]Counter{}
		}
	}
	*s = Stats{record: rows}
}

// Row is one line of the statistics table.
type Row struct {
	Name       string // "Heap" or "Heap/INSERT"
	Rmgr       string
	RecordType string // empty in the per-rmgr table
	Counter
}

// Rows returns the table's rows in pg_waldump's order
// (XLogDumpDisplayStats): per resource manager, every built-in manager even
// with no record and custom ones only with records; per record type, only the
// buckets that occurred, by rmgr id then bucket.
func (s *Stats) Rows(perRecord bool) []Row {
	var rows []Row
	for id := 0; id < 256; id++ {
		rid := xlog.RmgrID(id)
		if !rid.Valid(s.Version) {
			continue
		}
		name := rmgr.Name(rid)
		if !perRecord {
			if rid > xlog.RmgrMaxBuiltin && s.Rmgr[id].Count == 0 {
				continue
			}
			rows = append(rows, Row{Name: name, Rmgr: name, Counter: s.Rmgr[id]})
			continue
		}
		b := s.record[id]
		if b == nil {
			continue
		}
		for j := 0; j < 16; j++ {
			c := b[j]
			if c.Count == 0 {
				continue
			}
			rt := string(rmgr.AppendRecordType(nil, s.Version, rid, uint8(j<<4)))
			rows = append(rows, Row{Name: name + "/" + rt, Rmgr: name, RecordType: rt, Counter: c})
		}
	}
	return rows
}

// Totals returns the column totals over every valid resource manager.
func (s *Stats) Totals() Counter {
	var t Counter
	for id := 0; id < 256; id++ {
		if !xlog.RmgrID(id).Valid(s.Version) {
			continue
		}
		t.Count += s.Rmgr[id].Count
		t.RecLen += s.Rmgr[id].RecLen
		t.FPILen += s.Rmgr[id].FPILen
	}
	return t
}
