package xlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
)

// readPage makes the page at pagePtr current and returns it, its header
// validated, holding at least reqLen bytes (ReadPageInternal in xlogreader.c).
// The slice is the whole page unless the file ends early.
func (r *Reader) readPage(pagePtr LSN, reqLen int) ([]byte, error) {
	ps := LSN(r.pageSize)
	if r.opts.End != 0 && pagePtr+ps > r.opts.End {
		// pg_waldump's WALDumpReadPage hands out only the bytes before the
		// end pointer, and xlogreader needs more than a short header.
		need := LSN(max(reqLen, ShortPageHeaderSize+1))
		if pagePtr+need > r.opts.End {
			return nil, errEndOfRange
		}
	}
	if r.pageValid && pagePtr == r.pagePtr {
		if len(r.page) < reqLen {
			return nil, r.truncated(pagePtr, len(r.page))
		}
		return r.page, nil
	}
	segno := uint64(pagePtr) / uint64(r.segSize)
	pageOff := int64(uint64(pagePtr) % uint64(r.segSize))
	if r.seg.open && r.seg.segno == segno && r.seg.bad != nil {
		return nil, r.seg.bad
	}
	if !r.seg.open || r.seg.segno != segno {
		if err := r.openSegment(segno); err != nil {
			return nil, err
		}
		if pageOff != 0 {
			// Whenever the reader enters a segment, it validates the first
			// page too, for the long header's identification checks.
			first, err := r.loadPage(0)
			if err == nil && len(first) < LongPageHeaderSize {
				err = r.truncated(pagePtr-LSN(pageOff), len(first))
			}
			if err == nil {
				err = r.validatePage(pagePtr-LSN(pageOff), first)
			}
			if err != nil {
				r.seg.bad = err
				return nil, err
			}
		}
	}
	page, err := r.loadPage(pageOff)
	if err != nil {
		return nil, err
	}
	if len(page) < max(reqLen, ShortPageHeaderSize) {
		return nil, r.truncated(pagePtr, len(page))
	}
	if err := r.validatePage(pagePtr, page); err != nil {
		if pageOff == 0 {
			// The first page identifies the whole file.
			r.seg.bad = err
		}
		return nil, err
	}
	r.pagePtr, r.page, r.pageValid = pagePtr, page, true
	return page, nil
}

// loadPage returns the page at off of the current segment file from the read
// window, reloading the window as needed; it is shorter than a page only where
// the file ends.
func (r *Reader) loadPage(off int64) ([]byte, error) {
	ps := int64(r.pageSize)
	if r.seg.mapped != nil {
		// The whole file is in memory: no window to fill.
		b := r.seg.mapped
		if off >= int64(len(b)) {
			return b[:0:0], nil
		}
		hi := min(off+ps, int64(len(b)))
		return b[off:hi:hi], nil
	}
	if h := r.seg.head; off+ps <= int64(len(h)) {
		return h[off : off+ps : off+ps], nil // read when the file was opened
	}
	if !r.winLoaded || off < r.winStart || off+ps > r.winStart+int64(r.winLen) {
		// The first windows of a file are small and grow to the full
		// window: a switched segment's few KB of WAL cost a few KB of
		// reading, not a whole window (issue 16).
		// (off is page-aligned, and so is every bound here.)
		want := int64(len(r.win))
		r.winStart = off - off%want
		for w := max(firstWindow, ps); w < want; w *= 2 {
			if off < w {
				r.winStart, want = off, w-off // [off, w): windows tile up to the full size
				break
			}
		}
		n, err := r.seg.f.ReadAt(r.win[:want], r.winStart)
		if err != nil && err != io.EOF {
			return nil, &Error{File: r.seg.file.Path, Offset: r.winStart, LSN: LSN(r.seg.segno*uint64(r.segSize)) + LSN(r.winStart),
				RecordLSN: r.lastLSN, Err: fmt.Errorf("%w: %w", ErrTruncated, err),
				Msg: fmt.Sprintf("could not read from file %s, offset %d: %v", r.seg.name, r.winStart, err)}
		}
		r.winLen, r.winLoaded = n, true
		r.pageValid = false
	}
	lo := off - r.winStart
	hi := min(lo+ps, int64(r.winLen))
	if hi < lo {
		hi = lo
	}
	return r.win[lo:hi:hi], nil
}

// openSegment opens segment segno from the first timeline that has it.
func (r *Reader) openSegment(segno uint64) error {
	if r.seg.open {
		r.seg.f.Close()
		r.seg.open, r.seg.head, r.seg.mapped = false, nil, nil // (their buffers went with the file)
	}
	r.winLoaded, r.pageValid = false, false
	var buf [4]TimeLineID
	for _, tli := range candidates(buf[:0], r.plan, segno, r.segSize) {
		name := NewSegmentName(tli, segno, r.segSize)
		files := r.index[name]
		if len(files) == 0 {
			continue
		}
		sf := files[0]
		f, err := r.src.Open(sf)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return &Error{File: sf.Path, LSN: LSN(segno * uint64(r.segSize)), RecordLSN: r.lastLSN,
				Err: fmt.Errorf("%w: %w", ErrOpenFile, err), Msg: fmt.Sprintf("could not open file \"%s\": %v", sf.Path, err)}
		}
		r.seg = segment{open: true, segno: segno, tli: tli, file: sf, f: f, name: name.String(), partial: sf.Partial}
		if m, ok := f.(interface{ Bytes() []byte }); ok {
			r.seg.mapped = m.Bytes()
			return nil
		}
		if h, ok := f.(HeadFile); ok {
			head, whole := h.Head()
			if whole {
				r.seg.mapped = head // nothing more to read
				return nil
			}
			r.seg.head = head
		}
		// The read window holds windowSize bytes of the segment, and never
		// more than the file can fill. Windows are pooled: a fresh buffer
		// costs page faults on every run and every parallel span.
		want := int64(min(r.segSize, windowSize))
		if sf.Size > 0 && sf.Size < want {
			ps := int64(r.pageSize)
			want = (sf.Size + ps - 1) / ps * ps
		}
		if int64(cap(r.win)) < want {
			putWindow(r.win)
			r.win = getWindow(int(want))
		}
		r.win = r.win[:want]
		return nil
	}
	if segno > r.maxSegNo {
		// Past the last file: the end of the WAL available.
		return io.EOF
	}
	name := NewSegmentName(r.readTLI(segno), segno, r.segSize)
	return &Error{File: name.String(), LSN: LSN(segno * uint64(r.segSize)), RecordLSN: r.lastLSN,
		Err: ErrSegmentNotFound, Msg: fmt.Sprintf("could not find file \"%s\": No such file or directory", name)}
}

// validatePage mirrors XLogReaderValidatePageHeader.
func (r *Reader) validatePage(pagePtr LSN, page []byte) error {
	h, ok := ParsePageHeader(page)
	segOff := uint64(pagePtr) % uint64(r.segSize)
	fname := r.seg.name
	where := func() string {
		if r.version >= V17 {
			return fmt.Sprintf("in WAL segment %s, LSN %s, offset %d", fname, pagePtr, segOff)
		}
		return fmt.Sprintf("in log segment %s, offset %d", fname, segOff)
	}
	if !ok {
		return r.truncated(pagePtr, len(page))
	}
	if v, known := VersionFromMagic(h.Magic); !known || v != r.version {
		e := r.failAt(ErrMagic, pagePtr, pagePtr, fmt.Sprintf("invalid magic number %04X %s", h.Magic, where()))
		if h.Magic == 0 && h.Info == 0 && h.PageAddr == 0 {
			e.Err = ErrZeroPage
		}
		return e
	}
	if h.Info&^PageAllFlags != 0 {
		return r.failAt(ErrPageInfo, pagePtr, pagePtr, fmt.Sprintf("invalid info bits %04X %s", uint16(h.Info), where()))
	}
	if h.Long() {
		if h.SystemID != r.sysID {
			return r.failAt(ErrSystemID, pagePtr, pagePtr, fmt.Sprintf(
				"WAL file is from different database system: WAL file database system identifier is %d, pg_control database system identifier is %d",
				h.SystemID, r.sysID))
		}
		if h.SegmentSize != r.segSize {
			return r.failAt(ErrSegmentSize, pagePtr, pagePtr, "WAL file is from different database system: incorrect segment size in page header")
		}
		if h.PageSize != r.pageSize {
			return r.failAt(ErrPageSize, pagePtr, pagePtr, "WAL file is from different database system: incorrect XLOG_BLCKSZ in page header")
		}
		if len(page) < LongPageHeaderSize {
			return r.truncated(pagePtr, len(page))
		}
	} else if segOff == 0 {
		return r.failAt(ErrPageInfo, pagePtr, pagePtr, fmt.Sprintf("invalid info bits %04X %s", uint16(h.Info), where()))
	}
	if h.PageAddr != pagePtr {
		e := r.failAt(ErrPageAddr, pagePtr, pagePtr, fmt.Sprintf("unexpected pageaddr %s %s", h.PageAddr, where()))
		e.Stale = h.PageAddr < pagePtr
		return e
	}
	if pagePtr > r.latestPagePtr {
		if h.TLI < r.latestPageTLI {
			return r.failAt(ErrTimeline, pagePtr, pagePtr, fmt.Sprintf("out-of-sequence timeline ID %d (after %d) %s", h.TLI, r.latestPageTLI, where()))
		}
	}
	r.latestPagePtr = pagePtr
	r.latestPageTLI = h.TLI
	return nil
}

// windowSize is how much of a segment file one read brings in. Small enough
// to stay in the CPU caches between the copy from the page cache and the CRC
// (on a 705 MB archive, stats took 0.30 s with 16 MiB windows and 0.18 s
// with 128 KiB ones; 64 and 512 KiB were no better).
var windowSize = uint32(128 << 10)

// firstWindow is the first read of a segment file; each next read doubles
// up to windowSize, so that a segment that holds little WAL (after
// pg_switch_wal) is read little.
const firstWindow = 16 << 10

// windowPool keeps read windows between readers.
var windowPool sync.Pool

func getWindow(n int) []byte {
	if b, ok := windowPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n)
}

func putWindow(b []byte) {
	if cap(b) > 0 {
		windowPool.Put(&b)
	}
}
