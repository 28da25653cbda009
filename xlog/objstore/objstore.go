// Package objstore reads WAL archives in place from object stores (Amazon S3
// and S3-compatible servers, Google Cloud Storage, Azure Blob Storage) and
// writes datasets back to them.
//
// A store is named by a URL, as users of each cloud know it:
//
//	s3://bucket/prefix        Amazon S3; S3-compatible servers with AWS_ENDPOINT_URL (path-style)
//	gs://bucket/prefix        Google Cloud Storage; its emulator with STORAGE_EMULATOR_HOST
//	azblob://container/prefix Azure Blob Storage (account from AZURE_STORAGE_ACCOUNT or
//	                          AZURE_STORAGE_CONNECTION_STRING)
//
// Credentials come from each cloud's standard chain (environment, shared
// config and credentials files, instance and workload identity): nothing
// walscope-specific.
//
// Tree presents a store as a file tree whose directories are key prefixes
// ("/"-separated): xlog/archive's OpenTree detects every layout over it as
// over the local disk. Listing is paginated and cached per prefix; files are
// fetched whole (objects up to WholeMax bytes; larger ones, such as base
// backup tars, are read with ranged requests), and the files that follow an
// opened one in its listing are prefetched by a bounded pool, within a
// memory budget, so that the reading engine's workers find them fetched.
// Every request is retried with backoff; a file that cannot be fetched is an
// *Error with its Class, returned where the file is opened, never skipped.
//
// Upload writes a local directory (a dataset staged by the export package)
// to a store: each data file as one object made visible only when complete,
// files whose names start with "_" (markers, metadata) last.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// IsURL reports whether s names an object store location (s3://, gs://,
// azblob://) rather than a local path.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (scheme == "s3" || scheme == "gs" || scheme == "azblob")
}

// Location is a parsed store URL.
type Location struct {
	Scheme string // s3, gs, azblob
	Bucket string // the bucket, or Azure's container
	Key    string // the prefix or object key, without leading or trailing "/"
}

// ParseURL parses s3://bucket/prefix, gs://bucket/prefix and
// azblob://container/prefix.
func ParseURL(s string) (Location, error) {
	if !IsURL(s) {
		return Location{}, fmt.Errorf("%w: %q (want s3://bucket/prefix, gs://bucket/prefix or azblob://container/prefix)", ErrURL, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("%w: %q: %v", ErrURL, s, err)
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("%w: %q names no bucket", ErrURL, s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Location{}, fmt.Errorf("%w: %q: query, fragment and user are not supported; configure the store through its SDK's environment", ErrURL, s)
	}
	return Location{Scheme: u.Scheme, Bucket: u.Host, Key: strings.Trim(u.Path, "/")}, nil
}

func (l Location) String() string {
	s := l.Scheme + "://" + l.Bucket
	if l.Key != "" {
		s += "/" + l.Key
	}
	return s
}

// ErrURL reports a malformed store URL.
var ErrURL = errors.New("invalid object store URL")

// Class says why a request failed.
type Class string

// The classes of failures.
const (
	ClassNotFound     Class = "not-found"     // no such bucket or object
	ClassAccessDenied Class = "access-denied" // credentials missing, refused or insufficient
	ClassNetwork      Class = "network"       // the store could not be reached, or the connection broke
	ClassServer       Class = "server"        // the store answered with an error (after retries)
	ClassConfig       Class = "config"        // the client could not be configured
)

// Error is a failed store request: the URL, the operation, and the class.
type Error struct {
	URL   string
	Op    string // list, get, put, delete, config
	Class Class
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s failed (%s): %v", e.URL, e.Op, e.Class, e.Err)
}

func (e *Error) Unwrap() error {
	switch e.Class {
	case ClassNotFound:
		return fs.ErrNotExist // errors.Is(err, fs.ErrNotExist) as for a local file
	case ClassExists:
		return fs.ErrExist
	}
	return e.Err
}

// object is one listed entry: an object, or a common prefix (dir).
type object struct {
	name string // the last path element
	size int64
	mod  time.Time
	dir  bool
}

// backend is one cloud's client, for one bucket.
type backend interface {
	// list calls fn with every object and common prefix directly under
	// prefix (which is "" or ends in "/"), page by page.
	list(ctx context.Context, prefix string, fn func(object)) error
	// get reads length bytes at off of key (length < 0: to the end).
	get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// put stores the file as key, visible only once complete.
	put(ctx context.Context, key string, f *os.File, size int64) error
	// del removes key.
	del(ctx context.Context, key string) error
	// create stores data as key only if no object has that name (Create).
	create(ctx context.Context, key string, data []byte) error
	// classify returns the class of an error the client returned.
	classify(err error) Class
}

// Options tune a Tree.
type Options struct {
	// Concurrency bounds the requests in flight (default 8).
	Concurrency int
	// PrefetchBytes bounds the memory held by files fetched ahead of the
	// reader (default 64 MiB: four 16 MB segments).
	PrefetchBytes int64
	// Retries is the number of attempts after the first (default 4).
	Retries int
}

// WholeMax is the largest object fetched whole when opened: a 64 MB
// segment. Larger objects (tars) are read with ranged requests.
const WholeMax = 64 << 20

// Tree is a store bucket as a file tree (xlog/archive.Tree). Its paths are
// URLs (s3://bucket/a/b); directories are key prefixes. It is safe for
// concurrent use.
type Tree struct {
	loc  Location // bucket only
	b    backend
	opts Options
	ctx  context.Context

	mu       sync.Mutex
	dirs     map[string]*listing // by key prefix ("" or "a/b/")
	fetches  map[string]*fetch   // by key
	heads    map[string]*fetch   // first HeadSize bytes, by key
	buffered int64               // bytes held or awaited by fetches
	sem      chan struct{}
}

type listing struct {
	done chan struct{}
	objs []object
	err  error
	// index of each file's name in objs, for prefetching what follows.
	index map[string]int
}

type fetch struct {
	done chan struct{}
	data []byte
	err  error
	size int64
}

// Open returns the tree of the bucket that rawURL names (its path is
// ignored: the tree's paths are whole URLs), with a client configured from
// the cloud's standard environment.
func Open(ctx context.Context, rawURL string, opts Options) (*Tree, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var b backend
	switch loc.Scheme {
	case "s3":
		b, err = newS3(ctx, loc.Bucket)
	case "gs":
		b, err = newGCS(ctx, loc.Bucket)
	case "azblob":
		b, err = newAzure(ctx, loc.Bucket)
	}
	if err != nil {
		return nil, &Error{URL: loc.String(), Op: "config", Class: ClassConfig, Err: err}
	}
	return newTree(ctx, Location{Scheme: loc.Scheme, Bucket: loc.Bucket}, b, opts), nil
}

func newTree(ctx context.Context, loc Location, b backend, opts Options) *Tree {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.PrefetchBytes <= 0 {
		opts.PrefetchBytes = 64 << 20
	}
	if opts.Retries <= 0 {
		opts.Retries = 4
	}
	return &Tree{loc: loc, b: b, opts: opts, ctx: ctx,
		dirs: map[string]*listing{}, fetches: map[string]*fetch{}, heads: map[string]*fetch{}, sem: make(chan struct{}, opts.Concurrency)}
}

// key returns the object key of a path of the tree.
func (t *Tree) key(name string) (string, error) {
	loc, err := ParseURL(name)
	if err != nil {
		return "", err
	}
	if loc.Scheme != t.loc.Scheme || loc.Bucket != t.loc.Bucket {
		return "", fmt.Errorf("%s is not in %s", name, t.loc)
	}
	return path.Clean("/" + loc.Key)[1:], nil
}

func (t *Tree) url(key string) string {
	return Location{Scheme: t.loc.Scheme, Bucket: t.loc.Bucket, Key: key}.String()
}

// Join implements xlog/archive.Tree: "/"-separated, the scheme and bucket
// kept.
func (t *Tree) Join(elem ...string) string {
	if len(elem) == 0 {
		return ""
	}
	head, rest, ok := strings.Cut(elem[0], "://")
	if !ok {
		return path.Join(elem...)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	k := path.Join(append([]string{"/" + key}, elem[1:]...)...)
	return head + "://" + bucket + strings.TrimSuffix(k, "/")
}

// list returns the cached listing of a prefix, listing it once.
func (t *Tree) list(prefix string) *listing {
	t.mu.Lock()
	l := t.dirs[prefix]
	if l != nil {
		t.mu.Unlock()
		<-l.done
		return l
	}
	l = &listing{done: make(chan struct{})}
	t.dirs[prefix] = l
	t.mu.Unlock()
	l.err = t.retry(func() error {
		l.objs = l.objs[:0]
		return t.b.list(t.ctx, prefix, func(o object) { l.objs = append(l.objs, o) })
	})
	if l.err != nil {
		l.err = &Error{URL: t.url(prefix), Op: "list", Class: t.class(l.err), Err: l.err}
	}
	// A key that is both an object and a prefix ("a" and "a/b") is listed
	// as its directory.
	sort.SliceStable(l.objs, func(i, j int) bool { return l.objs[i].name < l.objs[j].name })
	out := l.objs[:0]
	for i, o := range l.objs {
		if i > 0 && out[len(out)-1].name == o.name {
			if o.dir {
				out[len(out)-1] = o
			}
			continue
		}
		out = append(out, o)
	}
	l.objs = out
	l.index = make(map[string]int, len(out))
	for i, o := range out {
		l.index[o.name] = i
	}
	close(l.done)
	return l
}

func (t *Tree) class(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return t.b.classify(err)
}

// retry runs op, retrying with exponential backoff while the failure may
// be transient (not a missing object, nor a refusal).
func (t *Tree) retry(op func() error) error {
	delay := 100 * time.Millisecond
	var err error
	for attempt := 0; ; attempt++ {
		if err = op(); err == nil {
			return nil
		}
		c := t.class(err)
		if c == ClassNotFound || c == ClassAccessDenied || c == ClassConfig || c == ClassExists || attempt >= t.opts.Retries || t.ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(delay):
		case <-t.ctx.Done():
			return err
		}
		delay *= 2
	}
}

// dirPrefix is the listing prefix of a directory key.
func dirPrefix(key string) string {
	if key == "" {
		return ""
	}
	return key + "/"
}

// ReadDir implements xlog/archive.Tree: the objects and common prefixes
// under name + "/", sorted by name. A prefix with nothing under it is
// fs.ErrNotExist.
func (t *Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	key, err := t.key(name)
	if err != nil {
		return nil, err
	}
	l := t.list(dirPrefix(key))
	if l.err != nil {
		return nil, l.err
	}
	if len(l.objs) == 0 && key != "" {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, len(l.objs))
	for i := range l.objs {
		out[i] = fileInfo{l.objs[i]}
	}
	return out, nil
}

// Stat implements xlog/archive.Tree, from the listing of name's parent.
func (t *Tree) Stat(name string) (fs.FileInfo, error) {
	key, err := t.key(name)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return fileInfo{object{name: t.loc.Bucket, dir: true}}, nil
	}
	parent, base := path.Split(key)
	l := t.list(parent)
	if l.err != nil {
		return nil, l.err
	}
	if i, ok := l.index[base]; ok {
		return fileInfo{l.objs[i]}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// Open implements xlog/archive.Tree. Objects up to WholeMax bytes are
// fetched whole (or taken from the prefetched ones); the files that follow
// in the same listing are prefetched. The file implements io.ReaderAt and
// io.Seeker.
func (t *Tree) Open(name string) (fs.File, error) {
	key, err := t.key(name)
	if err != nil {
		return nil, err
	}
	st, err := t.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	info := st.(fileInfo)
	if info.o.size > WholeMax {
		return &rangeFile{t: t, key: key, info: info}, nil
	}
	t.prefetchAfter(key)
	f := t.take(key, info.o.size)
	<-f.done
	if f.err != nil {
		return nil, f.err
	}
	return &memFile{info: info, data: f.data}, nil
}

// HeadSize is what OpenHead fetches of each object: a page header is 40
// bytes, but a compressed segment's first block takes more.
const HeadSize = 64 << 10

// OpenHead opens a file to read its first bytes only (xlog/archive reads
// every segment's page header when it plans a parallel reading, and ls
// --quick every file's): it costs one ranged request of HeadSize bytes, made
// in parallel with those of the files that follow in the listing, and
// reads beyond them fall back to ranged requests. An object already
// fetched whole is read from memory.
func (t *Tree) OpenHead(name string) (fs.File, error) {
	key, err := t.key(name)
	if err != nil {
		return nil, err
	}
	st, err := t.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	info := st.(fileInfo)
	t.mu.Lock()
	whole := t.fetches[key]
	t.mu.Unlock()
	var data []byte
	if whole != nil {
		<-whole.done
		if whole.err == nil {
			// A copy: the whole object goes to whoever opens it, and
			// back to the pool when they close it.
			data = append([]byte(nil), whole.data[:min(len(whole.data), HeadSize)]...)
		}
	}
	if data == nil {
		f := t.head(key, info.o.size, true)
		<-f.done
		if f.err != nil {
			return nil, f.err
		}
		data = f.data
	}
	return &headFile{memFile: memFile{info: info, data: data, borrowed: true},
		rest: &rangeFile{t: t, key: key, info: info}}, nil
}

// head returns the head fetch of key (taking it from the cache), started
// now if need be; with ahead, the heads of the files that follow are
// fetched too.
func (t *Tree) head(key string, size int64, ahead bool) *fetch {
	parent, base := path.Split(key)
	t.mu.Lock()
	f := t.heads[key]
	if f == nil {
		f = t.startHead(key, size)
	}
	delete(t.heads, key)
	l := t.dirs[parent]
	t.mu.Unlock()
	if !ahead || l == nil {
		return f
	}
	<-l.done
	i, ok := l.index[base]
	if !ok {
		return f
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for j := i + 1; j < len(l.objs) && j <= i+4*t.opts.Concurrency; j++ {
		o := l.objs[j]
		if k := parent + o.name; !o.dir && t.heads[k] == nil && len(t.heads) < 16*t.opts.Concurrency {
			t.heads[k] = t.startHead(k, o.size)
		}
	}
	return f
}

// startHead starts fetching a head; t.mu is held.
func (t *Tree) startHead(key string, size int64) *fetch {
	f := &fetch{done: make(chan struct{})}
	go func() {
		t.sem <- struct{}{}
		defer func() { <-t.sem }()
		defer close(f.done)
		n := min(size, HeadSize)
		buf := make([]byte, n)
		err := t.retry(func() error {
			if n == 0 {
				return nil
			}
			rc, err := t.b.get(t.ctx, key, 0, n)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.ReadFull(rc, buf)
			return err
		})
		if err != nil {
			f.err = &Error{URL: t.url(key), Op: "get", Class: t.class(err), Err: err}
		}
		f.data = buf
	}()
	return f
}

// headFile is an object's head in memory, and ranged requests beyond it.
type headFile struct {
	memFile
	rest *rangeFile
}

func (f *headFile) Read(p []byte) (int, error) {
	if f.pos < int64(len(f.data)) {
		return f.memFile.Read(p)
	}
	f.rest.pos = f.pos
	n, err := f.rest.Read(p)
	f.pos += int64(n)
	return n, err
}

func (f *headFile) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= int64(len(f.data)) {
		return f.memFile.ReadAt(p, off)
	}
	return f.rest.ReadAt(p, off)
}

func (f *headFile) Seek(off int64, whence int) (int64, error) {
	return seek(&f.pos, f.info.o.size, off, whence)
}

func (f *headFile) Close() error {
	f.rest.Close()
	return f.memFile.Close()
}

// take returns the fetch of key, started now if it was not prefetched, and
// forgets it (the caller owns the data).
func (t *Tree) take(key string, size int64) *fetch {
	t.mu.Lock()
	f := t.fetches[key]
	if f != nil {
		delete(t.fetches, key)
		t.buffered -= f.size
		t.mu.Unlock()
		return f
	}
	t.mu.Unlock()
	f = &fetch{done: make(chan struct{})}
	t.run(key, size, f)
	return f
}

// prefetchAfter starts fetching the files that follow key in its listing,
// while the memory budget allows.
func (t *Tree) prefetchAfter(key string) {
	parent, base := path.Split(key)
	t.mu.Lock()
	l := t.dirs[parent]
	t.mu.Unlock()
	if l == nil {
		return
	}
	<-l.done
	i, ok := l.index[base]
	if !ok {
		return
	}
	window := 2 * t.opts.Concurrency
	t.mu.Lock()
	defer t.mu.Unlock()
	// Files prefetched but passed over (the reader skipped them) free
	// their share of the budget.
	for k, f := range t.fetches {
		kp, kb := path.Split(k)
		if j, ok := l.index[kb]; ok && kp == parent && j < i-window {
			delete(t.fetches, k)
			t.buffered -= f.size
		}
	}
	for j := i + 1; j < len(l.objs) && j <= i+window; j++ {
		o := l.objs[j]
		k := parent + o.name
		if o.dir || o.size > WholeMax || t.fetches[k] != nil {
			continue
		}
		if t.buffered+o.size > t.opts.PrefetchBytes {
			break
		}
		f := &fetch{done: make(chan struct{}), size: o.size}
		t.fetches[k] = f
		t.buffered += o.size
		go t.run(k, o.size, f)
	}
}

// run fetches key whole into f, within the concurrency bound.
func (t *Tree) run(key string, size int64, f *fetch) {
	t.sem <- struct{}{}
	defer func() { <-t.sem }()
	defer close(f.done)
	err := t.retry(func() error {
		rc, err := t.b.get(t.ctx, key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		buf := getBuffer(size + 1)
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			n, err := rc.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				putBuffer(buf)
				return err
			}
		}
		f.data = buf
		return nil
	})
	if err != nil {
		f.err = &Error{URL: t.url(key), Op: "get", Class: t.class(err), Err: err}
	}
}

// fileInfo is an object's fs.FileInfo and fs.DirEntry.
type fileInfo struct{ o object }

func (i fileInfo) Name() string { return i.o.name }
func (i fileInfo) Size() int64  { return i.o.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.o.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i fileInfo) ModTime() time.Time         { return i.o.mod }
func (i fileInfo) IsDir() bool                { return i.o.dir }
func (i fileInfo) Sys() any                   { return nil }
func (i fileInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }

// memFile is an object fetched whole (or its head).
type memFile struct {
	info     fileInfo
	data     []byte
	pos      int64
	borrowed bool // data belongs to the cache: not pooled on Close
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// Close returns the object's memory to the pool: the reader copies what it
// reads (as from a file), so nothing refers to it any more.
func (f *memFile) Close() error {
	if f.data != nil && !f.borrowed {
		putBuffer(f.data)
		f.data = nil
	}
	return nil
}

// buffers keeps the memory of whole objects for reuse: a run reads
// thousands of segments of one size, and fresh 16 MB allocations cost page
// faults (the kernel zeroes every page) and collections. A free list, not a
// sync.Pool, which every collection empties.
var buffers = make(chan []byte, 32)

func getBuffer(size int64) []byte {
	for {
		select {
		case b := <-buffers:
			if int64(cap(b)) >= size {
				return b[:0]
			}
		default:
			return make([]byte, 0, size)
		}
	}
}

func putBuffer(b []byte) {
	if cap(b) < 1<<20 {
		return
	}
	select {
	case buffers <- b:
	default:
	}
}

func (f *memFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Seek(off int64, whence int) (int64, error) {
	return seek(&f.pos, f.info.o.size, off, whence)
}

func seek(pos *int64, size, off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += *pos
	case io.SeekEnd:
		off += size
	}
	if off < 0 {
		return 0, errors.New("negative position")
	}
	*pos = off
	return off, nil
}

// rangeFile is a large object read with ranged requests: a stream from the
// current position for Read, one request per ReadAt.
type rangeFile struct {
	t    *Tree
	key  string
	info fileInfo
	pos  int64
	rc   io.ReadCloser // streaming from rcPos
	rcAt int64
}

func (f *rangeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *rangeFile) Close() error {
	if f.rc != nil {
		f.rc.Close()
		f.rc = nil
	}
	return nil
}

func (f *rangeFile) Read(p []byte) (int, error) {
	if f.pos >= f.info.o.size {
		return 0, io.EOF
	}
	if f.rc != nil && f.rcAt != f.pos {
		f.rc.Close()
		f.rc = nil
	}
	if f.rc == nil {
		err := f.t.retry(func() error {
			rc, err := f.t.b.get(f.t.ctx, f.key, f.pos, -1)
			f.rc = rc
			return err
		})
		if err != nil {
			return 0, &Error{URL: f.t.url(f.key), Op: "get", Class: f.t.class(err), Err: err}
		}
		f.rcAt = f.pos
	}
	n, err := f.rc.Read(p)
	f.pos += int64(n)
	f.rcAt = f.pos
	if err != nil && err != io.EOF {
		// A broken stream: the next Read reopens it at the position.
		f.rc.Close()
		f.rc = nil
		if n > 0 {
			return n, nil
		}
		return 0, &Error{URL: f.t.url(f.key), Op: "get", Class: ClassNetwork, Err: err}
	}
	if err == io.EOF && f.pos < f.info.o.size {
		f.rc.Close()
		f.rc = nil
		err = nil
		if n == 0 {
			return 0, &Error{URL: f.t.url(f.key), Op: "get", Class: ClassNetwork, Err: io.ErrUnexpectedEOF}
		}
	}
	return n, err
}

func (f *rangeFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.info.o.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.info.o.size-off)
	var n int
	err := f.t.retry(func() error {
		rc, err := f.t.b.get(f.t.ctx, f.key, off, want)
		if err != nil {
			return err
		}
		defer rc.Close()
		n, err = io.ReadFull(rc, p[:want])
		return err
	})
	if err != nil {
		return n, &Error{URL: f.t.url(f.key), Op: "get", Class: f.t.class(err), Err: err}
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (f *rangeFile) Seek(off int64, whence int) (int64, error) {
	return seek(&f.pos, f.info.o.size, off, whence)
}

// byteRange is an HTTP Range value for length bytes from off (length < 0: to
// the end), and "" for the whole object.
func byteRange(off, length int64) string {
	if off <= 0 && length < 0 {
		return ""
	}
	r := "bytes=" + strconv.FormatInt(off, 10) + "-"
	if length >= 0 {
		r += strconv.FormatInt(off+length-1, 10)
	}
	return r
}

// drained reads and closes the body of a response whose content is not
// needed (so the connection is reused), returning err or the close error.
func drained(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
