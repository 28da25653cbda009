package archive

import (
	"errors"
	"io"
	"io/fs"
	"sync"
)

// segmentFile is a segment file on the local disk opened for the reader:
// its descriptor alone (no *os.File, whose opening registers the file with
// the runtime's poller and fails to, five system calls, and allocates),
// and its first bytes, read when it is opened to recognise its content and
// handed to the reader through Head, which reads no page of them again.
// Over an archive of switched, nearly empty segments this made a segment
// one open, one read and one close, as pg_waldump reads it (issue 16: the
// opening and the second read cost more than the WAL).
type segmentFile struct {
	h     fileHandle
	path  string
	buf   *[]byte // head's buffer, from headBuffers
	head  []byte
	whole bool // head is the whole file
}

// headSize is how much of a plain-named segment is read when it is opened:
// one page of the default XLOG_BLCKSZ, what pg_waldump reads at a time,
// which holds a switched segment's WAL (usually a few KB). (Reading 16 KiB
// copied twice the bytes for the same one read.)
const headSize = 8 << 10

var headBuffers = sync.Pool{New: func() any { b := make([]byte, headSize); return &b }}

// openSegmentFile opens the file at path and reads its first want bytes
// (at most headSize).
func openSegmentFile(path string, want int) (*segmentFile, error) {
	h, err := openHandle(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := &segmentFile{h: h, path: path, buf: headBuffers.Get().(*[]byte)}
	b := (*f.buf)[:min(want, headSize)]
	n, err := f.ReadAt(b, 0)
	f.head = b[:n]
	f.whole = err == io.EOF
	if err != nil && err != io.EOF {
		f.head = nil // an unreadable file: the general path reports it
	}
	return f, nil
}

// sniffed reports whether the file's first bytes show plain WAL (not
// compressed, not encrypted): what openFile hands out as it is.
func (f *segmentFile) sniffed() bool {
	if f.head == nil {
		return false
	}
	head := f.head[:min(len(f.head), sniffLen)]
	c, enc := detect(head)
	return c == "" && enc == "" && walLike(head)
}

// Head implements xlog.HeadFile.
func (f *segmentFile) Head() ([]byte, bool) { return f.head, f.whole }

// ReadAt implements io.ReaderAt as *os.File does: it reads until b is full,
// and returns io.EOF where the file ends. Bytes within the head are not
// read again (a long page header read for the geometry).
func (f *segmentFile) ReadAt(b []byte, off int64) (int, error) {
	if f.buf == nil {
		// Closed (or handed over): its descriptor number may already be
		// another file's, so nothing is read through it.
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.path, Err: errors.New("negative offset")}
	}
	if end := off + int64(len(b)); end <= int64(len(f.head)) || f.whole && off <= int64(len(f.head)) {
		n := copy(b, f.head[off:])
		if n < len(b) {
			return n, io.EOF
		}
		return n, nil
	}
	n := 0
	for len(b) > 0 {
		m, err := f.h.pread(b, off)
		n += m
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		b, off = b[m:], off+int64(m)
	}
	return n, nil
}

// Close closes the descriptor and gives the head's buffer back: nothing may
// use Head's bytes after.
func (f *segmentFile) Close() error {
	if f.buf == nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	headBuffers.Put(f.buf)
	f.buf, f.head = nil, nil
	if err := f.h.close(); err != nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// treeFile turns the file into the general path's: its descriptor in an
// *os.File, at offset 0 (reads so far were positioned). f is closed.
func (f *segmentFile) treeFile() treeFile {
	headBuffers.Put(f.buf)
	f.buf, f.head = nil, nil
	return f.h.osFile(f.path)
}
