package names

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// LearnNames reads src (from opts.Start to opts.End, timelines as opts
// says) with one reader in WAL order, as WALNames needs (a pg_class update
// is rebuilt from the tuple an earlier record or image showed), and returns
// the relation names the WAL carries. It decodes, and checks the CRC of,
// only the records names come from (NamesFrom): it is meant to run beside
// another reading of the stream that checks every record, and it stops
// quietly where a record it needs is damaged or does not decode. Its error
// is a setup error (the stream cannot be opened).
func LearnNames(src xlog.Source, opts xlog.Options, blockSize int) (*WALNames, error) {
	opts.SkipCRC = true
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: 1})
	if err != nil {
		return nil, err
	}
	dec := decode.NewDecoder(blockSize)
	w := NewWALNames(decode.NewDecoder(blockSize))
	_, err = stream.Run(s, stream.Job[*WALNames]{
		NewPart: func(stream.SpanInfo) *WALNames { return w },
		Record: func(w *WALNames, rec *xlog.Record) error {
			if !NamesFrom(rec.Header.Rmid) {
				return nil
			}
			if xlog.RecordCRC(rec.Raw) != rec.Header.CRC {
				return stream.ErrStop // damaged here: the other reading reports it
			}
			d, err := dec.Decode(rec)
			if err != nil {
				return stream.ErrStop
			}
			w.Add(d)
			return nil
		},
		Merge: func(*WALNames) error { return nil },
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// NamesReading is LearnNames running on a goroutine of its own, beside
// another reading of the same stream (StartNames).
type NamesReading struct {
	done  chan struct{}
	names *WALNames
	err   error
}

// StartNames starts LearnNames on its own goroutine and returns at once;
// Wait gives its result. Wait must be called before src is closed.
func StartNames(src xlog.Source, opts xlog.Options, blockSize int) *NamesReading {
	n := &NamesReading{done: make(chan struct{})}
	go func() {
		defer close(n.done)
		n.names, n.err = LearnNames(src, opts, blockSize)
	}()
	return n
}

// Wait waits for the names and returns them (nil, with the error, if the
// stream could not be opened). A nil NamesReading gives nil names.
func (n *NamesReading) Wait() (*WALNames, error) {
	if n == nil {
		return nil, nil
	}
	<-n.done
	return n.names, n.err
}

// XLOGPassWithNames is XLOGPass (skipCRC) and LearnNames in one reading of
// the stream: its spans are read in parallel, each keeping a copy of the
// few records that can name a relation under the default catalog files
// (namesSpan), which are then learnt from in WAL order. A second, single
// reader of the whole WAL cost the export a quarter of its CPU time
// (scripts/bench-export.sh, issue 19). It returns what both return; when
// the WAL moves pg_class or pg_namespace to another file (VACUUM FULL of a
// catalog), which records matter is only known in order, and the names
// are learnt by LearnNames instead.
func XLOGPassWithNames[T any](src xlog.Source, opts xlog.Options, blockSize, workers, spanBytes int, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, names *WALNames, err error) {
	type part struct {
		t     T
		names namesSpan
	}
	// Whole records (no HeadersOnly): catalog images span pages. The
	// checkpoints' part skips the records HeadersOnly would have cut, as
	// XLOGPass does.
	whole := opts
	whole.HeadersOnly, whole.SkipCRC = false, true
	all, start, end, err := pass.Run(src, whole, blockSize, workers, spanBytes, func(p *part, rec *xlog.Record, dec *decode.Decoder) error {
		h := &rec.Header
		forNames := NamesFrom(h.Rmid) && !p.names.stopped
		forXLOG := h.Rmid == xlog.RmgrXLOG && !cutByHeadersOnly(rec)
		if !forNames && !forXLOG {
			return nil
		}
		crcOK := xlog.RecordCRC(rec.Raw) == h.CRC
		var d *decode.Record
		var derr error
		if crcOK {
			d, derr = dec.Decode(rec)
		}
		if forNames {
			p.names.see(rec, d, crcOK && derr == nil)
		}
		if forXLOG {
			if !crcOK {
				return pass.ErrStop // damaged here: the reading ends here too
			}
			if derr == nil {
				add(&p.t, d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, nil, err
	}
	parts = make([]T, len(all))
	for i := range all {
		parts[i] = all[i].t
	}
	names = NewWALNames(decode.NewDecoder(blockSize))
	dec := decode.NewDecoder(blockSize)
	for i := range all {
		s := &all[i].names
		for j := range s.recs {
			d, err := dec.Decode(&s.recs[j])
			if err != nil { // decoded once already: cannot happen
				return parts, start, end, nil, err
			}
			names.Add(d)
			if names.movedCatalogs() {
				names, err = LearnNames(src, opts, blockSize)
				return parts, start, end, names, err
			}
		}
		if s.haveVersion {
			names.version = s.version
		}
		if s.stopped {
			break // LearnNames stops at the first damaged record
		}
	}
	return parts, start, end, names, nil
}

// cutByHeadersOnly reports whether Options.HeadersOnly would have kept
// only part of rec: it spans pages and is longer than HeadersOnlyKeep.
func cutByHeadersOnly(rec *xlog.Record) bool {
	avail := rec.PageSize - uint32(uint64(rec.LSN)%uint64(rec.PageSize))
	return rec.Header.TotLen > avail && rec.Header.TotLen > xlog.HeadersOnlyKeep
}

// namesSpan is what one span of XLOGPassWithNames keeps for WALNames: the
// records of NamesFrom's resource managers, as LearnNames reads them,
// that WALNames.Add learns from while pg_class, pg_namespace and
// pg_database are in their default files (those touching a block of 1259
// or 2615, or of the shared 1262, and the relation mapper's), copied; and whether LearnNames would stop in it.
type namesSpan struct {
	recs        []xlog.Record
	version     xlog.Version
	haveVersion bool
	stopped     bool
}

// see takes one record of NamesFrom's resource managers, decoded as d
// when ok (its CRC right and it decodes).
func (s *namesSpan) see(rec *xlog.Record, d *decode.Record, ok bool) {
	if !ok {
		s.stopped = true // LearnNames stops here
		return
	}
	s.version, s.haveVersion = rec.Version, true
	keep := rec.Header.Rmid == xlog.RmgrRelMap
	for i := range d.Blocks {
		b := &d.Blocks[i]
		if b.Fork() != decode.ForkMain {
			continue
		}
		if b.Rel.DBOID != 0 && (b.Rel.RelNumber == relationRelationID || b.Rel.RelNumber == namespaceRelationID) ||
			b.Rel.DBOID == 0 && b.Rel.RelNumber == databaseRelationID {
			keep = true
			break
		}
	}
	if keep {
		c := *rec
		c.Raw = append([]byte(nil), rec.Raw...)
		s.recs = append(s.recs, c)
	}
}

// movedCatalogs reports whether w has learnt that pg_class or pg_namespace
// of a database, or pg_database, is in a file other than their default ones.
func (w *WALNames) movedCatalogs() bool {
	if w.dbFile != 0 && w.dbFile != databaseRelationID {
		return true
	}
	for _, f := range w.classFile {
		if f != relationRelationID {
			return true
		}
	}
	for _, f := range w.nspFile {
		if f != namespaceRelationID {
			return true
		}
	}
	return false
}
