package xlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
)

// Options control a Reader.
type Options struct {
	// Start is where reading begins: the first valid record at or after it is
	// the first one returned (XLogFindNextRecord). Zero means the start of the
	// first segment of the stream.
	Start LSN
	// End, if not zero, stops reading silently before the first record that
	// does not end at or before it, as pg_waldump's -e and ENDSEG do.
	End LSN
	// Timeline selects the files read. With FollowHistory unset, only files of
	// this timeline are read, as pg_waldump does (0 means 1). With
	// FollowHistory set, the timeline's history is followed from the start,
	// switching timelines at the switch points as recovery does; Timeline 0
	// then means the newest timeline present.
	Timeline      TimeLineID
	FollowHistory bool
	// MaxRecordSize bounds xl_tot_len; 0 means MaxRecordSize.
	MaxRecordSize uint32
	// HeadersOnly keeps only the first HeadersOnlyKeep bytes of records that
	// span pages (every header, block header and main data header fits),
	// for consumers that need no payload (statistics, verification): the
	// CRC is still checked over every byte. Record.Raw is then shorter than
	// xl_tot_len for such records.
	HeadersOnly bool
	// SkipCRC checks no record's CRC, for a quick first pass that a
	// checking pass follows (one looking for a few records, which checks
	// those with RecordCRC). Everything else is validated as usual.
	SkipCRC bool
	// StopAt, if not zero, ends reading (io.EOF) at the first record that
	// starts at or after it, wherever that record ends: a span of the stream
	// read by one worker holds exactly the records that start in it.
	StopAt LSN
	// Continues says the reading goes on from another that ended at Start
	// (a later span of a parallel read): the first record's PrevRead is then
	// its xl_prev, as if one reader had read on, not InvalidLSN.
	Continues bool
	// Index, if not nil, is the source's files indexed once for all the
	// readers of one parallel reading (see SegmentIndex); a reader with a
	// Start uses it instead of indexing every file again.
	Index *SegmentIndex
}

// HeadersOnlyKeep is how much of a page-spanning record Options.HeadersOnly
// keeps: more than the largest header area (24 + 33 block headers of 27
// bytes + origin, top-level xid and main data headers = 941 bytes).
const HeadersOnlyKeep = 1024

// Reader reads the records of one WAL stream in order, validating every page
// header and record as PostgreSQL's xlogreader does
// (src/backend/access/transam/xlogreader.c).
//
// Next returns io.EOF when the requested range or the available files end,
// and a *Error for anything else, including the usual ends of written WAL
// (see IsEndOfWAL). Errors are sticky. A Reader is not safe for concurrent use.
type Reader struct {
	src  Source
	opts Options

	// Geometry and identity, from the first segment's long header.
	version  Version
	segSize  uint32
	pageSize uint32
	sysID    uint64

	plan  []Timeline
	index map[SegmentName][]SegmentFile // plain file first, then .partial
	// maxSegNo is the highest segment number present on a timeline of the
	// plan: a missing segment below it is a gap, above it the end of WAL.
	maxSegNo uint64

	// Current segment file and its read window.
	seg       segment
	win       []byte
	winStart  int64
	winLen    int
	winLoaded bool

	// Current validated page.
	pagePtr   LSN
	page      []byte
	pageValid bool

	// xlogreader's latestPagePtr / latestPageTLI, for the timeline check.
	latestPagePtr LSN
	latestPageTLI TimeLineID

	next    LSN // NextRecPtr
	prev    LSN // DecodeRecPtr: last record decoded, InvalidLSN after positioning
	lastLSN LSN // ReadRecPtr: last record returned
	started bool
	aborted LSN // overwrittenRecPtr of the record being returned
	recBuf  []byte
	rec     Record
	err     error
	// resyncFrom is where the next Resync starts after one that returned a
	// file-level error (0: from the failure).
	resyncFrom LSN
}

type segment struct {
	open    bool
	segno   uint64
	tli     TimeLineID
	file    SegmentFile
	f       File
	name    string
	partial bool
	bad     error  // the first page failed validation: the file is unusable
	mapped  []byte // the whole file, when the source maps or holds it
	head    []byte // the file's first bytes, read when it was opened (HeadFile)
}

// NewReader returns a reader over the stream in src. It reads the first
// segment's long page header to learn the version, segment size and page size.
func NewReader(src Source, opts Options) (*Reader, error) {
	r := &Reader{src: src, opts: opts}
	if r.opts.MaxRecordSize == 0 {
		r.opts.MaxRecordSize = MaxRecordSize
	}
	files := src.Segments()
	if len(files) == 0 {
		return nil, ErrNoSegments
	}
	// Choose the target timeline and its history.
	target := opts.Timeline
	if opts.FollowHistory {
		var histories map[TimeLineID]string
		hr, _ := src.(HistoryReader)
		if hr != nil {
			histories = hr.Histories()
		}
		if target == 0 {
			for _, f := range files {
				target = max(target, f.Name.TLI)
			}
			for t := range histories {
				target = max(target, t)
			}
		}
		var hist []HistoryEntry
		if key, ok := histories[target]; ok && target > 1 {
			text, err := hr.ReadHistory(key)
			if err != nil {
				return nil, err
			}
			if hist, err = ParseHistory(text, target); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
		r.plan = TimelinePlan(target, hist)
	} else {
		if target == 0 {
			target = 1
		}
		r.plan = []Timeline{{TLI: target}}
	}
	onPlan := func(t TimeLineID) bool {
		for _, p := range r.plan {
			if p.TLI == t {
				return true
			}
		}
		return false
	}
	// The geometry comes from the first file of the plan; pg_waldump takes
	// the first file it finds in the same way.
	var first *SegmentFile
	for i := range files {
		if onPlan(files[i].Name.TLI) {
			first = &files[i]
			break
		}
	}
	if first == nil {
		return nil, fmt.Errorf("%w on timeline %d", ErrNoSegments, target)
	}
	if err := r.readGeometry(*first); err != nil {
		return nil, err
	}
	shared := false
	if opts.Index != nil {
		r.index, r.maxSegNo, shared = opts.Index.lookup(files, r.segSize, onPlan)
	}
	if !shared {
		r.index = indexByName(files)
		for _, f := range files {
			if onPlan(f.Name.TLI) {
				r.maxSegNo = max(r.maxSegNo, f.Name.SegNo(r.segSize))
			}
		}
	}
	if r.opts.Start == 0 {
		minSeg := ^uint64(0)
		for _, f := range files {
			if onPlan(f.Name.TLI) {
				if s := f.Name.SegNo(r.segSize); s < minSeg && r.isCandidate(f.Name.TLI, s) {
					minSeg = s
				}
			}
		}
		if minSeg == ^uint64(0) {
			minSeg = first.Name.SegNo(r.segSize)
		}
		r.opts.Start = LSN(minSeg * uint64(r.segSize))
	} else if !r.opts.Continues && r.opts.Start >= r.LastSegmentEnd() {
		// A start past every file: pg_waldump fails to open its segment,
		// and so does the reader (it read nothing and called it the end).
		segno := uint64(r.opts.Start) / uint64(r.segSize)
		tli := r.plan[len(r.plan)-1].TLI
		var buf [4]TimeLineID
		if c := candidates(buf[:0], r.plan, segno, r.segSize); len(c) > 0 {
			tli = c[0]
		}
		name := NewSegmentName(tli, segno, r.segSize).String()
		return nil, &Error{File: name, LSN: r.opts.Start, Msg: fmt.Sprintf("could not find file \"%s\": No such file or directory", name),
			Err: ErrSegmentNotFound}
	}
	return r, nil
}

func (r *Reader) isCandidate(tli TimeLineID, segno uint64) bool {
	var buf [4]TimeLineID
	for _, t := range candidates(buf[:0], r.plan, segno, r.segSize) {
		if t == tli {
			return true
		}
	}
	return false
}

// geometry is what a stream's first long page header says.
type geometry struct {
	version           Version
	segSize, pageSize uint32
	sysID             uint64
}

// readGeometry reads the long header of f's first page, or takes what an
// earlier reader sharing Options.Index read there: a reading cut into many
// spans (short, switched segments) opened the first file again for every
// span (issue 16).
func (r *Reader) readGeometry(sf SegmentFile) error {
	x := r.opts.Index
	if x != nil {
		x.mu.Lock()
		g, ok := x.geo, x.geoPath == sf.Path && x.geoPath != ""
		x.mu.Unlock()
		if ok {
			r.version, r.segSize, r.pageSize, r.sysID = g.version, g.segSize, g.pageSize, g.sysID
			return nil
		}
	}
	if err := r.readGeometryFrom(sf); err != nil {
		return err
	}
	if x != nil {
		x.mu.Lock()
		x.geoPath, x.geo = sf.Path, geometry{r.version, r.segSize, r.pageSize, r.sysID}
		x.mu.Unlock()
	}
	return nil
}

// readGeometryFrom reads the long header of f's first page.
func (r *Reader) readGeometryFrom(sf SegmentFile) error {
	var buf [LongPageHeaderSize]byte
	var n int
	var err error
	if hr, ok := r.src.(HeadReader); ok {
		n, err = hr.ReadHead(sf, buf[:])
	} else {
		var f File
		if f, err = r.src.Open(sf); err != nil {
			return err
		}
		n, err = f.ReadAt(buf[:], 0)
		f.Close()
	}
	if n < LongPageHeaderSize && err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	name := sf.Name.String()
	if n < LongPageHeaderSize {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return &Error{File: sf.Path, Err: fmt.Errorf("%w: %w", ErrBadSegmentHeader, err),
			Msg: fmt.Sprintf("could not read file \"%s\": read %d of %d", name, n, LongPageHeaderSize)}
	}
	h, _ := ParsePageHeader(buf[:])
	v, ok := VersionFromMagic(h.Magic)
	if !ok {
		return &Error{File: sf.Path, Err: ErrMagic,
			Msg: fmt.Sprintf("WAL file \"%s\" has unknown page magic %04X", name, h.Magic)}
	}
	if !h.Long() {
		return &Error{File: sf.Path, Err: ErrBadSegmentHeader,
			Msg: fmt.Sprintf("WAL file \"%s\" does not start with a long page header (info bits %04X)", name, uint16(h.Info))}
	}
	if !ValidSegmentSize(h.SegmentSize) {
		msg := fmt.Sprintf("WAL segment size must be a power of two between 1 MB and 1 GB, but the WAL file \"%s\" header specifies %d byte(s)", name, h.SegmentSize)
		if v >= V16 {
			msg = fmt.Sprintf("invalid WAL segment size in WAL file \"%s\" (%d byte(s))", name, h.SegmentSize)
		}
		return &Error{File: sf.Path, Err: ErrSegmentSize, Msg: msg}
	}
	if !ValidPageSize(h.PageSize) || h.SegmentSize%h.PageSize != 0 {
		return &Error{File: sf.Path, Err: ErrPageSize,
			Msg: fmt.Sprintf("WAL file \"%s\" header specifies an invalid XLOG_BLCKSZ of %d bytes", name, h.PageSize)}
	}
	r.version, r.segSize, r.pageSize, r.sysID = v, h.SegmentSize, h.PageSize, h.SystemID
	return nil
}

// Version is the PostgreSQL major version that wrote the stream.
func (r *Reader) Version() Version { return r.version }

// SegmentSize is the stream's segment size in bytes.
func (r *Reader) SegmentSize() uint32 { return r.segSize }

// PageSize is the stream's XLOG_BLCKSZ.
func (r *Reader) PageSize() uint32 { return r.pageSize }

// SystemID is the database system identifier from the long page headers.
func (r *Reader) SystemID() uint64 { return r.sysID }

// Start is where reading began (after Options.Start defaulted).
func (r *Reader) Start() LSN { return r.opts.Start }

// LastLSN is the start of the last record returned (pg_waldump's ReadRecPtr).
func (r *Reader) LastLSN() LSN { return r.lastLSN }

// EndLSN is where the WAL read ended: the end of the last record returned,
// which is where the next record would have started.
func (r *Reader) EndLSN() LSN { return r.next }

// Timelines returns the timelines the reader follows, oldest first.
func (r *Reader) Timelines() []Timeline { return r.plan }

// Close closes the current segment file.
func (r *Reader) Close() error {
	putWindow(r.win)
	r.win, r.winLoaded = nil, false
	if r.seg.open {
		r.seg.open, r.seg.head, r.seg.mapped = false, nil, nil
		r.pageValid = false
		return r.seg.f.Close()
	}
	return nil
}

// Records returns a single-use iterator over the records; it yields at most one
// non-nil error, as its final pair, and never io.EOF.
func (r *Reader) Records() iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// Next returns the next record. The record and its Raw bytes are valid until
// the next call.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	var rec *Record
	var err error
	if !r.started {
		rec, err = r.findFirst()
		r.started = true
	} else {
		rec, err = r.readRecord(r.next, false)
	}
	if err != nil {
		if errors.Is(err, errEndOfRange) {
			err = io.EOF
		}
		r.err = err
		return nil, err
	}
	if r.opts.StopAt != 0 && rec.LSN >= r.opts.StopAt {
		r.err = io.EOF
		r.next = rec.LSN
		return nil, io.EOF
	}
	rec.PrevRead = r.lastLSN
	if r.lastLSN == 0 && r.opts.Continues {
		rec.PrevRead = rec.Header.Prev
	}
	r.lastLSN = rec.LSN
	return rec, nil
}

// Spans splits the stream from Start to its last segment (or End) into
// spans of at most n segments, cut at segment boundaries, for readers that
// work in parallel: give each span's Start and StopAt to its own Reader, and
// check at each join that the first record of a span starts where the
// previous span's last record ended and names it as xl_prev.
func (r *Reader) Spans(n int) []Span {
	n = max(n, 1)
	ss := uint64(r.segSize)
	start := r.opts.Start
	last := r.maxSegNo
	if r.opts.End != 0 {
		last = min(last, (uint64(r.opts.End)-1)/ss)
	}
	var out []Span
	for seg := uint64(start) / ss; seg <= last; seg += uint64(n) {
		s := Span{Start: LSN(seg * ss), Stop: LSN((seg + uint64(n)) * ss)}
		if len(out) == 0 {
			s.Start = start
		}
		out = append(out, s)
	}
	if len(out) > 0 {
		out[len(out)-1].Stop = 0 // the last span reads to the end
	}
	return out
}

// LastSegmentEnd is the end of the last segment file of the stream: the
// furthest the WAL can go.
func (r *Reader) LastSegmentEnd() LSN { return LSN((r.maxSegNo + 1) * uint64(r.segSize)) }

// Span is a stretch of the stream: the records that start in [Start, Stop);
// Stop 0 means to the end.
type Span struct {
	Start, Stop LSN
}

// findFirst mirrors XLogFindNextRecord: skip continuation data at the start
// page, then read forward to the first record at or after Start.
func (r *Reader) findFirst() (*Record, error) {
	start := r.opts.Start
	tmp := start
	for {
		off := uint32(tmp % LSN(r.pageSize))
		pagePtr := tmp - LSN(off)
		page, err := r.readPage(pagePtr, int(off))
		if err != nil {
			return nil, r.notFound(start, err)
		}
		h, _ := ParsePageHeader(page)
		hs := h.Size()
		if h.Info&PageFirstIsContRecord != 0 {
			if Maxalign(h.RemLen) >= r.pageSize-uint32(hs) {
				tmp = pagePtr + LSN(r.pageSize)
				continue
			}
			tmp = pagePtr + LSN(hs) + LSN(Maxalign(h.RemLen))
		} else {
			tmp = pagePtr + LSN(hs)
		}
		break
	}
	randAccess := true
	for {
		rec, err := r.readRecord(tmp, randAccess)
		if err != nil {
			return nil, r.notFound(start, err)
		}
		randAccess = false
		if rec.LSN >= start {
			return rec, nil
		}
		tmp = r.next
	}
}

func (r *Reader) notFound(start LSN, err error) error {
	if err == io.EOF || errors.Is(err, errEndOfRange) {
		return err
	}
	if r.opts.Continues {
		// A later span of a parallel reading: what it meets is what one
		// reader reading on would meet, reported as that reader would
		// (and Resync knows it for the same file's problem), so that -j
		// changes no finding.
		return err
	}
	// Where reading starts, zeroed space or a page address that is not the
	// file's (a recycled segment, a segment copied under another name) is
	// no WAL: pg_waldump fails with "could not find a valid record after"
	// (XLogFindNextRecord), and so does the reader.
	e := &Error{LSN: start, Msg: fmt.Sprintf("could not find a valid record after %s", start),
		Err: fmt.Errorf("%w: %w", ErrNoValidRecord, err)}
	if xe, ok := errors.AsType[*Error](err); ok {
		e.File, e.Offset, e.LSN = xe.File, xe.Offset, xe.LSN
		e.Msg += ": " + xe.Msg
	}
	return e
}

// readRecord mirrors XLogDecodeNextRecord: it reads the record starting at
// recPtr (or at the first record of the page, if recPtr is a page start).
func (r *Reader) readRecord(recPtr LSN, randAccess bool) (*Record, error) {
	if !r.started || r.prev == InvalidLSN {
		randAccess = true
	}
	r.aborted = InvalidLSN
restart:
	ps := LSN(r.pageSize)
	targetPagePtr := recPtr - recPtr%ps
	targetRecOff := uint32(recPtr % ps)
	page, err := r.readPage(targetPagePtr, int(min(targetRecOff+RecordHeaderSize, r.pageSize)))
	if err != nil {
		return nil, err
	}
	pageInfo, hs := pageInfoSize(page)
	if targetRecOff == 0 {
		recPtr += LSN(hs)
		targetRecOff = hs
	} else if targetRecOff < hs {
		msg := fmt.Sprintf("invalid record offset at %s", recPtr)
		if r.version >= V16 {
			msg = fmt.Sprintf("invalid record offset at %s: expected at least %d, got %d", recPtr, hs, targetRecOff)
		}
		return nil, r.fail(ErrRecordOffset, recPtr, msg)
	}
	if pageInfo&PageFirstIsContRecord != 0 && targetRecOff == hs {
		return nil, r.fail(ErrContRecordRequest, recPtr, fmt.Sprintf("contrecord is requested by %s", recPtr))
	}
	if int(targetRecOff)+4 > len(page) {
		return nil, r.truncated(targetPagePtr, len(page))
	}
	totalLen := binary.LittleEndian.Uint32(page[targetRecOff:])
	gotHeader := false
	if targetRecOff <= r.pageSize-RecordHeaderSize {
		if int(targetRecOff)+RecordHeaderSize > len(page) {
			return nil, r.truncated(targetPagePtr, len(page))
		}
		if err := r.validateHeader(recPtr, page[targetRecOff:targetRecOff+RecordHeaderSize], randAccess); err != nil {
			return nil, err
		}
		gotHeader = true
	} else if totalLen < RecordHeaderSize {
		return nil, r.badLength(recPtr, totalLen)
	}
	if totalLen > r.opts.MaxRecordSize {
		return nil, r.fail(ErrRecordLength, recPtr, fmt.Sprintf("record length %d at %s too long", totalLen, recPtr))
	}
	var raw []byte
	var spanCRC uint32
	spanning := false
	startTLI, startName := r.seg.tli, r.seg.name // the segment the record starts in
	avail := r.pageSize - targetRecOff
	if totalLen > avail {
		// The record continues on following pages: reassemble it.
		if len(page) < int(r.pageSize) {
			return nil, r.truncated(targetPagePtr, len(page))
		}
		// The CRC runs over the fragments as they come; the bytes are kept
		// whole, or, with HeadersOnly, just the first HeadersOnlyKeep.
		keep := int(totalLen)
		if r.opts.HeadersOnly {
			keep = min(keep, HeadersOnlyKeep)
		}
		var crc uint32
		gotLen := uint32(0)
		r.recBuf = r.recBuf[:0]
		skipCRC := r.opts.SkipCRC
		consume := func(frag []byte) {
			if body := max(0, RecordHeaderSize-int(gotLen)); body < len(frag) && !skipCRC {
				crc = crc32.Update(crc, castagnoli, frag[body:])
			}
			if len(r.recBuf) < keep {
				r.recBuf = append(r.recBuf, frag[:min(len(frag), keep-len(r.recBuf))]...)
			}
			gotLen += uint32(len(frag))
		}
		consume(page[targetRecOff:])
		var remLen uint32
		for gotLen < totalLen {
			targetPagePtr += ps
			page, err = r.readPage(targetPagePtr, int(min(totalLen-gotLen+ShortPageHeaderSize, r.pageSize)))
			if err != nil {
				return nil, err
			}
			ph, _ := ParsePageHeader(page)
			if ph.Info&PageFirstIsOverwriteContRecord != 0 {
				// The rest of this record was lost and overwritten: restart at
				// this page, keeping prev (the OVERWRITE_CONTRECORD record's
				// xl_prev skips the aborted record).
				r.aborted = recPtr
				recPtr = targetPagePtr
				goto restart
			}
			if ph.Info&PageFirstIsContRecord == 0 {
				return nil, r.failAt(ErrNoContRecord, targetPagePtr, recPtr, fmt.Sprintf("there is no contrecord flag at %s", recPtr))
			}
			if ph.RemLen == 0 || totalLen != ph.RemLen+gotLen {
				return nil, r.failAt(ErrContRecordLength, targetPagePtr, recPtr,
					fmt.Sprintf("invalid contrecord length %d (expected %d) at %s", ph.RemLen, int64(totalLen)-int64(gotLen), recPtr))
			}
			phs := uint32(ph.Size())
			n := min(r.pageSize-phs, ph.RemLen)
			if int(phs+n) > len(page) {
				return nil, r.truncated(targetPagePtr, len(page))
			}
			consume(page[phs : phs+n])
			remLen = ph.RemLen
			if !gotHeader && gotLen >= RecordHeaderSize {
				if err := r.validateHeader(recPtr, r.recBuf[:RecordHeaderSize], randAccess); err != nil {
					return nil, err
				}
				gotHeader = true
			}
			if !gotHeader {
				continue
			}
		}
		raw = r.recBuf[:len(r.recBuf):len(r.recBuf)]
		ph, _ := ParsePageHeader(page)
		r.next = targetPagePtr + LSN(ph.Size()) + LSN(Maxalign(remLen))
		spanCRC, spanning = crc32.Update(crc, castagnoli, raw[:20]), true
	} else {
		page, err = r.readPage(targetPagePtr, int(min(targetRecOff+totalLen, r.pageSize)))
		if err != nil {
			return nil, err
		}
		if int(targetRecOff+totalLen) > len(page) {
			return nil, r.truncated(targetPagePtr, len(page))
		}
		raw = page[targetRecOff : targetRecOff+totalLen : targetRecOff+totalLen]
		r.next = recPtr + LSN(Maxalign(totalLen))
	}
	// The header is decoded in place: a RecordHeader built on the stack and
	// copied into rec cost a store-forwarding stall per record, a tenth of
	// the reading of small records (issue 16).
	rec := &r.rec
	hdr := &rec.Header
	parseRecordHeaderInto(hdr, raw)
	if !spanning && !r.opts.SkipCRC {
		spanCRC = RecordCRC(raw)
	}
	if spanCRC != hdr.CRC && !r.opts.SkipCRC {
		return nil, r.fail(ErrChecksum, recPtr, fmt.Sprintf("incorrect resource manager data checksum in record at %s", recPtr))
	}
	if hdr.Rmid == RmgrXLOG && hdr.Info&RmgrInfoMask == xlogSwitch {
		// Pretend the record extends to the end of the segment.
		ss := LSN(r.segSize)
		r.next += ss - 1
		r.next -= r.next % ss
	}
	r.prev = recPtr
	// Field by field: the record is rewritten for every record read, and
	// the geometry fields only change with the reader.
	rec.LSN, rec.EndLSN, rec.Raw = recPtr, r.next, raw
	rec.TLI, rec.Version, rec.PageSize, rec.SegSize = startTLI, r.version, r.pageSize, r.segSize
	if rec.Segment != startName {
		rec.Segment = startName
	}
	rec.Aborted = r.aborted
	return rec, nil
}

// pageInfoSize returns the xlp_info of the page header at the start of page
// (at least ShortPageHeaderSize bytes) and the header's size, without
// decoding the rest (the reader validated the page when it loaded it).
func pageInfoSize(page []byte) (PageInfo, uint32) {
	info := PageInfo(binary.LittleEndian.Uint16(page[2:4]))
	if info&PageLongHeader != 0 {
		return info, LongPageHeaderSize
	}
	return info, ShortPageHeaderSize
}

// parseRecordHeaderInto is ParseRecordHeader writing into h.
func parseRecordHeaderInto(h *RecordHeader, b []byte) {
	p := (*[RecordHeaderSize]byte)(b)
	h.TotLen = binary.LittleEndian.Uint32(p[0:4])
	h.XID = XID(binary.LittleEndian.Uint32(p[4:8]))
	h.Prev = LSN(binary.LittleEndian.Uint64(p[8:16]))
	h.Info = p[16]
	h.Rmid = RmgrID(p[17])
	h.CRC = binary.LittleEndian.Uint32(p[20:24])
}

// validateHeader mirrors ValidXLogRecordHeader. It reads the three fields it
// checks (a whole RecordHeader built and copied on the stack stalled every
// record on store forwarding).
func (r *Reader) validateHeader(recPtr LSN, b []byte, randAccess bool) error {
	p := (*[RecordHeaderSize]byte)(b)
	totLen := binary.LittleEndian.Uint32(p[0:4])
	prev := LSN(binary.LittleEndian.Uint64(p[8:16]))
	rmid := RmgrID(p[17])
	if totLen < RecordHeaderSize {
		return r.badLength(recPtr, totLen)
	}
	if !rmid.Valid(r.version) {
		return r.fail(ErrRmgrID, recPtr, fmt.Sprintf("invalid resource manager ID %d at %s", rmid, recPtr))
	}
	if randAccess {
		if !(prev < recPtr) {
			return r.fail(ErrPrevLink, recPtr, fmt.Sprintf("record with incorrect prev-link %s at %s", prev, recPtr))
		}
	} else if prev != r.prev {
		return r.fail(ErrPrevLink, recPtr, fmt.Sprintf("record with incorrect prev-link %s at %s", prev, recPtr))
	}
	return nil
}

func (r *Reader) badLength(recPtr LSN, totalLen uint32) error {
	msg := fmt.Sprintf("invalid record length at %s: wanted %d, got %d", recPtr, RecordHeaderSize, totalLen)
	if r.version >= V16 {
		msg = fmt.Sprintf("invalid record length at %s: expected at least %d, got %d", recPtr, RecordHeaderSize, totalLen)
	}
	sentinel := ErrRecordLength
	if totalLen == 0 {
		sentinel = ErrZeroLength
	}
	return r.fail(sentinel, recPtr, msg)
}

// fail builds a positioned error for a problem at lsn.
func (r *Reader) fail(sentinel error, lsn LSN, msg string) *Error {
	return r.failAt(sentinel, lsn, lsn, msg)
}

// failAt builds a positioned error about the record or page at lsn (the LSN
// PostgreSQL's message names), found in the file and at the offset of
// position at.
func (r *Reader) failAt(sentinel error, at, lsn LSN, msg string) *Error {
	segno := uint64(at) / uint64(r.segSize)
	name := NewSegmentName(r.readTLI(segno), segno, r.segSize).String()
	if r.seg.open && r.seg.segno == segno {
		name = r.seg.file.Path
	}
	return &Error{
		File:      name,
		Offset:    int64(uint64(at) % uint64(r.segSize)),
		LSN:       lsn,
		RecordLSN: r.lastLSN,
		Msg:       msg,
		Err:       sentinel,
	}
}

func (r *Reader) truncated(pagePtr LSN, have int) error {
	if r.seg.partial {
		// A .partial file is WAL still being received: its end is the end of
		// the WAL available.
		return io.EOF
	}
	// Named where the file ends, as pg_waldump's failed read is.
	at := pagePtr + LSN(have)
	return r.failAt(ErrTruncated, at, at,
		fmt.Sprintf("could not read from file %s, offset %d: read %d of %d",
			r.seg.name, uint64(at)%uint64(r.segSize), 0, int(r.pageSize)-have))
}

// readTLI is the timeline whose file name pg_waldump would use for segno.
func (r *Reader) readTLI(segno uint64) TimeLineID {
	var buf [4]TimeLineID
	if c := candidates(buf[:0], r.plan, segno, r.segSize); len(c) > 0 {
		return c[0]
	}
	return r.plan[len(r.plan)-1].TLI
}
