package analyze

import (
	"io"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
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
	WalLevel        int // from PARAMETER_CHANGE or 17+ checkpoints, -1 unknown
	PageSize        uint32
	Err             error // how the stream ended, if not cleanly
}

// ProfileStream reads a stream and profiles it.
func ProfileStream(src xlog.Source, opts xlog.Options, blockSize int) (*Profile, error) {
	opts.HeadersOnly = false
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p := &Profile{WalLevel: -1, PageSize: r.PageSize()}
	dec := decode.NewDecoder(blockSize)
	n := 0
	for {
		rec, err := r.Next()
		if err != nil {
			if err != io.EOF && !xlog.IsEndOfWAL(err) {
				p.Err = err
			}
			p.End = r.EndLSN()
			return p, nil
		}
		d, err := dec.Decode(rec, 0)
		if err != nil {
			p.Err = err
			p.End = rec.LSN
			return p, nil
		}
		if n == 0 {
			p.Start = rec.LSN
		}
		n++
		p.Stats.Add(d)
		if cp, ok := rmgr.Checkpoint(d); ok {
			if p.FirstRedo == 0 {
				p.FirstRedo = cp.Redo
				// Right after a checkpoint: its redo point is at or before
				// the start, or among the first 16 records.
				p.AfterCheckpoint = cp.Redo <= p.Start || n <= 16
			}
			if cp.WalLevel >= 0 {
				p.WalLevel = cp.WalLevel
			}
		}
		if pc, ok := rmgr.ParameterChange(d); ok {
			p.WalLevel = int(pc.WalLevel)
		}
	}
}
