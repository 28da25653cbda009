package verify

import "github.com/walscope/walscope/xlog"

// Layout lays records out as PostgreSQL's XLogInsert does, for another
// XLOG_BLCKSZ or other record lengths than the stream has: each page starts
// with a 24-byte header (40 bytes on a segment's first page), a record that
// does not fit continues after the next page's header, the next record starts
// at the next MAXALIGNed position, and XLOG SWITCH ends its segment
// (CopyXLogRecordToWAL and ReserveXLogInsertLocation in xlog.c).
//
// It also models the bytes commits make the server write: with
// synchronous_commit = on each commit flushes the WAL through its end, and a
// flush writes whole pages, from the page holding the previous flush point to
// the page holding the commit's end, so a partly filled page is written again
// at every commit.
type Layout struct {
	PageSize, SegSize uint64
	start, pos        uint64
	flushed           uint64 // end of the last flush
	flushWrites       uint64 // pages written by flushes
}

// NewLayout starts a layout at the stream position start (a record start as
// the stream has it; its page offset is kept).
func NewLayout(pageSize, segSize uint32, start xlog.LSN) *Layout {
	l := &Layout{PageSize: uint64(pageSize), SegSize: uint64(segSize), start: uint64(start), pos: uint64(start), flushed: uint64(start)}
	return l
}

func (l *Layout) header(p uint64) uint64 {
	if p%l.SegSize == 0 {
		return xlog.LongPageHeaderSize
	}
	return xlog.ShortPageHeaderSize
}

// Add lays out a record of totLen bytes and returns where it starts and
// ends (the end not aligned). switchSeg marks an XLOG SWITCH; flush a commit
// that flushes through its end.
func (l *Layout) Add(totLen uint32, switchSeg, flush bool) (start, end xlog.LSN) {
	ps := l.PageSize
	if l.pos%ps == 0 {
		l.pos += l.header(l.pos)
	}
	s := l.pos
	rest := uint64(totLen)
	for {
		room := ps - l.pos%ps
		take := min(room, rest)
		l.pos += take
		rest -= take
		if rest == 0 {
			break
		}
		l.pos += l.header(l.pos)
	}
	e := l.pos
	l.pos = (l.pos + 7) &^ 7
	if switchSeg && l.pos%l.SegSize != 0 {
		l.pos += l.SegSize - l.pos%l.SegSize
	}
	if flush && e > l.flushed {
		first := l.flushed / ps
		last := (e - 1) / ps
		l.flushWrites += last - first + 1
		l.flushed = e
	}
	return xlog.LSN(s), xlog.LSN(e)
}

// WALBytes is the LSN distance laid out so far.
func (l *Layout) WALBytes() uint64 { return l.pos - l.start }

// FlushWriteBytes is what the modelled flushes wrote.
func (l *Layout) FlushWriteBytes() uint64 { return l.flushWrites * l.PageSize }

// ResetCounts starts counting WAL and flush writes afresh at the current
// position (the end of a warm-up), the position itself kept.
func (l *Layout) ResetCounts() { l.start, l.flushWrites = l.pos, 0 }

// Pos is the next insert position.
func (l *Layout) Pos() xlog.LSN { return xlog.LSN(l.pos) }

// Restart moves the insert position to the start of the page holding lsn:
// after a crash lost the end of a record, the server writes again there
// (XLOG OVERWRITE_CONTRECORD; xlog.Record.Aborted tells the reader met one).
func (l *Layout) Restart(lsn xlog.LSN) {
	p := uint64(lsn) - uint64(lsn)%l.PageSize
	l.pos = p
	l.flushed = min(l.flushed, p)
}
