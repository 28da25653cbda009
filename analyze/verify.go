package analyze

import (
	"errors"
	"io"
	"sort"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
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
}

// OK reports whether nothing but a clean end was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Classify maps a reading error to its class.
func Classify(err error) Class {
	xe, _ := errors.AsType[*xlog.Error](err)
	switch {
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

// endLike reports whether a problem may just be where written WAL ends; it
// is one only if no valid record follows it.
func endLike(c Class) bool {
	return c == ClassZeroedTorn || c == ClassRecycled || c == ClassCRC || c == ClassMissingSegment
}

func problemOf(err error, class Class) Problem {
	p := Problem{Class: class, Message: err.Error()}
	if xe, ok := errors.AsType[*xlog.Error](err); ok {
		p.File, p.Offset, p.LSN, p.Message = xe.File, xe.Offset, xe.LSN, xe.Msg
	}
	p.LSNStr = p.LSN.String()
	return p
}

// Verify reads the whole stream of src, checking every page header, record,
// prev link and segment, and reports every problem: after a damaged stretch it
// resynchronises at the next page that tells where a record starts. A magic
// of a known version on a damaged page is an invalid page header; an unknown
// one at the start of a file is an unknown version.
func Verify(src xlog.Source, opts xlog.Options, blockSize int) (*VerifyReport, error) {
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep := &VerifyReport{
		Version: int(r.Version()), SystemID: r.SystemID(), SegmentSize: r.SegmentSize(), PageSize: r.PageSize(),
		ByClass: map[Class]int{},
	}
	dec := decode.NewDecoder(blockSize)
	segments := map[string]bool{}
	tls := map[xlog.TimeLineID]*TimelineRange{}
	var pending []Problem
	flush := func() {
		rep.Problems = append(rep.Problems, pending...)
		pending = pending[:0]
	}
	add := func(err error) {
		c := Classify(err)
		p := problemOf(err, c)
		if errors.Is(err, xlog.ErrMagic) && p.Offset%int64(r.SegmentSize()) != 0 {
			p.Class = ClassPageHeader // a damaged page inside a good file
		}
		if p.File != "" {
			segments[p.File] = true
		}
		if endLike(p.Class) {
			pending = append(pending, p)
		} else {
			rep.Problems = append(rep.Problems, p)
		}
	}
	var prev xlog.LSN
	for {
		rec, err := r.Next()
		if err == nil {
			if len(pending) > 0 {
				// WAL goes on: what looked like an end was damage.
				for i := range pending {
					if pending[i].Resume == "" {
						pending[i].Resume = rec.LSN.String()
					}
				}
				flush()
			}
			segments[rec.Segment] = true
			rep.Records++
			rep.RecordBytes += uint64(rec.Header.TotLen)
			t := tls[rec.TLI]
			if t == nil {
				t = &TimelineRange{TLI: rec.TLI, start: rec.LSN}
				tls[rec.TLI] = t
			}
			t.end = rec.EndLSN
			t.Records++
			if _, err := dec.Decode(rec, prev); err != nil {
				if de, ok := errors.AsType[*decode.Error](err); ok {
					rep.Problems = append(rep.Problems, Problem{Class: ClassRecordHeader, File: rec.Segment,
						Offset: int64(uint64(rec.LSN) % uint64(rec.SegSize)), LSN: rec.LSN, LSNStr: rec.LSN.String(), Message: de.Msg})
				}
			}
			prev = rec.LSN
			continue
		}
		if err == io.EOF {
			break
		}
		add(err)
		resumed := false
		for !resumed {
			at, rerr := r.Resync()
			switch {
			case rerr == nil:
				resumed = true
				if len(rep.Problems) > 0 && rep.Problems[len(rep.Problems)-1].Resume == "" {
					rep.Problems[len(rep.Problems)-1].Resume = at.String()
				}
			case rerr == io.EOF:
				goto done
			default:
				add(rerr)
			}
		}
	}
done:
	if len(pending) > 0 {
		first := pending[0]
		if first.Class == ClassCRC || first.Class == ClassMissingSegment {
			if first.Class == ClassCRC {
				first.Class = ClassZeroedTorn // a torn last record
			}
			rep.Problems = append(rep.Problems, first)
		} else {
			end := first
			end.Class = ClassEnd
			rep.End = &end
		}
		for _, p := range pending[1:] {
			rep.AfterEnd = append(rep.AfterEnd, p)
		}
	}
	for _, p := range rep.Problems {
		rep.ByClass[p.Class]++
	}
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

func (c Class) String() string { return string(c) }
