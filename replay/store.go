package replay

import (
	"fmt"
	"os"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// blockKey is one block of one fork of one relation file.
type blockKey struct {
	rel  decode.RelFileLocator
	fork decode.ForkNumber
	blk  uint32
}

// held is a block the WAL touched: its page (nil while spilled), where it
// lies in the spill file (-1: never spilled), and the record that last
// changed it.
type held struct {
	page    []byte
	slot    int64
	lastLSN xlog.LSN
	loaded  uint64 // when it was last brought into memory, for eviction
}

// store holds the blocks the WAL touches: in memory up to limit bytes of
// pages, beyond that written to a spill file of ours (created in dir,
// removed when the store is closed), read back when asked for. Blocks the
// WAL never touches are not held: they are read from the backup.
type store struct {
	blockSize int
	limit     int64
	inMemory  int64
	blocks    map[blockKey]*held
	queue     []blockKey // blocks in memory, oldest load first (lazily pruned)
	clock     uint64
	dir       string
	spill     *os.File
	slots     int64 // slots used in the spill file
	free      []*[]byte
	// Spilled counts pages written to the spill file, Reloaded those read
	// back (for the note and the tests).
	Spilled, Reloaded int64
}

func newStore(blockSize int, limit int64, dir string) *store {
	if limit < int64(blockSize)*64 {
		limit = int64(blockSize) * 64
	}
	return &store{blockSize: blockSize, limit: limit, blocks: map[blockKey]*held{}, dir: dir}
}

// get returns the held block k, brought into memory, or nil.
func (s *store) get(k blockKey) (*held, error) {
	h := s.blocks[k]
	if h == nil {
		return nil, nil
	}
	if h.page == nil {
		h.page = s.newPage()
		if _, err := s.spill.ReadAt(h.page, h.slot*int64(s.blockSize)); err != nil {
			return nil, fmt.Errorf("reading back a spilled page from %s: %w", s.spill.Name(), err)
		}
		s.Reloaded++
		if err := s.loaded(k, h); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// add holds block k with page (copied), returning it.
func (s *store) add(k blockKey, page []byte) (*held, error) {
	h := &held{page: s.newPage(), slot: -1}
	copy(h.page, page)
	s.blocks[k] = h
	return h, s.loaded(k, h)
}

func (s *store) newPage() []byte {
	if n := len(s.free); n > 0 {
		p := s.free[n-1]
		s.free = s.free[:n-1]
		return *p
	}
	return make([]byte, s.blockSize)
}

// loaded notes h in memory and evicts the oldest loads beyond the limit.
func (s *store) loaded(k blockKey, h *held) error {
	s.clock++
	h.loaded = s.clock
	s.queue = append(s.queue, k)
	s.inMemory += int64(s.blockSize)
	for s.inMemory > s.limit && len(s.queue) > 0 {
		old := s.queue[0]
		s.queue = s.queue[1:]
		o := s.blocks[old]
		if o == nil || o.page == nil || o == h {
			continue
		}
		if err := s.evict(o); err != nil {
			return err
		}
	}
	if len(s.queue) > 4*int(s.limit/int64(s.blockSize))+1024 {
		s.compactQueue()
	}
	return nil
}

// compactQueue drops the queue's entries of blocks no longer in memory.
func (s *store) compactQueue() {
	q := s.queue[:0]
	seen := map[blockKey]bool{}
	for i := len(s.queue) - 1; i >= 0; i-- {
		k := s.queue[i]
		if h := s.blocks[k]; h != nil && h.page != nil && !seen[k] {
			seen[k] = true
			q = append(q, k)
		}
	}
	for i, j := 0, len(q)-1; i < j; i, j = i+1, j-1 {
		q[i], q[j] = q[j], q[i]
	}
	s.queue = q
}

// evict writes h's page to the spill file and frees it.
func (s *store) evict(h *held) error {
	if s.spill == nil {
		f, err := os.CreateTemp(s.dir, "walscope-replay-*.pages")
		if err != nil {
			return fmt.Errorf("spilling pages: %w", err)
		}
		s.spill = f
	}
	if h.slot < 0 {
		h.slot = s.slots
		s.slots++
	}
	if _, err := s.spill.WriteAt(h.page, h.slot*int64(s.blockSize)); err != nil {
		return fmt.Errorf("spilling pages to %s: %w", s.spill.Name(), err)
	}
	s.Spilled++
	p := h.page
	s.free = append(s.free, &p)
	h.page = nil
	s.inMemory -= int64(s.blockSize)
	return nil
}

// drop forgets every held block of which says yes.
func (s *store) drop(which func(blockKey) bool) {
	for k, h := range s.blocks {
		if which(k) {
			if h.page != nil {
				s.inMemory -= int64(s.blockSize)
			}
			delete(s.blocks, k)
		}
	}
}

// close removes the spill file.
func (s *store) close() error {
	if s.spill == nil {
		return nil
	}
	name := s.spill.Name()
	err := s.spill.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	s.spill = nil
	return err
}
