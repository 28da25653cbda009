package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// defaultChangeMemory is Config.ChangeMemoryBytes' default.
// On a DELETE of 10^6 rows (scripts/bench-rows-memory.sh), 1, 4 and 16 MiB
// took the same time (within noise); peak RSS 110, 118-127 and 148-150 MB.
const defaultChangeMemory = 4 << 20

// changeLog keeps the watched changes, encoded, in WAL order: in memory up
// to a budget, then appended to a file of ours (the whole buffer at a
// time), so that a transaction changing 10^8 rows costs disk, not memory.
// A spilled record cannot be taken back: what undoes changes (a
// subtransaction's abort, a super-delete, a truncation of a file the
// transaction wrote) is kept aside, small, and applied when the changes are
// read back (ChangeList).
//
// A record is framed as u32 length, payload, u32 length (little endian),
// so that it reads forward and backward without an index.
type changeLog struct {
	budget  int64
	dir     string
	buf     []byte // records not in the file (after it)
	f       *os.File
	written int64 // bytes in f
	records int
	err     error // the first write error, given when the changes are read

	// what takes changes back, applied on reading: the seqs of
	// speculative insertions super-deleted, and file truncations (a
	// change of the file at or beyond the new end, made before, is gone)
	killed map[int]bool
	truncs []truncation
	// spec: the unconfirmed speculative insertions (INSERT ... ON
	// CONFLICT) by where their tuple is, to find the one a super-delete
	// takes back; confirmed ones leave (XLOG_HEAP_CONFIRM)
	spec map[specKey]int
}

type truncation struct {
	seq    int // changes with a seq up to this one were made before it
	rel    decode.RelFileLocator
	blocks uint32
}

type specKey struct {
	xid xlog.XID
	rel decode.RelFileLocator
	blk uint32
	off uint16
}

func newChangeLog(budget int64, dir string) *changeLog {
	if budget <= 0 {
		budget = defaultChangeMemory
	}
	return &changeLog{budget: budget, dir: dir, killed: map[int]bool{}, spec: map[specKey]int{}}
}

// Change flags in a record.
const (
	chHOT = 1 << iota
	chOldKnown
	chNewKnown
	chOldFromImage
	chLogged
	chNewPartial
	chOldKeyOnly
	chLogical
)

// fixed part of a record's payload: seq u64, lsn u64, xid u32, op u8,
// flags u8, rel 3*u32, old block u32 and offset u16, new block u32 and
// offset u16, db u32, number of relids u32
const changeFixed = 8 + 8 + 4 + 1 + 1 + 12 + 4 + 2 + 4 + 2 + 4 + 4

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.LittleEndian.AppendUint32(dst, ^uint32(0))
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// add appends c to the log.
func (l *changeLog) add(c *Change) {
	if l.err != nil {
		return
	}
	start := len(l.buf)
	l.buf = append(l.buf, 0, 0, 0, 0) // the length, set below
	le := binary.LittleEndian
	b := l.buf
	b = le.AppendUint64(b, uint64(c.seq))
	b = le.AppendUint64(b, uint64(c.LSN))
	b = le.AppendUint32(b, uint32(c.XID))
	var fl uint8
	for _, f := range [...]struct {
		on  bool
		bit uint8
	}{{c.HOT, chHOT}, {c.OldKnown, chOldKnown}, {c.NewKnown, chNewKnown}, {c.OldFromImage, chOldFromImage}, {c.Logged != nil, chLogged}} {
		if f.on {
			fl |= f.bit
		}
	}
	b = append(b, uint8(c.Op), fl)
	b = le.AppendUint32(b, c.Rel.SpcOID)
	b = le.AppendUint32(b, c.Rel.DBOID)
	b = le.AppendUint32(b, c.Rel.RelNumber)
	b = le.AppendUint32(b, c.OldBlock)
	b = le.AppendUint16(b, c.OldOffset)
	b = le.AppendUint32(b, c.NewBlock)
	b = le.AppendUint16(b, c.NewOffset)
	b = le.AppendUint32(b, c.DB)
	b = le.AppendUint32(b, uint32(len(c.RelIDs)))
	for _, id := range c.RelIDs {
		b = le.AppendUint32(b, id)
	}
	b = appendBytes(b, c.Old)
	b = appendBytes(b, c.New)
	if g := c.Logged; g != nil {
		var lf uint8
		if g.NewPartial {
			lf |= chNewPartial
		}
		if g.OldKeyOnly {
			lf |= chOldKeyOnly
		}
		if g.Logical {
			lf |= chLogical
		}
		b = append(b, lf)
		b = le.AppendUint16(b, g.NewPrefix)
		b = le.AppendUint16(b, g.NewSuffix)
		b = appendBytes(b, g.New)
		b = appendBytes(b, g.NewMiddle)
		b = appendBytes(b, g.newHeader)
		b = appendBytes(b, g.Old)
	}
	n := uint32(len(b) - start - 4)
	le.PutUint32(b[start:], n)
	l.buf = le.AppendUint32(b, n)
	l.records++
	if int64(len(l.buf)) >= l.budget {
		l.spill()
	}
}

// spill appends the buffer to the file.
func (l *changeLog) spill() {
	if l.f == nil {
		f, err := os.CreateTemp(l.dir, "walscope-replay-*.changes")
		if err != nil {
			l.err = fmt.Errorf("spilling the watched changes: %w", err)
			return
		}
		l.f = f
	}
	if _, err := l.f.Write(l.buf); err != nil {
		l.err = fmt.Errorf("spilling the watched changes to %s: %w", l.f.Name(), err)
		return
	}
	l.written += int64(len(l.buf))
	l.buf = l.buf[:0]
}

// close removes the file.
func (l *changeLog) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	name := l.f.Name()
	err := l.f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	l.f = nil
	return err
}

var errChangeRecord = errors.New("damaged record in the watched changes' file")

type payloadReader struct {
	p   []byte
	bad bool
}

func (r *payloadReader) next(n int) []byte {
	if r.bad || n < 0 || n > len(r.p) {
		r.bad = true
		return make([]byte, max(n, 0))
	}
	v := r.p[:n:n]
	r.p = r.p[n:]
	return v
}

func (r *payloadReader) bytes() []byte {
	n := binary.LittleEndian.Uint32(r.next(4))
	if n == ^uint32(0) {
		return nil
	}
	return r.next(int(n))
}

// decodeChange decodes a record's payload (its own copy: the Change keeps
// slices of it).
func decodeChange(payload []byte) (*Change, error) {
	le := binary.LittleEndian
	r := &payloadReader{p: append([]byte(nil), payload...)}
	h := r.next(changeFixed)
	if r.bad {
		return nil, errChangeRecord
	}
	c := &Change{seq: int(le.Uint64(h)), LSN: xlog.LSN(le.Uint64(h[8:])), XID: xlog.XID(le.Uint32(h[16:])), Op: ChangeOp(h[20])}
	fl := h[21]
	c.HOT, c.OldKnown, c.NewKnown, c.OldFromImage = fl&chHOT != 0, fl&chOldKnown != 0, fl&chNewKnown != 0, fl&chOldFromImage != 0
	c.Rel = decode.RelFileLocator{SpcOID: le.Uint32(h[22:]), DBOID: le.Uint32(h[26:]), RelNumber: le.Uint32(h[30:])}
	c.OldBlock, c.OldOffset = le.Uint32(h[34:]), le.Uint16(h[38:])
	c.NewBlock, c.NewOffset = le.Uint32(h[40:]), le.Uint16(h[44:])
	c.DB = le.Uint32(h[46:])
	if n := int(le.Uint32(h[50:])); n > 0 {
		ids := r.next(4 * n)
		for i := 0; i < n && !r.bad; i++ {
			c.RelIDs = append(c.RelIDs, le.Uint32(ids[4*i:]))
		}
	}
	c.Old = r.bytes()
	c.New = r.bytes()
	if fl&chLogged != 0 {
		g := &Logged{}
		lf := r.next(5)
		g.NewPartial, g.OldKeyOnly, g.Logical = lf[0]&chNewPartial != 0, lf[0]&chOldKeyOnly != 0, lf[0]&chLogical != 0
		g.NewPrefix, g.NewSuffix = le.Uint16(lf[1:]), le.Uint16(lf[3:])
		g.New = r.bytes()
		g.NewMiddle = r.bytes()
		g.newHeader = r.bytes()
		g.Old = r.bytes()
		c.Logged = g
	}
	if r.bad || len(r.p) != 0 {
		return nil, errChangeRecord
	}
	return c, nil
}

// forward yields the records' payloads in the order they were added.
func (l *changeLog) forward(yield func([]byte) bool) error {
	le := binary.LittleEndian
	if l.written > 0 {
		br := bufio.NewReaderSize(io.NewSectionReader(l.f, 0, l.written), 1<<20)
		var head [4]byte
		var p []byte
		for off := int64(0); off < l.written; {
			if _, err := io.ReadFull(br, head[:]); err != nil {
				return fmt.Errorf("reading %s at %d: %w", l.f.Name(), off, err)
			}
			n := int(le.Uint32(head[:]))
			if int64(n) > l.written-off-8 {
				return fmt.Errorf("%s at %d: %w", l.f.Name(), off, errChangeRecord)
			}
			if cap(p) < n+4 {
				p = make([]byte, n+4)
			}
			p = p[:n+4]
			if _, err := io.ReadFull(br, p); err != nil {
				return fmt.Errorf("reading %s at %d: %w", l.f.Name(), off, err)
			}
			if !yield(p[:n]) {
				return nil
			}
			off += int64(n) + 8
		}
	}
	for b := l.buf; len(b) > 0; {
		n := int(le.Uint32(b))
		if n+8 > len(b) {
			return errChangeRecord
		}
		if !yield(b[4 : 4+n]) {
			return nil
		}
		b = b[n+8:]
	}
	return nil
}

// backward yields the records' payloads in reverse order, reading the file
// back in chunks.
func (l *changeLog) backward(yield func([]byte) bool) error {
	le := binary.LittleEndian
	for end := len(l.buf); end > 0; {
		if end < 8 {
			return errChangeRecord
		}
		n := int(le.Uint32(l.buf[end-4:]))
		start := end - 8 - n
		if start < 0 {
			return errChangeRecord
		}
		if !yield(l.buf[start+4 : end-4]) {
			return nil
		}
		end = start
	}
	const chunk = 1 << 20
	var win []byte
	winStart := l.written // win holds the file's bytes [winStart, winStart+len(win))
	load := func(lo, hi int64) error {
		if int64(cap(win)) < hi-lo {
			win = make([]byte, hi-lo)
		}
		win = win[:hi-lo]
		if _, err := l.f.ReadAt(win, lo); err != nil {
			return fmt.Errorf("reading %s at %d: %w", l.f.Name(), lo, err)
		}
		winStart = lo
		return nil
	}
	for end := l.written; end > 0; {
		if end-winStart < 4 {
			if err := load(max(0, end-chunk), end); err != nil {
				return err
			}
		}
		n := int64(le.Uint32(win[end-4-winStart:]))
		start := end - 8 - n
		if start < 0 {
			return fmt.Errorf("%s at %d: %w", l.f.Name(), end, errChangeRecord)
		}
		if start < winStart {
			if err := load(max(0, min(start, end-chunk)), end); err != nil {
				return err
			}
		}
		if !yield(win[start+4-winStart : end-4-winStart]) {
			return nil
		}
		end = start
	}
	return nil
}

// ChangeList is the changes of the watched transaction that committed
// (Replay.WatchedChanges), read back one at a time from where the replay
// keeps them: in memory up to Config.ChangeMemoryBytes, beyond in a file of
// ours in Config.TempDir. The list stays readable, as often as needed,
// until the replay is closed.
type ChangeList struct {
	l    *changeLog
	keep map[xlog.XID]bool // the transaction and the subtransactions that committed with it
	cuts bool              // WithCuts
}

// WithCuts is the list with the truncations of files the transaction made
// itself given as they happened: the changes a truncation cut kept, and
// the truncation's ChangeCut changes (the pages cut, as they were) where
// it was. Without it the changes cut are left out and no ChangeCut given.
func (cl *ChangeList) WithCuts() *ChangeList {
	if cl == nil {
		return nil
	}
	c := *cl
	c.cuts = true
	return &c
}

// kept says whether a change read back is one: of the transaction or a
// subtransaction that committed with it, not taken back since.
func (cl *ChangeList) kept(c *Change) bool {
	if !cl.keep[c.XID] || cl.l.killed[c.seq] {
		return false
	}
	if c.Op == ChangeCut {
		return cl.cuts
	}
	if !cl.cuts && (c.Op == ChangeInsert || c.Op == ChangeUpdate) {
		for _, t := range cl.l.truncs {
			if c.seq <= t.seq && c.Rel == t.rel && c.NewBlock >= t.blocks {
				return false
			}
		}
	}
	return true
}

func (cl *ChangeList) read(dir func(*changeLog, func([]byte) bool) error) iter.Seq2[*Change, error] {
	return func(yield func(*Change, error) bool) {
		if cl == nil {
			return
		}
		if cl.l.err != nil {
			yield(nil, cl.l.err)
			return
		}
		var derr error
		stopped := false
		err := dir(cl.l, func(p []byte) bool {
			c, err := decodeChange(p)
			if err != nil {
				derr = err
				return false
			}
			if !cl.kept(c) {
				return true
			}
			if !yield(c, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// All yields the changes in WAL order (each a Change of its own).
func (cl *ChangeList) All() iter.Seq2[*Change, error] { return cl.read((*changeLog).forward) }

// Backward yields the changes in reverse WAL order.
func (cl *ChangeList) Backward() iter.Seq2[*Change, error] { return cl.read((*changeLog).backward) }

// WatchedChanges returns the rows Config.WatchXID changed, to be read in
// WAL order (ChangeList.All) or backward: the changes of its heap records
// and of its subtransactions' that committed with it (its commit record's
// list); the changes of subtransactions that were rolled back are not
// changes. nil without the transaction's commit read.
func (r *Replay) WatchedChanges() *ChangeList {
	e, _, ok := r.WatchedEnd()
	if !ok || !e.Commit || r.changes == nil {
		return nil
	}
	keep := map[xlog.XID]bool{r.cfg.WatchXID: true}
	for _, s := range e.Subxacts {
		keep[s] = true
	}
	return &ChangeList{l: r.changes, keep: keep}
}

// ChangeBytes is how many bytes the watched changes take, encoded, and how
// many of them were written to the replay's file (Config.ChangeMemoryBytes).
func (r *Replay) ChangeBytes() (total, spilled int64) {
	if r.changes == nil {
		return 0, 0
	}
	return r.changes.written + int64(len(r.changes.buf)), r.changes.written
}
