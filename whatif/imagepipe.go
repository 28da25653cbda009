package whatif

import (
	"sync"
	"sync/atomic"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// ImagePipeline sizes the images of a stream under every wal_compression
// method on the engine (xlog/stream), ahead of a WhatIf reading the same
// stream. Rebuilding and recompressing each image three times is most of a
// what-if's work (pglz and zstd take about the same time, lz4 a tenth of
// it), while the WhatIf itself must see records one by one in WAL order. So
// the engine reads the stream in spans, Workers at once, each span's worker
// rebuilding and sizing its images; the spans' estimates are handed over in
// WAL order, and WhatIf.Add takes them as it meets the images. At most
// Workers+1 spans' estimates are held, a few bytes per image, so memory is
// bounded whatever the stream's size. The pipeline can start before the
// WhatIf's first pass: the sizes depend on the images alone.
type ImagePipeline struct {
	parts   chan []imageSlot // each span's estimates, in WAL order
	cur     []imageSlot      // the span being taken from
	pos     int              // the next slot of cur
	done    bool             // parts closed and drained
	stop    chan struct{}
	stopped atomic.Bool
	once    sync.Once
	wg      sync.WaitGroup
	sizers  sync.Pool // ImageSizer: sizers keep their compressors between spans
}

// imageSlot is one image's estimates.
type imageSlot struct {
	lsn   xlog.LSN
	block uint8
	est   imageEstimate
}

type imageEstimate struct {
	ok         bool // the page could be rebuilt
	stored     [4]int
	compressed [4]bool
}

// imagePart is what one span's worker sizes.
type imagePart struct {
	dec   *decode.Decoder
	sizer ImageSizer
	page  []byte
	slots []imageSlot
}

// NewImagePipeline starts sizing the images of the stream src, read with
// opts (as the WhatIf's own reading reads it), on the engine: workers spans
// of spanBytes (0: stream.DefaultSpanBytes) at once. newSizer returns a
// sizer for one worker (sizers keep state). A record that does not decode
// ends the pipeline there: the WhatIf sizes what it does not get itself. Its
// error is a setup error (the stream cannot be opened); Close ends it.
func NewImagePipeline(src xlog.Source, opts xlog.Options, blockSize int, newSizer func() ImageSizer, workers, spanBytes int) (*ImagePipeline, error) {
	opts.HeadersOnly, opts.SkipCRC = false, false
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: max(1, workers), SpanBytes: spanBytes})
	if err != nil {
		return nil, err
	}
	p := &ImagePipeline{parts: make(chan []imageSlot), stop: make(chan struct{})}
	p.sizers.New = func() any { return newSizer() }
	job := stream.Job[*imagePart]{
		NewPart: func(stream.SpanInfo) *imagePart {
			return &imagePart{dec: decode.NewDecoder(blockSize), sizer: p.sizers.Get().(ImageSizer)}
		},
		Record: func(part *imagePart, rec *xlog.Record) error {
			if p.stopped.Load() {
				return stream.ErrStop
			}
			d, err := part.dec.Decode(rec)
			if err != nil {
				return stream.ErrStop // the WhatIf's reading ends here too
			}
			if d.FPILen == 0 {
				return nil
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if !b.HasImage {
					continue
				}
				slot := imageSlot{lsn: d.LSN, block: b.ID}
				if part.page, err = part.dec.AppendPage(part.page[:0], d, b); err == nil {
					// not ok otherwise: the WhatIf counts the image as it is
					slot.est = estimateImage(part.sizer, part.page, int(b.HoleOffset), int(b.HoleLength), b.Compression)
				}
				part.slots = append(part.slots, slot)
			}
			return nil
		},
		Merge: func(part *imagePart) error {
			p.sizers.Put(part.sizer)
			select {
			case p.parts <- part.slots:
				return nil
			case <-p.stop:
				return pass.ErrStop
			}
		},
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(p.parts)
		_, _ = stream.Run(s, job) // how the reading ended is the WhatIf's reading's to tell
	}()
	return p, nil
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
// the WhatIf does not ask for (filtered records) are skipped. The estimates
// stay valid while the WhatIf holds them (slots are never reused).
func (p *ImagePipeline) take(lsn xlog.LSN, id uint8) (*imageEstimate, bool) {
	for {
		if p.pos == len(p.cur) {
			if p.done {
				return nil, false
			}
			part, ok := <-p.parts
			if !ok {
				p.done, p.cur, p.pos = true, nil, 0
				return nil, false
			}
			p.cur, p.pos = part, 0
			continue
		}
		s := &p.cur[p.pos]
		if s.lsn > lsn || s.lsn == lsn && s.block > id {
			return nil, false // for a later record or block
		}
		p.pos++
		if s.lsn == lsn && s.block == id {
			return &s.est, s.est.ok
		}
	}
}

// Close stops the pipeline's reading and waits for it to end.
func (p *ImagePipeline) Close() {
	p.once.Do(func() {
		p.stopped.Store(true)
		close(p.stop)
	})
	p.wg.Wait()
}
