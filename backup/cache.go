package backup

import (
	"container/list"
	"io"
	"os"
)

// How a compressed file is read at random offsets: gzip, LZ4 and zstd
// streams cannot be entered in the middle, so a compressed file (a member of
// a compressed tar, a file pgBackRest stored compressed) is decompressed
// once, on first use, into a copy of our own: in memory when it is at most
// memLimit bytes (pg_control, pg_filenode.map, most catalogs), else in a
// temporary file in a directory of ours (Options.TempDir, else the system's;
// never beside the input). Copies are evicted least recently used first
// beyond Options.CacheBytes; Close removes the directory. The one pass that
// indexes a compressed tar at Open (a whole pass: pg_control is the last
// member) keeps the members of at most memLimit bytes in memory, up to 64
// MiB in all (the control file, relation maps, pg_xact, small catalogs:
// what is read first); of a gzip tar it also keeps resume points
// (gzindex.go), and of an LZ4, zstd or bzip2 tar it decompresses the
// members of up to spillLimit bytes into the cache (tar.go). A member
// asked for later is streamed to from the last resume point before it, or
// from the stream's position when that is nearer, else (LZ4, zstd, bzip2)
// from the beginning (Prefetch takes many members in one pass).

const memLimit = 256 << 10

// extractCache holds the decompressed copies.
type extractCache struct {
	indexDir string // Options.IndexDir: gzip tars' index files (gzfile.go)
	tempDir  string // parent of dir
	dir      string // ours, made on first need
	limit    int64
	used     int64
	lru      *list.List // of *cached, front = most recent
	byKey    map[string]*list.Element
}

type cached struct {
	key  string
	mem  []byte
	f    *os.File
	size int64
}

func (c *cached) ReadAt(p []byte, off int64) (int, error) {
	if c.f != nil {
		return c.f.ReadAt(p, off)
	}
	if off >= int64(len(c.mem)) {
		return 0, io.EOF
	}
	n := copy(p, c.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *cached) Size() int64 { return c.size }

func newExtractCache(tempDir string, limit int64) *extractCache {
	return &extractCache{tempDir: tempDir, limit: limit, lru: list.New(), byKey: map[string]*list.Element{}}
}

func (c *extractCache) get(key string) *cached {
	if e, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cached)
	}
	return nil
}

// put copies size bytes from r into a new copy named key. A short r is
// reported as io.ErrUnexpectedEOF.
func (c *extractCache) put(key string, r io.Reader, size int64) (*cached, error) {
	ent := &cached{key: key, size: size}
	if size <= memLimit {
		ent.mem = make([]byte, size)
		if _, err := io.ReadFull(r, ent.mem); err != nil {
			return nil, unexpected(err)
		}
	} else {
		if c.dir == "" {
			d, err := os.MkdirTemp(c.tempDir, "walscope-backup-")
			if err != nil {
				return nil, err
			}
			c.dir = d
		}
		f, err := os.CreateTemp(c.dir, "member-")
		if err != nil {
			return nil, err
		}
		// the name is not needed: the open file is the copy, and nothing
		// remains on disk if the process dies
		os.Remove(f.Name())
		n, err := io.CopyN(f, r, size)
		if err != nil {
			f.Close()
			if n < size && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		ent.f = f
	}
	c.byKey[key] = c.lru.PushFront(ent)
	c.used += size
	// evict beyond the limit, keeping the copy just made
	for c.used > c.limit && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).(*cached)
		delete(c.byKey, old.key)
		c.used -= old.size
		if old.f != nil {
			old.f.Close()
		}
	}
	return ent, nil
}

func (c *extractCache) close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		if f := e.Value.(*cached).f; f != nil {
			f.Close()
		}
	}
	c.lru.Init()
	c.byKey = map[string]*list.Element{}
	c.used = 0
	if c.dir != "" {
		err := os.RemoveAll(c.dir)
		c.dir = ""
		return err
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
