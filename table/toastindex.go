package table

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/tuple"
)

// ToastIndex detoasts the external values of a relation as of the target
// from its TOAST relation's visible chunks, keeping where each chunk lies
// (16 bytes: value, sequence, block, line pointer) rather than its bytes:
// Fetch reads a value's chunks from the replay's pages (held in bounded
// memory, spilled beyond) when it is detoasted. A TOAST relation of many
// gigabytes then costs 1/128 of its size in memory (a 2 kB chunk per 16
// bytes), where holding the chunks (tuple.ToastStore) cost all of it.
type ToastIndex struct {
	loc      decode.RelFileLocator
	relid    uint32
	maxChunk int
	chunks   []toastChunkAt // by value, then sequence
	// Extra, when set, is asked for the values of other TOAST relations
	// and those the index does not hold (rows: the chunks a transaction
	// inserted, invisible as of before its commit).
	Extra tuple.Detoaster

	pages   PageReader
	vals    []tuple.Value
	parts   []tuple.Chunk
	scratch []byte
}

// toastChunkAt is where one chunk of a TOAST value lies.
type toastChunkAt struct {
	value uint32
	seq   int32
	blk   uint32
	off   uint16
}

// NewToastIndex reads the visible tuples of TOAST relation relid (its file
// loc) as of the replay's target. A tuple that is not a chunk is an error
// (*RowError naming it).
func NewToastIndex(r *replay.Replay, loc decode.RelFileLocator, relid uint32, name string) (*ToastIndex, error) {
	x := &ToastIndex{loc: loc, relid: relid, maxChunk: tuple.MaxChunkSize(r.BlockSize()), pages: PageReader{R: r}}
	err := r.VisibleTuples(loc, func(blk uint32, off uint16, tup []byte) error {
		id, seq, _, err := x.chunk(tup)
		if err != nil {
			return &RowError{Block: blk, Offset: off, Err: fmt.Errorf("TOAST table %s: %w", name, err)}
		}
		x.chunks = append(x.chunks, toastChunkAt{value: id, seq: seq, blk: blk, off: off})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// physical order is mostly value order already
	if !sort.SliceIsSorted(x.chunks, x.less) {
		sort.Slice(x.chunks, x.less)
	}
	return x, nil
}

func (x *ToastIndex) less(i, j int) bool {
	a, b := x.chunks[i], x.chunks[j]
	return a.value < b.value || a.value == b.value && a.seq < b.seq
}

// Chunks is how many chunks the index holds.
func (x *ToastIndex) Chunks() int { return len(x.chunks) }

// chunk deforms a TOAST tuple (chunk_id, chunk_seq, chunk_data) as
// tuple.ToastStore.AddTuple does; data is a view into tup.
func (x *ToastIndex) chunk(tup []byte) (id uint32, seq int32, data []byte, err error) {
	x.vals, _, err = tuple.Deform(x.vals[:0], tup, tuple.ToastDesc)
	if err != nil {
		return 0, 0, nil, err
	}
	v := x.vals
	if v[0].IsNull() || v[1].IsNull() || v[2].IsNull() {
		return 0, 0, nil, fmt.Errorf("toast relation %d: chunk with a NULL column: %w", x.relid, tuple.ErrCorrupt)
	}
	id = binary.LittleEndian.Uint32(v[0].Raw)
	if v[2].Form != tuple.Short && v[2].Form != tuple.Long {
		return 0, 0, nil, fmt.Errorf("toast relation %d: found toasted toast chunk (%s) for value %d: %w", x.relid, v[2].Form, id, tuple.ErrCorrupt)
	}
	return id, int32(binary.LittleEndian.Uint32(v[1].Raw)), v[2].Payload(), nil
}

// Fetch implements tuple.Detoaster: value valueID of relation toastRelid,
// its chunks read from their pages and checked as the server checks them
// (tuple.AssembleChunks).
func (x *ToastIndex) Fetch(toastRelid, valueID uint32, size int) ([]byte, error) {
	i := sort.Search(len(x.chunks), func(i int) bool { return x.chunks[i].value >= valueID })
	if toastRelid != x.relid || i == len(x.chunks) || x.chunks[i].value != valueID {
		if x.Extra != nil {
			return x.Extra.Fetch(toastRelid, valueID, size)
		}
		return nil, fmt.Errorf("toast value %d in relation %d: no chunk: %w", valueID, toastRelid, tuple.ErrNoToast)
	}
	x.parts, x.scratch = x.parts[:0], x.scratch[:0]
	var spans [][2]int // each part's bytes in scratch (it grows: sliced after)
	for ; i < len(x.chunks) && x.chunks[i].value == valueID; i++ {
		c := x.chunks[i]
		tup, err := x.pages.TupleAt(x.loc, c.blk, c.off)
		if err != nil {
			return nil, fmt.Errorf("toast value %d in relation %d, chunk %d at (%d,%d): %w", valueID, toastRelid, c.seq, c.blk, c.off, err)
		}
		id, seq, data, err := x.chunk(tup)
		if err != nil {
			return nil, err
		}
		if id != valueID || seq != c.seq {
			return nil, fmt.Errorf("toast value %d in relation %d: the tuple at (%d,%d) is chunk %d of value %d: %w", valueID, toastRelid, c.blk, c.off, seq, id, tuple.ErrCorrupt)
		}
		spans = append(spans, [2]int{len(x.scratch), len(x.scratch) + len(data)})
		x.scratch = append(x.scratch, data...)
		x.parts = append(x.parts, tuple.Chunk{Seq: seq})
	}
	for k, s := range spans {
		x.parts[k].Data = x.scratch[s[0]:s[1]]
	}
	out, err := tuple.AssembleChunks(make([]byte, 0, min(size, len(x.scratch))), valueID, size, x.maxChunk, x.parts)
	if err != nil {
		return nil, fmt.Errorf("toast relation %d: %w", toastRelid, err)
	}
	return out, nil
}

// PageReader reads tuples by ctid from a replay's pages, the last page
// read kept (a value's chunks, or a table's rows in physical order, are
// mostly on the page read before).
type PageReader struct {
	R      *replay.Replay
	page   []byte
	file   decode.RelFileLocator
	blk    uint32
	havePg bool
}

// TupleAt is the tuple at line pointer off of block blk of file's main
// fork, a view into the page held until the next call.
func (p *PageReader) TupleAt(file decode.RelFileLocator, blk uint32, off uint16) ([]byte, error) {
	if !p.havePg || p.file != file || p.blk != blk {
		var err error
		p.havePg = false
		if p.page, _, err = p.R.Page(p.page[:0], file, decode.ForkMain, blk); err != nil {
			return nil, err
		}
		p.file, p.blk, p.havePg = file, blk, true
	}
	return tuple.ItemAt(p.page, off)
}

var _ tuple.Detoaster = (*ToastIndex)(nil)
