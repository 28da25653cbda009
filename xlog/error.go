package xlog

import (
	"errors"
	"fmt"
	"io"
)

// Sentinel errors. They always reach users wrapped in an *Error, which adds the
// position and PostgreSQL's own wording of the problem.
var (
	ErrMagic             = errors.New("invalid page magic")          // unknown XLOG_PAGE_MAGIC, or another version than the stream's
	ErrPageInfo          = errors.New("invalid page info bits")      // xlp_info
	ErrSystemID          = errors.New("different database system")   // long header system identifier
	ErrSegmentSize       = errors.New("incorrect segment size")      // long header xlp_seg_size
	ErrPageSize          = errors.New("incorrect XLOG_BLCKSZ")       // long header xlp_xlog_blcksz
	ErrPageAddr          = errors.New("unexpected page address")     // xlp_pageaddr: recycled or misplaced page
	ErrTimeline          = errors.New("out-of-sequence timeline")    // xlp_tli went backwards
	ErrZeroPage          = errors.New("zeroed page")                 // a page never written (all zero header)
	ErrNoContRecord      = errors.New("missing contrecord flag")     // continuation page lacks XLP_FIRST_IS_CONTRECORD
	ErrContRecordLength  = errors.New("invalid contrecord length")   // xlp_rem_len disagrees with xl_tot_len
	ErrContRecordRequest = errors.New("contrecord requested")        // read asked to start inside continuation data
	ErrRecordOffset      = errors.New("invalid record offset")       // record start inside a page header
	ErrZeroLength        = errors.New("zero record length")          // xl_tot_len == 0: zeroed space, the usual end of WAL
	ErrRecordLength      = errors.New("invalid record length")       // xl_tot_len < 24 or too long
	ErrRmgrID            = errors.New("invalid resource manager id") // xl_rmid
	ErrPrevLink          = errors.New("incorrect prev-link")         // xl_prev
	ErrChecksum          = errors.New("record checksum mismatch")    // CRC-32C
	ErrSegmentNotFound   = errors.New("segment not found")           // a segment the stream needs is missing
	ErrTruncated         = errors.New("truncated segment file")      // file shorter than the segment size
	ErrNoValidRecord     = errors.New("no valid record found")       // XLogFindNextRecord failed
	ErrBadSegmentHeader  = errors.New("invalid segment header")      // first page unusable to learn the geometry
	ErrOpenFile          = errors.New("could not open segment file") // the source could not open (or decompress) a file
)

// errEndOfRange says that reading reached Options.End; it never leaves the
// package: Next and Resync return io.EOF instead.
var errEndOfRange = errors.New("end of requested range reached")

// Error is a positioned WAL reading error. It carries both the position where
// the problem was detected and PostgreSQL's own message for it, in the wording
// of the version that wrote the WAL, so that the CLI can print pg_waldump's line.
type Error struct {
	File   string // segment file name (or path) where the problem was found
	Offset int64  // byte offset in that file
	LSN    LSN    // WAL position of the problem (record or page start)
	// RecordLSN is the last record read successfully before the problem
	// (pg_waldump's "error in WAL record at"), InvalidLSN if none.
	RecordLSN LSN
	Msg       string // xlogreader's message, e.g. "invalid record length at 0/2011588: expected at least 24, got 0"
	Err       error  // one of the sentinels
	// Stale is set for ErrPageAddr when the page address is older than the
	// expected one: a recycled segment, the usual end of WAL.
	Stale bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (file %s, offset %d, LSN %s)", e.Msg, e.File, e.Offset, e.LSN)
}

func (e *Error) Unwrap() error { return e.Err }

// IsEndOfWAL reports whether err is one of the conditions that normally mark
// the end of written WAL rather than damage: zeroed space where the next record
// or page would be, a recycled segment whose page address is older than
// expected, or the end of the available files (io.EOF). A nil error is no
// end.
func IsEndOfWAL(err error) bool {
	if err == nil {
		return false
	}
	if err == io.EOF {
		return true
	}
	if errors.Is(err, ErrNoValidRecord) {
		return false // nothing valid where reading starts is no end (Reader.notFound)
	}
	if errors.Is(err, ErrZeroLength) || errors.Is(err, ErrZeroPage) {
		return true
	}
	if e, ok := errors.AsType[*Error](err); ok && errors.Is(e.Err, ErrPageAddr) {
		return e.Stale
	}
	return false
}
