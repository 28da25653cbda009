package analyze

import (
	"sync"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// ImagePipeline sizes the images of a stream under every wal_compression
// method on several cores, ahead of a WhatIf reading the same stream.
// Rebuilding and recompressing each image three times is nearly all of a
// what-if's work (pglz compresses about 30 MB/s), while the WhatIf itself
// must see records one by one in WAL order. So a reader of the pipeline's
// own goes through the stream, rebuilds each image's page and hands it to
// workers; WhatIf.Add then takes the results in WAL order. At most ahead
// images are in flight, so memory is bounded whatever the stream's size.
type ImagePipeline struct {
	slots   chan *imageSlot // in WAL order
	pending *imageSlot      // taken from slots, for a later record
	done    bool            // slots closed and drained
	stop    chan struct{}
	wg      sync.WaitGroup
	pages   sync.Pool
}

// imageSlot is one image's estimates, filled by a worker.
type imageSlot struct {
	lsn   xlog.LSN
	block uint8
	ready chan struct{}
	est   imageEstimate
}

type imageEstimate struct {
	ok         bool // the page could be rebuilt
	stored     [4]int
	compressed [4]bool
}

type imageJob struct {
	slot *imageSlot
	page *[]byte
	hole [2]int
	comp decode.Compression // the method the image is stored with
}

// NewImagePipeline starts the pipeline. next returns the stream's records in
// WAL order (an error ends the pipeline: the WhatIf sizes what it did not
// get itself); newSizer returns a sizer for one worker (sizers keep state).
func NewImagePipeline(next func() (*decode.Record, error), blockSize int, newSizer func() ImageSizer, workers, ahead int) *ImagePipeline {
	p := &ImagePipeline{slots: make(chan *imageSlot, ahead), stop: make(chan struct{})}
	jobs := make(chan imageJob, ahead)
	for range max(1, workers) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			sizer := newSizer()
			for j := range jobs {
				for i, m := range whatIfMethods {
					if m.c != decode.CompressNone && m.c == j.comp {
						continue // the WhatIf takes the stored image as it is
					}
					j.slot.est.stored[i], j.slot.est.compressed[i] = sizer(*j.page, j.hole[0], j.hole[1], m.c)
				}
				j.slot.est.ok = true
				p.pages.Put(j.page)
				close(j.slot.ready)
			}
		}()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(jobs)
		defer close(p.slots)
		dec := decode.NewDecoder(blockSize)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			rec, err := next()
			if err != nil {
				return
			}
			for i := range rec.Blocks {
				b := &rec.Blocks[i]
				if !b.HasImage {
					continue
				}
				s := &imageSlot{lsn: rec.LSN, block: b.ID, ready: make(chan struct{})}
				page, _ := p.pages.Get().(*[]byte)
				if page == nil {
					page = new([]byte)
				}
				*page, err = dec.AppendPage((*page)[:0], rec, b)
				select {
				case p.slots <- s:
				case <-p.stop:
					return
				}
				if err != nil {
					p.pages.Put(page)
					close(s.ready) // not ok: the WhatIf counts the image as it is
					continue
				}
				select {
				case jobs <- imageJob{slot: s, page: page, hole: [2]int{int(b.HoleOffset), int(b.HoleLength)}, comp: b.Compression}:
				case <-p.stop:
					close(s.ready) // no one waits on it once stopped, but none may block
					return
				}
			}
		}
	}()
	return p
}

// take returns the estimates of the image of block id of the record at lsn,
// if the pipeline has them. Calls come in WAL order; images the WhatIf does
// not ask for (filtered records) are skipped.
func (p *ImagePipeline) take(lsn xlog.LSN, id uint8) (*imageEstimate, bool) {
	for {
		s := p.pending
		p.pending = nil
		if s == nil {
			if p.done {
				return nil, false
			}
			var ok bool
			if s, ok = <-p.slots; !ok {
				p.done = true
				return nil, false
			}
		}
		if s.lsn > lsn || s.lsn == lsn && s.block > id {
			p.pending = s // for a later record or block
			return nil, false
		}
		if s.lsn == lsn && s.block == id {
			<-s.ready
			return &s.est, s.est.ok
		}
	}
}

// Close stops the pipeline's goroutines and waits for them.
func (p *ImagePipeline) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	go func() { // let the reader out of a blocked send
		for range p.slots {
		}
	}()
	p.wg.Wait()
}
