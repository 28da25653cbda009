package verify

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

// Class names a kind of finding of Verify.
type Class string

// The classes Verify tells apart. ClassEnd is not a problem.
const (
	ClassEnd            Class = "end-of-wal"             // clean end: zeroed space, a recycled file, the end of the files
	ClassZeroedTorn     Class = "zeroed-or-torn-tail"    // zeroed space with WAL after it, or a torn last record
	ClassRecycled       Class = "stale-recycled-segment" // old page address where WAL goes on after
	ClassCRC            Class = "crc-mismatch"
	ClassRecordHeader   Class = "invalid-record-header" // length, rmgr id, xl_prev, block headers
	ClassPageHeader     Class = "invalid-page-header"   // magic, info bits, page address, timeline, long header, xlp_rem_len
	ClassMissingSegment Class = "missing-segment"
	ClassTruncated      Class = "truncated-segment"
	ClassOtherSystem    Class = "other-system"    // a segment of another database system
	ClassUnknownVersion Class = "unknown-version" // a page magic no PostgreSQL release 10 to 18 wrote
	// Archive files: reported for what they are, never as WAL corruption.
	ClassEncrypted       Class = "encrypted-or-unrecognised" // an encryption envelope, or content that is not WAL
	ClassArchiveChecksum Class = "archive-checksum-mismatch" // a backup tool's checksum of the file does not match
	ClassArchiveCorrupt  Class = "corrupt-archive-file"      // damaged compression, oversized content, unreadable file
	ClassDuplicate       Class = "duplicate-segment"         // the same segment twice with different content
	ClassHistory         Class = "invalid-history"           // a timeline history file that is not a valid history (xlog.CheckHistories)
	ClassUnreadable      Class = "unreadable-file"           // a file the user may not read (permission denied): an input problem, exit 2
)

// Problem is one finding.
type Problem struct {
	Class  Class    `json:"class"`
	File   string   `json:"file"`
	Offset int64    `json:"offset"`
	LSN    xlog.LSN `json:"-"`
	LSNStr string   `json:"lsn"`
	// Message is PostgreSQL's wording of the problem.
	Message string `json:"message"`
	// Resume is where reading resumed after it (empty if it did not).
	Resume string `json:"resumed_at,omitempty"`
	// Cause is, for the end of WAL, what ended it: zeroed space, a
	// recycled segment, a CRC mismatch, the end of the files.
	Cause Class `json:"cause,omitempty"`
}

// TimelineRange is the stretch of one timeline whose records were read.
type TimelineRange struct {
	TLI     xlog.TimeLineID `json:"timeline"`
	Start   string          `json:"start_lsn"`
	End     string          `json:"end_lsn"`
	Records uint64          `json:"records"`
	start   xlog.LSN
	end     xlog.LSN
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Version     int             `json:"pg_version"`
	SystemID    uint64          `json:"system_identifier"`
	SegmentSize uint32          `json:"segment_size"`
	PageSize    uint32          `json:"xlog_blcksz"`
	Segments    int             `json:"segments"`
	Records     uint64          `json:"records"`
	RecordBytes uint64          `json:"record_bytes"`
	Timelines   []TimelineRange `json:"timelines"`
	Problems    []Problem       `json:"problems"`
	ByClass     map[Class]int   `json:"problems_by_class"`
	End         *Problem        `json:"end,omitempty"` // how the WAL ended, when it did not end with the files
	// AfterEnd lists recycled or zeroed files found after the end of WAL,
	// which a live pg_wal normally holds: not problems.
	AfterEnd []Problem `json:"after_end,omitempty"`
	// Archive describes the files, when the input is an archive.
	Archive *ArchiveSummary `json:"archive,omitempty"`
	// NotRead lists the segment files the reading did not cover, with the
	// reason: nothing is skipped silently.
	NotRead []SkippedFile `json:"not_read,omitempty"`
}

// SkippedFile is a segment file the reading did not cover, and why.
type SkippedFile struct {
	Name   string `json:"name"` // the segment file name (".partial" included)
	File   string `json:"file"` // where it is stored
	Reason string `json:"reason"`
}

// AddArchive adds the archive summary and its problems to the report.
func (r *VerifyReport) AddArchive(sum *ArchiveSummary, problems []Problem) {
	r.Archive = sum
	for _, p := range problems {
		r.Problems = append(r.Problems, p)
		r.ByClass[p.Class]++
	}
}

// NoRecycledEnd turns an end of WAL at a recycled segment (a page address
// older than the file's name) into a problem: in a backup tool's archive,
// which holds only segments archived when complete, such a file is a
// segment stored under another name, not a recycled one. why is added to
// the message.
func (r *VerifyReport) NoRecycledEnd(why string) {
	if r.End == nil || r.End.Cause != ClassRecycled {
		return
	}
	p := *r.End
	p.Class, p.Cause = ClassRecycled, ""
	p.Message += " (" + why + ")"
	r.Problems = append(r.Problems, p)
	r.ByClass[p.Class]++
	r.End = nil
}

// OK reports whether nothing but a clean end was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Classify maps a reading error to its class.
func Classify(err error) Class {
	xe, _ := errors.AsType[*xlog.Error](err)
	if errors.Is(err, xlog.ErrNoValidRecord) && xe != nil {
		// No record where reading starts: the class of what is there
		// (zeroes, a recycled or misnamed segment, damage).
		if inner, ok := errors.AsType[*xlog.Error](xe.Err); ok {
			return Classify(inner)
		}
	}
	switch {
	case errors.Is(err, fs.ErrPermission):
		return ClassUnreadable
	case errors.Is(err, archive.ErrEncrypted), errors.Is(err, archive.ErrUnrecognized):
		return ClassEncrypted
	case errors.Is(err, archive.ErrChecksum):
		return ClassArchiveChecksum
	case errors.Is(err, archive.ErrTooLarge), errors.Is(err, archive.ErrCorrupt), errors.Is(err, xlog.ErrOpenFile):
		return ClassArchiveCorrupt
	case errors.Is(err, xlog.ErrSegmentNotFound):
		return ClassMissingSegment
	case errors.Is(err, xlog.ErrTruncated), errors.Is(err, xlog.ErrBadSegmentHeader):
		return ClassTruncated
	case errors.Is(err, xlog.ErrSystemID):
		return ClassOtherSystem
	case errors.Is(err, xlog.ErrZeroLength), errors.Is(err, xlog.ErrZeroPage):
		return ClassZeroedTorn
	case errors.Is(err, xlog.ErrPageAddr) && xe != nil && xe.Stale:
		return ClassRecycled
	case errors.Is(err, xlog.ErrMagic):
		return ClassUnknownVersion
	case errors.Is(err, xlog.ErrChecksum):
		return ClassCRC
	case errors.Is(err, xlog.ErrRecordLength), errors.Is(err, xlog.ErrRmgrID), errors.Is(err, xlog.ErrPrevLink),
		errors.Is(err, xlog.ErrRecordOffset), errors.Is(err, decode.ErrInvalid):
		return ClassRecordHeader
	}
	return ClassPageHeader
}

// EndLike reports whether a problem may just be where written WAL ends; it
// is one only if no valid record follows it.
func EndLike(c Class) bool {
	return c == ClassZeroedTorn || c == ClassRecycled || c == ClassCRC || c == ClassMissingSegment
}

func ProblemOf(err error, class Class) Problem {
	p := Problem{Class: class, Message: err.Error()}
	if xe, ok := errors.AsType[*xlog.Error](err); ok {
		p.File, p.Offset, p.LSN, p.Message = xe.File, xe.Offset, xe.LSN, xe.Msg
	}
	p.LSNStr = p.LSN.String()
	return p
}

// spanReport is what one reader found in one span of the stream.
type spanReport struct {
	problems     []Problem
	pending      []Problem // end-like problems after the span's last record
	records      uint64
	recordBytes  uint64
	segments     map[string]bool
	tls          map[xlog.TimeLineID]*TimelineRange
	first        xlog.LSN // first record read
	firstPrev    xlog.LSN // its xl_prev
	firstSegment string   // the file it starts in
	firstClean   bool     // read before any problem in the span
	last         xlog.LSN // last record read
	end          xlog.LSN // where the next record would start
	clean        bool     // the span ended at its stop with no problem after its last record
	err          error
}

// Verify reads the whole stream of src, checking every page header, record,
// prev link and segment, and reports every problem: after a damaged stretch it
// resynchronises at the next page that tells where a record starts. With
// workers > 1 the stream is cut into spans of whole segments verified in
// parallel; their findings are merged in WAL order, and each join is checked
// (the first record of a span must start where the previous span ended and
// name its last record as xl_prev).
func Verify(src xlog.Source, opts xlog.Options, blockSize, workers int) (*VerifyReport, error) {
	// Every byte's CRC is checked; payloads need not be kept.
	opts.HeadersOnly = true
	opts.Index = xlog.NewSegmentIndex() // one index for every span's reader
	st, err := stream.Open(src, stream.Config{Reader: opts, Workers: workers, SpanBytes: verifySpanBytes})
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{
		Version: int(st.Version()), SystemID: st.SystemID(), SegmentSize: st.SegmentSize(), PageSize: st.PageSize(),
		ByClass: map[Class]int{},
	}
	segments := map[string]bool{}
	tls := map[xlog.TimeLineID]*TimelineRange{}
	var carry []Problem // end-like problems awaiting a later record
	var prevEnd, prevLast xlog.LSN
	prevClean := false
	seen := map[string]bool{}
	addProblem := func(p Problem) {
		key := string(p.Class) + " " + p.LSNStr
		if seen[key] {
			return // met again by the next span's reader
		}
		seen[key] = true
		rep.Problems = append(rep.Problems, p)
	}
	var setupErr error
	stream.RunSpans(st, func(info stream.SpanInfo, _ *atomic.Bool) *spanReport {
		o := opts
		o.Start, o.StopAt, o.Continues = info.Span.Start, info.Span.Stop, info.Index > 0
		return verifySpan(src, o, blockSize)
	}, func(_ int, s *spanReport) bool {
		if s.err != nil {
			setupErr = s.err
			return false
		}
		for f := range s.segments {
			segments[f] = true
		}
		if s.records > 0 {
			for _, p := range carry {
				if p.Resume == "" {
					p.Resume = s.first.String()
				}
				addProblem(p)
			}
			carry = carry[:0]
			if prevClean && s.firstClean {
				if err := stream.CheckJoin(prevLast, prevEnd, s.first, s.firstPrev); err != nil {
					p := ProblemOf(err, ClassRecordHeader)
					p.File, p.Offset = s.firstSegment, int64(uint64(s.first)%uint64(st.SegmentSize()))
					addProblem(p)
				}
			}
		}
		for _, p := range s.problems {
			addProblem(p)
		}
		for _, p := range s.pending {
			dup := false
			for _, c := range carry {
				dup = dup || c.Class == p.Class && c.LSN == p.LSN
			}
			if !dup {
				carry = append(carry, p)
			}
		}
		rep.Records += s.records
		rep.RecordBytes += s.recordBytes
		for tli, t := range s.tls {
			if m := tls[tli]; m == nil {
				c := *t
				tls[tli] = &c
			} else {
				m.end = t.end
				m.Records += t.Records
			}
		}
		if s.records > 0 {
			prevEnd, prevLast = s.end, s.last
		}
		prevClean = s.clean && (s.records > 0 || prevClean)
		return true
	})
	if setupErr != nil {
		return nil, setupErr
	}
	// Every history file, not only the one the reading followed.
	if hr, ok := src.(xlog.HistoryReader); ok {
		for _, hp := range xlog.CheckHistories(hr) {
			addProblem(Problem{Class: ClassHistory, File: hp.File, LSNStr: xlog.LSN(0).String(), Message: hp.Err.Error()})
		}
	}
	if len(carry) > 0 {
		first := carry[0]
		if first.Class == ClassCRC || first.Class == ClassMissingSegment {
			if first.Class == ClassCRC {
				first.Class = ClassZeroedTorn // a torn last record
			}
			addProblem(first)
		} else {
			end := first
			end.Class, end.Cause = ClassEnd, first.Class
			rep.End = &end
		}
		for _, p := range carry[1:] {
			if !seen[string(p.Class)+" "+p.LSNStr] {
				rep.AfterEnd = append(rep.AfterEnd, p)
			}
		}
	}
	for _, p := range rep.Problems {
		rep.ByClass[p.Class]++
	}
	rep.NotRead = notRead(src, opts, st.SegmentSize(), tls, segments, rep)
	rep.Segments = len(segments)
	for _, t := range tls {
		t.Start, t.End = t.start.String(), t.end.String()
		rep.Timelines = append(rep.Timelines, *t)
	}
	sort.Slice(rep.Timelines, func(i, j int) bool { return rep.Timelines[i].TLI < rep.Timelines[j].TLI })
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].LSN < rep.Problems[j].LSN })
	if rep.Problems == nil {
		rep.Problems = []Problem{}
	}
	return rep, nil
}

// verifySpan verifies the records that start in one span.
func verifySpan(src xlog.Source, opts xlog.Options, blockSize int) *spanReport {
	s := &spanReport{segments: map[string]bool{}, tls: map[xlog.TimeLineID]*TimelineRange{}}
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		s.err = err
		return s
	}
	defer r.Close()
	dec := decode.NewDecoder(blockSize)
	troubled := false     // a problem met in this span
	troubledLast := false // a problem met since the last record
	add := func(err error) {
		troubled, troubledLast = true, true
		c := Classify(err)
		p := ProblemOf(err, c)
		if errors.Is(err, xlog.ErrMagic) && p.Offset%int64(r.SegmentSize()) != 0 {
			p.Class = ClassPageHeader // a damaged page inside a good file
		}
		if p.File != "" {
			s.segments[p.File] = true
		}
		if EndLike(p.Class) && !errors.Is(err, xlog.ErrNoValidRecord) {
			// (no record where reading starts is no end: pg_waldump fails)
			s.pending = append(s.pending, p)
		} else {
			s.problems = append(s.problems, p)
		}
	}
	var lastSeg string
	var t *TimelineRange
	for {
		rec, err := r.Next()
		if err == nil {
			if len(s.pending) > 0 {
				// WAL goes on: what looked like an end was damage.
				for i := range s.pending {
					if s.pending[i].Resume == "" {
						s.pending[i].Resume = rec.LSN.String()
					}
				}
				s.problems = append(s.problems, s.pending...)
				s.pending = s.pending[:0]
			}
			if s.records == 0 {
				s.first, s.firstPrev, s.firstClean, s.firstSegment = rec.LSN, rec.Header.Prev, !troubled, rec.Segment
			}
			troubledLast = false
			if rec.Segment != lastSeg || t == nil || t.TLI != rec.TLI {
				// once per segment, not a map update per record
				lastSeg = rec.Segment
				s.segments[rec.Segment] = true
				if t = s.tls[rec.TLI]; t == nil {
					t = &TimelineRange{TLI: rec.TLI, start: rec.LSN}
					s.tls[rec.TLI] = t
				}
			}
			s.records++
			s.recordBytes += uint64(rec.Header.TotLen)
			s.last, s.end = rec.LSN, rec.EndLSN
			t.end = rec.EndLSN
			t.Records++
			if _, err := dec.Decode(rec); err != nil {
				if de, ok := errors.AsType[*decode.Error](err); ok {
					s.problems = append(s.problems, Problem{Class: ClassRecordHeader, File: rec.Segment,
						Offset: int64(uint64(rec.LSN) % uint64(rec.SegSize)), LSN: rec.LSN, LSNStr: rec.LSN.String(), Message: de.Msg})
				}
			}
			continue
		}
		if err == io.EOF {
			s.clean = !troubledLast
			if s.records > 0 && r.EndLSN() > s.end {
				s.end = r.EndLSN() // where the next span's first record starts
			}
			return s
		}
		add(err)
		for {
			at, rerr := r.Resync()
			if rerr == nil {
				if n := len(s.problems); n > 0 && s.problems[n-1].Resume == "" {
					s.problems[n-1].Resume = at.String()
				}
				break
			}
			if rerr == io.EOF {
				return s
			}
			if xe, ok := errors.AsType[*xlog.Error](rerr); ok && opts.StopAt != 0 && xe.LSN >= opts.StopAt {
				// A file past the span: the next span starts there and
				// reports it (and what follows) as one reader would. Going on
				// would make every span walk every later bad file (issue 16:
				// quadratic over many empty files).
				return s
			}
			add(rerr)
		}
	}
}

func (c Class) String() string { return string(c) }

// verifySpanBytes is the WAL each parallel verify span covers.
var verifySpanBytes = 64 << 20

// notRead lists the segment files of src that the reading did not cover
// (no record of theirs read, no problem met in them), with the reason: a
// timeline the history followed does not take, a parent's files past its
// switch point, before the start, after the end of WAL, a ".partial" beside
// its complete twin.
func notRead(src xlog.Source, opts xlog.Options, segSize uint32, tls map[xlog.TimeLineID]*TimelineRange, seen map[string]bool, rep *VerifyReport) []SkippedFile {
	var plan []xlog.Timeline
	if r, err := xlog.NewReader(src, opts); err == nil {
		plan = r.Timelines()
		r.Close()
	}
	ss := uint64(segSize)
	var end xlog.LSN // where reading ended
	for _, t := range tls {
		end = max(end, t.end)
	}
	full := map[xlog.SegmentName]bool{}
	for _, f := range src.Segments() {
		if !f.Partial {
			full[f.Name] = true
		}
	}
	var out []SkippedFile
	for _, f := range src.Segments() {
		name := f.Name.String()
		if seen[name] || seen[f.Path] {
			continue
		}
		segno := f.Name.SegNo(segSize)
		if t := tls[f.Name.TLI]; t != nil && uint64(t.start)/ss <= segno && segno <= uint64(t.end-1)/ss {
			continue // read (a record that spans it whole)
		}
		var reason string
		var onPlan *xlog.Timeline
		for i := range plan {
			if plan[i].TLI == f.Name.TLI {
				onPlan = &plan[i]
			}
		}
		switch {
		case f.Partial && full[f.Name]:
			reason = "a .partial file beside the complete segment, which was read"
		case onPlan == nil:
			reason = fmt.Sprintf("timeline %d is not on the history followed (timelines %s)", f.Name.TLI, planString(plan))
		case onPlan.End != 0 && segno > uint64(onPlan.End)/ss:
			reason = fmt.Sprintf("after timeline %d's switch point %s, where the history followed goes on on a later timeline", f.Name.TLI, onPlan.End)
		case segno < uint64(onPlan.Begin)/ss:
			reason = fmt.Sprintf("before timeline %d begins at %s", f.Name.TLI, onPlan.Begin)
		case opts.Start != 0 && segno < uint64(opts.Start)/ss:
			reason = fmt.Sprintf("before the start %s", opts.Start)
		case opts.End != 0 && segno >= uint64(opts.End)/ss:
			reason = fmt.Sprintf("after the end %s", opts.End)
		case end != 0 && segno >= uint64(end)/ss:
			reason = fmt.Sprintf("after the end of WAL at %s", end)
		default:
			reason = "not reached by the reading"
			for t, r := range tls {
				if t > f.Name.TLI && uint64(r.start)/ss <= segno && segno <= uint64(r.end-1)/ss {
					reason = fmt.Sprintf("timeline %d ends in it (at %s): the history followed reads this segment on timeline %d", f.Name.TLI, onPlan.End, t)
				}
			}
		}
		if f.Partial {
			name += ".partial"
		}
		out = append(out, SkippedFile{Name: name, File: f.Path, Reason: reason})
	}
	return out
}

func planString(plan []xlog.Timeline) string {
	var b []byte
	for i, t := range plan {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, uint64(t.TLI), 10)
	}
	return string(b)
}
