package analyze

import (
	"sync"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// ImagePipeline sizes the images of a stream under every wal_compression
// method on several cores, ahead of a WhatIf reading the same stream.
// Rebuilding and recompressing each image three times is most of a
// what-if's work (pglz, about 110 MB/s of pages per core, and zstd take
// about the same time, lz4 a tenth of it), while the WhatIf itself
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
				j.slot.est = estimateImage(sizer, *j.page, j.hole[0], j.hole[1], j.comp)
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

// estimateImage sizes an image, its page rebuilt, under every
// wal_compression method but the one it is stored with (whose size is the
// stored one): once, for all the scenarios that need it.
func estimateImage(sizer ImageSizer, page []byte, holeOffset, holeLength int, stored decode.Compression) imageEstimate {
	e := imageEstimate{ok: true}
	for i, m := range whatIfMethods {
		if m.c != decode.CompressNone && m.c == stored {
			continue // the WhatIf takes the stored image as it is
		}
		e.stored[i], e.compressed[i] = sizer(page, holeOffset, holeLength, m.c)
	}
	return e
}

// sizeImages sets w.est, by block index, to the sizes of the record's images
// under every wal_compression method, nil for a block without an image or
// whose page cannot be rebuilt. Each image is sized once, by in.Images or
// else here, and every scenario takes its sizes from w.est.
func (w *WhatIf) sizeImages(rec *decode.Record) {
	w.est = w.est[:0]
	if rec.FPILen == 0 || w.in.Images == nil && w.in.Sizer == nil {
		return
	}
	if cap(w.own) < len(rec.Blocks) {
		w.own = make([]imageEstimate, len(rec.Blocks))
	}
	own := w.own[:len(rec.Blocks)]
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		var e *imageEstimate
		if b.HasImage {
			tried := false // the pipeline tried to rebuild the page, and could not
			if w.in.Images != nil {
				got, ok := w.in.Images.take(rec.LSN, b.ID)
				if ok {
					e = got
				}
				tried = got != nil && !ok
			}
			if e == nil && !tried && w.in.Sizer != nil {
				var err error
				if w.page, err = w.dec.AppendPage(w.page[:0], rec, b); err == nil {
					own[i] = estimateImage(w.in.Sizer, w.page, int(b.HoleOffset), int(b.HoleLength), b.Compression)
					e = &own[i]
				}
			}
		}
		w.est = append(w.est, e)
	}
}

// take returns the estimates of the image of block id of the record at lsn,
// if the pipeline has them: nil and false if it does not, the estimates and
// false if their page could not be rebuilt. Calls come in WAL order; images
// the WhatIf does not ask for (filtered records) are skipped.
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
