package main

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/walscope/walscope/xlog"
)

// shardSpec is --shard I/N: shard I (from 0) of N.
type shardSpec struct{ i, n int }

func parseShard(s string) (shardSpec, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return shardSpec{}, usageErr("invalid --shard %q: want I/N with 0 <= I < N (e.g. $JOB_COMPLETION_INDEX/4)", s)
	}
	return shardSpec{i, n}, nil
}

// applyShard narrows in to shard sh of the archive's segments: the
// distinct segment numbers of the range read, cut into N runs of
// consecutive segments of (nearly) equal count. Shards meet at segment
// boundaries: a record that crosses one is read by the shard it starts in
// (its End is set past that record, and the next shard's reading, starting
// at the boundary, skips the record's continuation), so N shards read each
// record once, with no coordination between them. ok is false for a shard with no segment (more
// shards than segments).
func applyShard(in *input, sh shardSpec) (ok bool, err error) {
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return false, readerSetupError(err)
	}
	segSize := uint64(r.SegmentSize())
	first := uint64(r.Start()) / segSize
	last := uint64(r.LastSegmentEnd())/segSize - 1
	if in.opts.End != 0 && in.opts.End < r.LastSegmentEnd() {
		last = uint64(in.opts.End-1) / segSize
	}
	r.Close()
	seen := map[uint64]bool{}
	var segs []uint64
	for _, f := range in.src.Segments() {
		n := f.Name.SegNo(uint32(segSize))
		if n < first || n > last || seen[n] {
			continue
		}
		seen[n] = true
		segs = append(segs, n)
	}
	sort.Slice(segs, func(a, b int) bool { return segs[a] < segs[b] })
	lo, hi := sh.i*len(segs)/sh.n, (sh.i+1)*len(segs)/sh.n
	if lo == hi {
		return false, nil
	}
	if sh.i > 0 {
		in.opts.Start = xlog.LSN(segs[lo] * segSize)
	}
	if hi < len(segs) {
		boundary := xlog.LSN(segs[hi] * segSize)
		end, err := endOfLastRecordBefore(in, segs[lo:hi], segSize, boundary)
		if err != nil {
			return false, err
		}
		in.opts.End = max(boundary, end)
		last := segs[hi-1]
		in.shardLast = &last
		// The shard's end is a requested end, not the end of the WAL:
		// reaching it is silent, as pg_waldump's ENDSEG.
		in.pgMode = true
	}
	return true, nil
}

// endOfLastRecordBefore returns where the last record that starts before
// boundary ends (past boundary when it crosses it), reading the shard's
// last segments backwards until one holds the start of a record; 0 if none
// does.
func endOfLastRecordBefore(in *input, segs []uint64, segSize uint64, boundary xlog.LSN) (xlog.LSN, error) {
	for k := len(segs) - 1; k >= 0; k-- {
		opts := in.opts
		opts.Start, opts.End, opts.StopAt = xlog.LSN(segs[k]*segSize), 0, boundary
		opts.HeadersOnly, opts.SkipCRC = true, true
		r, err := xlog.NewReader(in.src, opts)
		if err != nil {
			return 0, readerSetupError(err)
		}
		var end xlog.LSN
		for {
			rec, err := r.Next()
			if err != nil {
				break // the end of the segments, or of valid WAL: the export reports it
			}
			end = rec.EndLSN
		}
		r.Close()
		if end != 0 {
			return end, nil
		}
	}
	return 0, nil
}

// errEmptyShard is resolveInput's answer for a shard with no segment.
var errEmptyShard = errors.New("no segment to read in this shard (more shards than segments)")
