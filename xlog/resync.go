package xlog

import (
	"errors"
	"io"
)

// Resync recovers from the error the reader stopped at, for tools that report
// every problem rather than the first (walscope verify). It moves to the
// first page after the failure whose header is valid and tells where a
// record starts (past any continuation data, by xlp_rem_len); reading goes on
// from there with the prev-link check relaxed for the first record, as after
// positioning. It returns the LSN where reading resumes.
//
// Pages with invalid headers are passed over silently: the caller reports the
// damaged stretch from the failure to the resume point. A problem with a whole
// file met on the way (a missing segment, a truncated file, a file whose first
// page is unusable: another system, a recycled file, an unknown version) is
// returned as that file's positioned error, and the next call goes on after
// that file. Resync returns io.EOF when no valid page is left.
func (r *Reader) Resync() (LSN, error) {
	ps := LSN(r.pageSize)
	ss := LSN(r.segSize)
	trigger := r.err
	var from LSN
	switch {
	case r.resyncFrom != 0:
		from = r.resyncFrom
	case trigger == nil:
		return r.next, nil
	default:
		e, ok := trigger.(*Error)
		if !ok {
			return 0, trigger
		}
		from = e.LSN - e.LSN%ps + ps
	}
	r.resyncFrom = 0
	for p := from; ; {
		page, err := r.readPage(p, int(ps))
		if err == nil {
			h, _ := ParsePageHeader(page)
			hs := LSN(h.Size())
			start := p + hs
			if h.Info&PageFirstIsContRecord != 0 && h.Info&PageFirstIsOverwriteContRecord == 0 {
				if Maxalign(h.RemLen) >= r.pageSize-uint32(hs) {
					p += ps
					continue
				}
				start += LSN(Maxalign(h.RemLen))
			}
			// Accept the page only if a valid record starts where its header
			// says: a damaged xlp_rem_len or flag must not send the reader
			// into the middle of a record.
			r.prev, r.started = InvalidLSN, true
			if _, err := r.readRecord(start, true); err != nil {
				p += ps
				continue
			}
			r.next, r.prev, r.err = start, InvalidLSN, nil
			return start, nil
		}
		if err == io.EOF || errors.Is(err, errEndOfRange) {
			r.err = io.EOF
			return 0, io.EOF
		}
		segno := uint64(p / ss)
		fileLevel := errors.Is(err, ErrSegmentNotFound) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrOpenFile) ||
			r.seg.open && r.seg.segno == segno && r.seg.bad != nil
		if !fileLevel {
			p += ps
			continue
		}
		next := (p/ss + 1) * ss
		if sameFileProblem(err, trigger, ss) {
			p = next
			continue
		}
		r.resyncFrom, r.err = next, err
		return 0, err
	}
}

// sameFileProblem reports whether a and b are the same problem of the same
// segment file.
func sameFileProblem(a, b error, ss LSN) bool {
	ea, ok1 := a.(*Error)
	eb, ok2 := b.(*Error)
	return ok1 && ok2 && ea.LSN/ss == eb.LSN/ss && ea.Err == eb.Err
}
