package rows

import (
	"encoding/binary"
	"fmt"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/tuple"
)

// insertedToast detoasts the values whose chunks the transaction inserted
// (invisible as of just before its commit, so not in table.ToastIndex):
// it keeps where each chunk lies (20 bytes a chunk, from the changes as
// the build reads them), not its bytes, and reads the chunks from the
// replay's pages when a value is fetched. Just before the commit each
// such chunk is still where its insert put it, as it was: a tuple the
// transaction inserted is not pruned before it ends (the chunks of a
// rolled-back subtransaction are no changes), unless a TRUNCATE in place
// of the TOAST table (of a table the transaction made: heap_truncate_one_rel)
// cut it off: its bytes are then kept from the page as it was cut
// (ChangeCut), since later chunks may lie where it was. Those are the only
// chunk bytes held in memory: a transaction's values cut by such a
// TRUNCATE.
type insertedToast struct {
	r        *replay.Replay
	maxChunk int
	chunks   map[toastValue][]toastChunkAt
	// the TOAST files chunks were inserted into (few), indexed to keep
	// toastChunkAt small
	files  []decode.RelFileLocator
	fileOf map[decode.RelFileLocator]int32
	// where: the chunk at each place, until a truncation cuts it off
	// (made at the first truncation, nil before: most transactions cut
	// none); held: the chunk tuples cut off (toastChunkAt.held - 1)
	where map[toastChunkPlace]toastChunkRef
	held  [][]byte

	pages   table.PageReader
	vals    []tuple.Value
	parts   []tuple.Chunk
	scratch []byte
}

type toastValue struct{ rel, value uint32 }

type toastChunkAt struct {
	toastChunkPlace
	held int32 // 0, or 1 + the index of its tuple in held (cut off)
}

// toastChunkPlace is where a chunk was inserted.
type toastChunkPlace struct {
	file int32 // index into files
	blk  uint32
	off  uint16
}

type toastChunkRef struct {
	value toastValue
	i     int // into chunks[value]
}

var _ tuple.Detoaster = (*insertedToast)(nil)

func newInsertedToast(r *replay.Replay) *insertedToast {
	return &insertedToast{r: r, maxChunk: tuple.MaxChunkSize(r.BlockSize()), chunks: map[toastValue][]toastChunkAt{},
		fileOf: map[decode.RelFileLocator]int32{}, pages: table.PageReader{R: r}}
}

// add notes a chunk tuple the transaction inserted into TOAST relation
// relid (file, ctid); a tuple that is not a chunk is an error.
func (t *insertedToast) add(relid uint32, file decode.RelFileLocator, blk uint32, off uint16, tup []byte) error {
	var err error
	t.vals, _, err = tuple.Deform(t.vals[:0], tup, tuple.ToastDesc)
	if err != nil {
		return err
	}
	if len(t.vals) < 3 || t.vals[0].IsNull() {
		return fmt.Errorf("toast relation %d: chunk with a NULL column: %w", relid, tuple.ErrCorrupt)
	}
	f, ok := t.fileOf[file]
	if !ok {
		f = int32(len(t.files))
		t.files = append(t.files, file)
		t.fileOf[file] = f
	}
	k := toastValue{relid, binary.LittleEndian.Uint32(t.vals[0].Raw)}
	place := toastChunkPlace{f, blk, off}
	if t.where != nil {
		t.where[place] = toastChunkRef{k, len(t.chunks[k])}
	}
	t.chunks[k] = append(t.chunks[k], toastChunkAt{toastChunkPlace: place})
	return nil
}

// cut follows the truncation of a TOAST file in place (a ChangeCut): page
// is its block blk as the truncation cut it off. The chunks noted there
// are kept from it.
func (t *insertedToast) cut(file decode.RelFileLocator, blk uint32, page []byte) {
	f, ok := t.fileOf[file]
	if !ok {
		return
	}
	if t.where == nil {
		t.where = map[toastChunkPlace]toastChunkRef{}
		for k, at := range t.chunks {
			for i, c := range at {
				if c.held == 0 {
					t.where[c.toastChunkPlace] = toastChunkRef{k, i}
				}
			}
		}
	}
	items, err := tuple.PageItems(nil, page)
	if err != nil {
		return // Fetch says which chunk it cannot read
	}
	for _, it := range items {
		place := toastChunkPlace{f, blk, it.Offset}
		ref, ok := t.where[place]
		if !ok {
			continue
		}
		delete(t.where, place)
		t.held = append(t.held, append([]byte(nil), it.Tuple...))
		t.chunks[ref.value][ref.i].held = int32(len(t.held))
	}
}

// Fetch implements tuple.Detoaster: the value's chunks read back from the
// pages, deformed and assembled as toast_fetch_datum does.
func (t *insertedToast) Fetch(toastRelid, valueID uint32, size int) ([]byte, error) {
	at, ok := t.chunks[toastValue{toastRelid, valueID}]
	if !ok {
		return nil, fmt.Errorf("toast value %d in relation %d: no chunk: %w", valueID, toastRelid, tuple.ErrNoToast)
	}
	t.parts, t.scratch = t.parts[:0], t.scratch[:0]
	type span struct{ seq, start, end int }
	var spans []span
	for _, c := range at {
		var tup []byte
		var err error
		if c.held > 0 {
			tup = t.held[c.held-1]
		} else {
			tup, err = t.pages.TupleAt(t.files[c.file], c.blk, c.off)
		}
		if err != nil {
			return nil, fmt.Errorf("toast value %d in relation %d, chunk at (%d,%d): %w", valueID, toastRelid, c.blk, c.off, err)
		}
		if t.vals, _, err = tuple.Deform(t.vals[:0], tup, tuple.ToastDesc); err != nil {
			return nil, fmt.Errorf("toast value %d in relation %d, chunk at (%d,%d): %w", valueID, toastRelid, c.blk, c.off, err)
		}
		if id := t.vals[0]; id.IsNull() || binary.LittleEndian.Uint32(id.Raw) != valueID {
			// a chunk of another value where this one's was
			return nil, fmt.Errorf("toast value %d in relation %d, chunk at (%d,%d): a chunk of another value there: %w", valueID, toastRelid, c.blk, c.off, tuple.ErrCorrupt)
		}
		seq, data := t.vals[1], t.vals[2]
		if seq.IsNull() || data.IsNull() || data.Form != tuple.Short && data.Form != tuple.Long {
			return nil, fmt.Errorf("toast value %d in relation %d, chunk at (%d,%d): not a plain chunk: %w", valueID, toastRelid, c.blk, c.off, tuple.ErrCorrupt)
		}
		// the page buffer is reused: the chunk's bytes are copied out
		start := len(t.scratch)
		t.scratch = append(t.scratch, data.Payload()...)
		spans = append(spans, span{int(int32(binary.LittleEndian.Uint32(seq.Raw))), start, len(t.scratch)})
	}
	for _, s := range spans {
		t.parts = append(t.parts, tuple.Chunk{Seq: int32(s.seq), Data: t.scratch[s.start:s.end]})
	}
	held := len(t.scratch)
	out, err := tuple.AssembleChunks(make([]byte, 0, min(size, held)), valueID, size, t.maxChunk, t.parts)
	if err != nil {
		return nil, fmt.Errorf("toast relation %d: %w", toastRelid, err)
	}
	return out, nil
}
