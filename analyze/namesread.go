package analyze

import (
	"github.com/walscope/walscope/decode"
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
