package archive

import (
	"sync"

	"github.com/walscope/walscope/xlog"
)

// A parallel reading (xlog/stream) cuts the stream into spans of whole
// segments, and every span's reader finishes its last record in the first
// segment of the next span, which that span's reader reads too. A plain file
// is read in place, a page at a time; a compressed one is decompressed whole
// when it is opened, so every segment at a span boundary was decompressed
// twice: with 32 MB spans of 16 MB segments, half of all segments (issue 16:
// stats over lz4, zstd and gzip copies of a 929 MB archive spent 25-45% more
// CPU with two workers than with one). decodedSegments shares a decompressed
// segment between the readers that open it while it is open or was closed
// recently: the two readers of a boundary segment open it within a few
// segments' reading of each other.

// keepDecoded is how many closed segments are kept for a reader that may
// open them again: each is a segment's worth of memory. Measured with two
// workers over zstd and gzip copies of the 929 MB bench archive (CPU
// seconds, medians of 3): none kept 1.18/1.52, one 1.03/1.45, two
// 0.97/1.34, three 0.94/1.42; not sharing at all 1.22/1.75.
const keepDecoded = 2

// keepDecodedBytes bounds the memory the closed segments kept hold: with 64
// MB segments one is kept, with larger ones none (each reader still holds
// the one it reads).
const keepDecodedBytes = 64 << 20

// decodedSegments is a Source's cache of decompressed segments.
type decodedSegments struct {
	mu   sync.Mutex
	segs map[string]*decodedSegment // by entry key: open, being decompressed, or idle
	idle []*decodedSegment          // closed by every reader, oldest first
	held int                        // bytes of the idle segments
}

// decodedSegment is one decompressed segment and the readers holding it.
type decodedSegment struct {
	key   string
	file  *memFile
	refs  int
	ready chan struct{} // closed when file (or err) is set
	err   error
}

// open returns the decompressed segment key from the cache, or from decode,
// which runs once however many readers ask at the same time. Only memFiles
// (decompressed content) are shared: a file decode returns in place (a plain
// file behind a compressed name) is handed back as it is.
func (c *decodedSegments) open(key string, decode func() (xlog.File, error)) (xlog.File, error) {
	c.mu.Lock()
	if c.segs == nil {
		c.segs = map[string]*decodedSegment{}
	}
	if d := c.segs[key]; d != nil {
		if d.refs == 0 {
			c.unidle(d)
		}
		d.refs++
		c.mu.Unlock()
		<-d.ready
		if d.err != nil {
			c.release(d)
			if d.err == errNotShared {
				return decode()
			}
			return nil, d.err
		}
		return &sharedFile{d: d, c: c}, nil
	}
	d := &decodedSegment{key: key, refs: 1, ready: make(chan struct{})}
	c.segs[key] = d
	c.mu.Unlock()

	f, err := decode()
	mf, shared := f.(*memFile)
	switch {
	case err != nil:
		d.err = err
	case !shared:
		d.err = errNotShared
	default:
		d.file = mf
	}
	if d.err != nil {
		// Errors are not kept: the next reader tries again (a waiting one
		// is given the same error, or, for a file not shared, decodes its
		// own).
		c.mu.Lock()
		delete(c.segs, key)
		c.mu.Unlock()
	}
	close(d.ready)
	if err != nil || !shared {
		return f, err
	}
	return &sharedFile{d: d, c: c}, nil
}

// errNotShared tells a reader that waited for a file that decoded to
// something not shared to open its own.
var errNotShared = &Error{Msg: "not shared"}

// release drops one reader's hold on d; the last one leaves it idle, and
// the oldest idle segment beyond keepDecoded goes back to the buffer pool.
func (c *decodedSegments) release(d *decodedSegment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.refs--
	if d.refs > 0 || d.file == nil {
		return
	}
	c.idle = append(c.idle, d)
	c.held += len(d.file.data)
	for len(c.idle) > keepDecoded || c.held > keepDecodedBytes {
		old := c.idle[0]
		c.idle = append(c.idle[:0], c.idle[1:]...)
		c.held -= len(old.file.data)
		delete(c.segs, old.key)
		old.file.Close()
	}
}

// unidle takes d off the idle list (c.mu held).
func (c *decodedSegments) unidle(d *decodedSegment) {
	for i, x := range c.idle {
		if x == d {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			c.held -= len(d.file.data)
			return
		}
	}
}

// drop returns every idle segment's buffer to the pool.
func (c *decodedSegments) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.idle {
		delete(c.segs, d.key)
		d.file.Close()
	}
	c.idle, c.held = nil, 0
}

// sharedFile is one reader's hold on a decompressed segment. Bytes lets the
// reader use it in place, read-only.
type sharedFile struct {
	d      *decodedSegment
	c      *decodedSegments
	closed bool
}

func (f *sharedFile) ReadAt(p []byte, off int64) (int, error) { return f.d.file.ReadAt(p, off) }

func (f *sharedFile) Bytes() []byte { return f.d.file.Bytes() }

func (f *sharedFile) Size() int64 { return f.d.file.Size() }

func (f *sharedFile) Close() error {
	if !f.closed {
		f.closed = true
		f.c.release(f.d)
	}
	return nil
}
