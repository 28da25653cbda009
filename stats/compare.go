package stats

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// Profile is what compare needs of one stream: its statistics per record
// type, and whether it began right after a checkpoint (its first redo point
// lies within the first few records), which decides how many page images its
// first changes carry.
type Profile struct {
	Stats           Stats
	Start, End      xlog.LSN
	FirstRedo       xlog.LSN // 0 if the stream has no checkpoint
	AfterCheckpoint bool
	WalLevel        xlog.WalLevel // from PARAMETER_CHANGE or 17+ checkpoints, WalLevelUnknown if neither
	PageSize        uint32
	Err             error // how the stream ended, if not cleanly
}

// ProfileStream reads a stream, in parallel spans on workers cores (0: every
// core), and profiles it.
func ProfileStream(src xlog.Source, opts xlog.Options, blockSize, workers int) (*Profile, error) {
	opts.HeadersOnly = false
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: workers})
	if err != nil {
		return nil, err
	}
	p := &Profile{WalLevel: xlog.WalLevelUnknown, PageSize: s.PageSize()}
	// A span's part: its statistics, its first checkpoint's redo point and
	// index among the span's records, the last wal_level it states.
	type part struct {
		dec      *decode.Decoder
		stats    Stats
		n        int
		redo     xlog.LSN
		redoAt   int
		walLevel xlog.WalLevel
	}
	records := 0
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(stream.SpanInfo) *part {
			return &part{dec: decode.NewDecoder(blockSize), walLevel: xlog.WalLevelUnknown}
		},
		Record: func(q *part, rec *xlog.Record) error {
			d, err := q.dec.Decode(rec)
			if err != nil {
				return err
			}
			q.n++
			q.stats.Add(d)
			if cp, ok := rmgr.Checkpoint(d); ok {
				if q.redo == 0 {
					q.redo, q.redoAt = cp.Redo, q.n
				}
				if cp.WalLevel >= xlog.WalLevelMinimal {
					q.walLevel = cp.WalLevel
				}
			}
			if pc, ok := rmgr.ParameterChange(d); ok {
				q.walLevel = pc.WalLevel
			}
			return nil
		},
		Merge: func(q *part) error {
			p.Stats.Merge(&q.stats)
			if p.FirstRedo == 0 && q.redo != 0 {
				p.FirstRedo = q.redo
				// Right after a checkpoint: its redo point is at or before
				// the start, or among the first 16 records.
				p.AfterCheckpoint = q.redo <= p.Stats.Start || records+q.redoAt <= 16
			}
			if q.walLevel != xlog.WalLevelUnknown {
				p.WalLevel = q.walLevel
			}
			records += q.n
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	p.Start, p.End = p.Stats.Start, res.End
	if res.Err != nil && !xlog.IsEndOfWAL(res.Err) {
		p.Err = res.Err
	}
	return p, nil
}
