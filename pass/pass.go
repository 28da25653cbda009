package pass

import (
	"errors"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// First passes: what an analysis must know before its own reading (redo
// points, wal_level, data lengths), gathered on every core in parts of the
// caller's type T, one per span, returned in WAL order. They report nothing
// of how the WAL ends — the reading that follows does — and return the
// first record's LSN and where they stopped: the end of the WAL, or its
// first problem. Their error is a setup error (the stream cannot be opened).

// XLOGPass is a first pass over the XLOG records (checkpoints, parameter
// changes), headers only, each decoded XLOG record handed to add with its
// span's T. With skipCRC only the XLOG records' CRC is checked (for a pass
// that a checking reading follows); without, every record's is, and the
// pass stops where a full reading stops.
func XLOGPass[T any](src xlog.Source, opts xlog.Options, blockSize, workers, spanBytes int, skipCRC bool, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	// Checkpoint records are far below HeadersOnlyKeep: kept whole.
	opts.HeadersOnly, opts.SkipCRC = true, skipCRC
	return Run(src, opts, blockSize, workers, spanBytes, func(part *T, rec *xlog.Record, dec *decode.Decoder) error {
		if rec.Header.Rmid != xlog.RmgrXLOG || len(rec.Raw) != int(rec.Header.TotLen) {
			return nil // (an XLOG record cut short is a full-page image: none this pass wants)
		}
		if skipCRC && xlog.RecordCRC(rec.Raw) != rec.Header.CRC {
			return ErrStop // damaged here: the reading ends here too
		}
		if d, err := dec.Decode(rec); err == nil {
			add(part, d)
		}
		return nil
	})
}

// RecordPass is a first pass over every record, decoded, stopping where a
// single reader would (a damaged record, or one that does not decode).
func RecordPass[T any](src xlog.Source, opts xlog.Options, blockSize, workers, spanBytes int, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	return Run(src, opts, blockSize, workers, spanBytes, func(part *T, rec *xlog.Record, dec *decode.Decoder) error {
		d, err := dec.Decode(rec)
		if err != nil {
			return err
		}
		add(part, d)
		return nil
	})
}

// ErrStop ends a first pass at a record.
var ErrStop = errors.New("first pass stops here")

// Run reads the stream on the engine, handing each record to each with
// its span's T and decoder; an error from each ends the reading there.
func Run[T any](src xlog.Source, opts xlog.Options, blockSize, workers, spanBytes int, each func(*T, *xlog.Record, *decode.Decoder) error) (parts []T, start, end xlog.LSN, err error) {
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: workers, SpanBytes: spanBytes})
	if err != nil {
		return nil, 0, 0, err
	}
	type part struct {
		t   T
		dec *decode.Decoder
	}
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(stream.SpanInfo) *part { return &part{dec: decode.NewDecoder(blockSize)} },
		Record:  func(p *part, rec *xlog.Record) error { return each(&p.t, rec, p.dec) },
		Merge: func(p *part) error {
			parts = append(parts, p.t)
			return nil
		},
	})
	if err != nil {
		return nil, 0, 0, err
	}
	return parts, res.First, res.End, nil
}
