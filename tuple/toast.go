package tuple

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Detoaster fetches the stored bytes of an external value: its chunks'
// data concatenated, size bytes (VARATT_EXTERNAL_GET_EXTSIZE; compressed
// values keep va_tcinfo in front, as toast_save_datum stored them).
// Value.Detoast decompresses them.
type Detoaster interface {
	Fetch(toastRelid, valueID uint32, size int) ([]byte, error)
}

// MaxChunkSize is TOAST_MAX_CHUNK_SIZE for a block size (heaptoast.h,
// tuptoaster.h before 13; the same formula from 10 to 18): 1996 for 8 kB.
//
//	EXTERN_TUPLE_MAX_SIZE = MAXALIGN_DOWN((BLCKSZ - MAXALIGN(SizeOfPageHeaderData
//	                        + 4 * sizeof(ItemIdData))) / 4)
//	TOAST_MAX_CHUNK_SIZE  = EXTERN_TUPLE_MAX_SIZE - MAXALIGN(SizeofHeapTupleHeader)
//	                        - sizeof(Oid) - sizeof(int32) - VARHDRSZ
func MaxChunkSize(blockSize int) int {
	const pageHeader, itemID, maxAlign = 24, 4, 8
	perTuple := (blockSize - alignUp(pageHeader+4*itemID, maxAlign)) / 4 &^ (maxAlign - 1)
	return perTuple - alignUp(SizeofHeapTupleHeader, maxAlign) - 4 - 4 - varHdrSz
}

// Chunk is one row of a TOAST relation for one value: chunk_seq and
// chunk_data's bytes (without their varlena header).
type Chunk struct {
	Seq  int32
	Data []byte
}

// AssembleChunks appends to dst the value of size bytes that chunks hold,
// checking them as heap_fetch_toast_slice (toast_fetch_datum before 13)
// does: numbered 0, 1, ... with none missing or repeated, each maxChunk
// bytes but the last, which holds the rest. chunks is sorted by Seq in
// place.
func AssembleChunks(dst []byte, valueID uint32, size, maxChunk int, chunks []Chunk) ([]byte, error) {
	if size < 0 || maxChunk <= 0 {
		return dst, fmt.Errorf("toast value %d: size %d, chunk size %d: %w", valueID, size, maxChunk, ErrCorrupt)
	}
	slices.SortFunc(chunks, func(a, b Chunk) int { return int(a.Seq) - int(b.Seq) })
	total := 0
	if size > 0 {
		total = (size-1)/maxChunk + 1 // totalchunks
	}
	n0 := len(dst)
	for i, c := range chunks {
		if int(c.Seq) != i {
			if c.Seq >= 0 && int(c.Seq) >= total {
				return dst[:n0], fmt.Errorf("toast value %d: unexpected chunk number %d (out of range 0..%d): %w", valueID, c.Seq, total-1, ErrCorrupt)
			}
			if c.Seq < 0 {
				return dst[:n0], fmt.Errorf("toast value %d: unexpected chunk number %d (expected %d): %w", valueID, c.Seq, i, ErrCorrupt)
			}
			if c.Seq < int32(i) {
				return dst[:n0], fmt.Errorf("toast value %d: chunk number %d twice: %w", valueID, c.Seq, ErrCorrupt)
			}
			return dst[:n0], fmt.Errorf("toast value %d: missing chunk number %d: %w", valueID, i, ErrCorrupt)
		}
		if i >= total {
			return dst[:n0], fmt.Errorf("toast value %d: unexpected chunk number %d (out of range 0..%d): %w", valueID, c.Seq, total-1, ErrCorrupt)
		}
		want := maxChunk
		if i == total-1 {
			want = size - (total-1)*maxChunk
		}
		if len(c.Data) != want {
			return dst[:n0], fmt.Errorf("toast value %d: unexpected chunk size %d (expected %d) in chunk %d of %d: %w", valueID, len(c.Data), want, i, total, ErrCorrupt)
		}
		dst = append(dst, c.Data...)
	}
	if len(chunks) != total {
		return dst[:n0], fmt.Errorf("toast value %d: missing chunk number %d: %w", valueID, len(chunks), ErrCorrupt)
	}
	return dst, nil
}

// ToastDesc describes a TOAST relation's rows (create_toast_table,
// toasting.c): chunk_id oid, chunk_seq int4, chunk_data bytea.
var ToastDesc = []Attr{
	{Name: "chunk_id", TypeOID: 26, Len: 4, Align: 'i', ByVal: true, NotNull: true},
	{Name: "chunk_seq", TypeOID: 23, Len: 4, Align: 'i', ByVal: true, NotNull: true},
	{Name: "chunk_data", TypeOID: 17, Len: -1, Align: 'i', NotNull: true},
}

// ToastStore is a Detoaster over the rows of TOAST relations the caller
// adds: the visible tuples of each TOAST relation, in any order.
type ToastStore struct {
	MaxChunk int // TOAST_MAX_CHUNK_SIZE of the cluster
	values   map[toastKey][]Chunk
	vals     []Value
}

type toastKey struct{ rel, value uint32 }

// NewToastStore returns an empty store for a cluster of the given block
// size (BLCKSZ).
func NewToastStore(blockSize int) *ToastStore {
	return &ToastStore{MaxChunk: MaxChunkSize(blockSize), values: map[toastKey][]Chunk{}}
}

// Add keeps one chunk of value valueID of TOAST relation toastRelid; data
// is chunk_data without its header, kept (not copied).
func (s *ToastStore) Add(toastRelid, valueID uint32, seq int32, data []byte) {
	k := toastKey{toastRelid, valueID}
	s.values[k] = append(s.values[k], Chunk{Seq: seq, Data: data})
}

// AddTuple deforms tup, a tuple of TOAST relation toastRelid, and keeps a
// copy of its chunk. A chunk that is itself compressed or external is an
// error ("found toasted toast chunk").
func (s *ToastStore) AddTuple(toastRelid uint32, tup []byte) error {
	var err error
	s.vals, _, err = Deform(s.vals, tup, ToastDesc)
	if err != nil {
		return err
	}
	id, seq, data := s.vals[0], s.vals[1], s.vals[2]
	if id.IsNull() || seq.IsNull() || data.IsNull() {
		return fmt.Errorf("toast relation %d: chunk with a NULL column: %w", toastRelid, ErrCorrupt)
	}
	if data.Form != Short && data.Form != Long {
		return fmt.Errorf("toast relation %d: found toasted toast chunk (%s) for value %d: %w", toastRelid, data.Form, binary.LittleEndian.Uint32(id.Raw), ErrCorrupt)
	}
	s.Add(toastRelid, binary.LittleEndian.Uint32(id.Raw), int32(binary.LittleEndian.Uint32(seq.Raw)), slices.Clone(data.Payload()))
	return nil
}

// Fetch implements Detoaster.
func (s *ToastStore) Fetch(toastRelid, valueID uint32, size int) ([]byte, error) {
	chunks, ok := s.values[toastKey{toastRelid, valueID}]
	if !ok {
		return nil, fmt.Errorf("toast value %d in relation %d: no chunk: %w", valueID, toastRelid, ErrNoToast)
	}
	// size comes from a TOAST pointer: allocate what the chunks hold, not
	// what a corrupt pointer claims
	held := 0
	for _, c := range chunks {
		held += len(c.Data)
	}
	out, err := AssembleChunks(make([]byte, 0, min(size, held)), valueID, size, s.MaxChunk, chunks)
	if err != nil {
		return nil, fmt.Errorf("toast relation %d: %w", toastRelid, err)
	}
	return out, nil
}
