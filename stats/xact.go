package stats

import (
	"sort"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// XidVolume is the WAL one transaction wrote, subtransactions folded into
// their top-level transaction where the WAL says so, and its end if read.
type XidVolume struct {
	XID    xlog.XID
	Commit bool // false: aborted, or no end seen (then Time is zero)
	Ended  bool
	Time   time.Time
	Volume
	Prepared bool            // ended by COMMIT_PREPARED or ABORT_PREPARED
	EndLSN   xlog.LSN        // the end record
	TLI      xlog.TimeLineID // the timeline of the end record, or of the last record
	Subxacts int             // the subtransactions the end record lists
	last     xlog.LSN        // the last record counted (of a transaction not ended)
}

// XactCounter attributes each record's WAL to its transaction, a
// subtransaction's to its top level where the WAL names it (the top-level
// xid a record carries, from PostgreSQL 14 at wal_level logical; the
// subtransactions an end record lists), and settles a transaction at its
// end record, handing it to the counter's ended function. A stream read in
// spans takes a part per span (NewPart), filled concurrently and merged in
// WAL order: a transaction, its subtransactions and its end may cross the
// cuts, and the merge settles each end as it reaches it.
type XactCounter struct {
	// KeepTops keeps the subtransactions' top levels after the top level
	// ended (TopOf still answers for them); otherwise they are dropped, and
	// memory does not grow with the number of transactions read.
	KeepTops bool
	ended    func(*XidVolume)
	tops     map[xlog.XID]xlog.XID   // subtransaction -> top level
	open     map[xlog.XID]*XidVolume // the root's transactions not ended; a part's every transaction
	part     bool
	ends     []xactEnd // a part's ends, in WAL order, for Merge
	// The transactions open at once are few: a small cache by xid spares
	// most records a lookup in open.
	cache [64]struct {
		xid xlog.XID
		v   *XidVolume
	}
}

// xactEnd is an end record: of a transaction, or (sub) of a subtransaction
// whose top level the WAL named, which ends nothing but folds the
// subtransactions it lists into that top level.
type xactEnd struct {
	xid      xlog.XID
	sub      bool
	lsn      xlog.LSN
	tli      xlog.TimeLineID
	commit   bool
	prepared bool
	time     time.Time
	subs     []xlog.XID
}

// NewXactCounter returns a counter that hands each transaction to ended
// (which may keep it) when its end record is settled, in WAL order.
func NewXactCounter(ended func(*XidVolume)) *XactCounter {
	return &XactCounter{ended: ended, tops: map[xlog.XID]xlog.XID{}, open: map[xlog.XID]*XidVolume{}}
}

// NewPart returns an empty counter for one span of c's stream, to be merged
// into c with Merge.
func (c *XactCounter) NewPart() *XactCounter {
	return &XactCounter{tops: map[xlog.XID]xlog.XID{}, open: map[xlog.XID]*XidVolume{}, part: true}
}

// EndOwner settles a transaction end against tops (subtransaction -> its
// top level, as the WAL named them so far): it returns the top-level
// transaction the ended one belongs to, and whether the end is a
// subtransaction's (an abort of one the WAL named: wal_level logical), which
// ends nothing; the end's own subtransactions are recorded in tops as the
// top level's.
func EndOwner(tops map[xlog.XID]xlog.XID, end *rmgr.XactEndInfo) (top xlog.XID, sub bool) {
	top = end.XID
	if t, ok := tops[end.XID]; ok && t != end.XID {
		top, sub = t, true
	}
	for _, s := range end.Subxacts {
		tops[s] = top
	}
	return top, sub
}

// Add counts one record holding images full-page images; end is the
// record's transaction end (rmgr.XactEnd), nil if it is none. It returns
// the transaction the record is attributed to (0: none) and whether the
// record is the end of a subtransaction, which ends nothing.
func (c *XactCounter) Add(rec *decode.Record, images uint64, end *rmgr.XactEndInfo) (xid xlog.XID, subEnd bool) {
	xid = rec.Header.XID
	if rec.ToplevelXID != 0 && xid != 0 {
		c.tops[xid] = rec.ToplevelXID
	}
	// A subtransaction's abort (ROLLBACK TO SAVEPOINT) whose top level the
	// WAL named ends no transaction: its WAL is the top level's, which goes
	// on.
	if end != nil {
		xid = end.XID
		_, subEnd = EndOwner(c.tops, end)
	}
	if len(c.tops) > 0 {
		if top, ok := c.tops[xid]; ok && top != xid {
			xid = top
		}
	}
	if xid == 0 {
		return 0, subEnd
	}
	v := c.vol(xid)
	v.add(rec, images)
	v.TLI, v.last = rec.TLI, rec.LSN
	if end != nil && (!subEnd || len(end.Subxacts) > 0) {
		e := xactEnd{xid: xid, sub: subEnd, lsn: rec.LSN, tli: rec.TLI, commit: end.Commit, prepared: end.Prepared,
			time: end.Time, subs: end.Subxacts}
		if c.part {
			c.ends = append(c.ends, e)
		} else {
			c.settle(&e)
		}
	}
	return xid, subEnd
}

// vol returns the transaction's open volume, making it if needed.
func (c *XactCounter) vol(xid xlog.XID) *XidVolume {
	ce := &c.cache[xid%xlog.XID(len(c.cache))]
	if v := ce.v; v != nil && ce.xid == xid {
		return v
	}
	v := c.open[xid]
	if v == nil {
		v = &XidVolume{XID: xid}
		c.open[xid] = v
	}
	ce.xid, ce.v = xid, v
	return v
}

// drop removes a transaction from the open ones.
func (c *XactCounter) drop(xid xlog.XID) {
	delete(c.open, xid)
	if ce := &c.cache[xid%xlog.XID(len(c.cache))]; ce.xid == xid {
		ce.v = nil
	}
}

// settle applies an end record to the open transactions.
func (c *XactCounter) settle(e *xactEnd) {
	top, sub := e.xid, e.sub
	if t, ok := c.tops[e.xid]; ok && t != e.xid {
		// the end of a subtransaction whose top level the WAL named
		// before (in an earlier part)
		top, sub = t, true
	}
	if sub {
		// its WAL, and that of its own subtransactions, stays with the top
		// level
		tv := c.open[top]
		if tv == nil {
			tv = &XidVolume{XID: top}
			c.open[top] = tv
		}
		for _, s := range e.subs {
			if sv := c.open[s]; sv != nil && s != top {
				tv.plus(sv.Volume)
				c.drop(s)
			}
			c.tops[s] = top
		}
		return
	}
	v := c.open[e.xid]
	if v == nil {
		v = &XidVolume{XID: e.xid}
	} else {
		c.drop(e.xid)
	}
	for _, s := range e.subs {
		if sv := c.open[s]; sv != nil {
			v.plus(sv.Volume)
			c.drop(s)
		}
		if !c.KeepTops {
			delete(c.tops, s)
		}
	}
	v.Ended, v.Commit, v.Prepared, v.Time = true, e.commit, e.prepared, e.time
	v.EndLSN, v.TLI, v.Subxacts = e.lsn, e.tli, len(e.subs)
	if c.ended != nil {
		c.ended(v)
	}
}

// Merge adds part p, the span of the stream that follows what c holds, and
// settles its ends.
func (c *XactCounter) Merge(p *XactCounter) {
	for k, v := range p.tops {
		c.tops[k] = v
	}
	// The part's WAL of a subtransaction whose top level the WAL named goes
	// to the top level.
	for xid, v := range p.open {
		if top, ok := c.tops[xid]; ok && top != xid {
			xid = top
		}
		o := c.open[xid]
		if o == nil {
			o = &XidVolume{XID: xid}
			c.open[xid] = o
		}
		o.plus(v.Volume)
		if v.last >= o.last {
			o.TLI, o.last = v.TLI, v.last
		}
	}
	for i := range p.ends {
		c.settle(&p.ends[i])
	}
}

// TopOf returns the top-level transaction the WAL named for a
// subtransaction, as far as read.
func (c *XactCounter) TopOf(xid xlog.XID) (xlog.XID, bool) {
	t, ok := c.tops[xid]
	return t, ok
}

// Open returns the transactions whose end was not read, by xid.
func (c *XactCounter) Open() []*XidVolume {
	out := make([]*XidVolume, 0, len(c.open))
	for _, v := range c.open {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].XID < out[j].XID })
	return out
}
