package incident

import (
	"errors"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// ReadEvents reads the stream s into Events on the parallel engine: each
// span into a part of its own, merged in WAL order. A record that does not
// decode ends the reading there (Result.Err is then an *xlog.Error naming
// its file, offset and LSN, wrapping the *decode.Error). The error is a
// setup error.
func ReadEvents(s *stream.Stream, cfg EventsConfig, blockSize int) (*Events, stream.Result, error) {
	root := NewEvents(cfg)
	type part struct {
		dec *decode.Decoder
		ev  *Events
	}
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(info stream.SpanInfo) *part {
			p := &part{dec: decode.NewDecoder(blockSize), ev: root}
			if !info.Whole {
				p.ev = root.NewPart()
			}
			return p
		},
		Record: func(p *part, rec *xlog.Record) error {
			d, err := p.dec.Decode(rec)
			if err != nil {
				return decodeFailure(rec, err)
			}
			p.ev.Add(d)
			return nil
		},
		Merge: func(p *part) error {
			if p.ev != root {
				root.Merge(p.ev)
			}
			return nil
		},
	})
	return root, res, err
}

// decodeFailure positions a record's decoding error as the reader positions
// its own: file, offset and LSN of the record.
func decodeFailure(rec *xlog.Record, err error) error {
	de, ok := errors.AsType[*decode.Error](err)
	if !ok {
		return err
	}
	return &xlog.Error{File: rec.Segment, Offset: int64(uint64(rec.LSN) % uint64(rec.SegSize)),
		LSN: rec.LSN, RecordLSN: rec.LSN, Err: err, Msg: de.Msg}
}
