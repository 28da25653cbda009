package backup

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// file is one file of a backup, read at any offset where it lies: a plain
// file, a region of an uncompressed tar or bundle, or the copy a compressed
// file was decompressed into.
type file interface {
	io.ReaderAt
	Size() int64
}

// store is one layout's view of a backup as a data directory: names are
// data-directory-relative, slash-separated and cleaned ("base/5/1259",
// "pg_tblspc/16385/PG_15_202209061/5/16386"). open's and list's errors wrap
// fs.ErrNotExist when the name is absent.
type store interface {
	open(name string) (file, error)
	// stat is the size of a file, without reading (decompressing) it
	stat(name string) (int64, error)
	list(dir string) ([]string, error)
	close() error
}

// memFile is a file held in memory.
type memFile struct{ *bytes.Reader }

func newMemFile(b []byte) memFile { return memFile{bytes.NewReader(b)} }

// osFile is a plain file read in place (or a file of a Tree that reads at
// any offset).
type osFile struct {
	f    io.ReaderAt
	size int64
}

func (o osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }
func (o osFile) Size() int64                             { return o.size }

// sectionFile is a region of a plain file (a member of an uncompressed tar,
// a file of a pgBackRest bundle stored uncompressed).
type sectionFile struct {
	f         io.ReaderAt
	off, size int64
}

func (s sectionFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= s.size {
		return 0, io.EOF
	}
	want := len(p)
	if int64(want) > s.size-off {
		p = p[:s.size-off]
	}
	n, err := s.f.ReadAt(p, s.off+off)
	if err == nil && n < want {
		err = io.EOF
	}
	return n, err
}
func (s sectionFile) Size() int64 { return s.size }

// handles keeps plain files open between reads (a relation is read a block
// at a time), at most max of them, the least recently used closed first.
type handles struct {
	tree  Tree
	max   int
	lru   *list.List // of *handle, front = most recent
	byKey map[string]*list.Element
}

type handle struct {
	key  string
	f    fs.File
	r    io.ReaderAt
	size int64
}

func newHandles(max int) *handles { return newTreeHandles(localTree{}, max) }

func newTreeHandles(t Tree, max int) *handles {
	return &handles{tree: t, max: max, lru: list.New(), byKey: map[string]*list.Element{}}
}

func (h *handles) get(p string) (io.ReaderAt, int64, error) {
	if e, ok := h.byKey[p]; ok {
		h.lru.MoveToFront(e)
		hd := e.Value.(*handle)
		return hd.r, hd.size, nil
	}
	f, err := h.tree.Open(p)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", p)
	}
	r, ok := f.(io.ReaderAt)
	if !ok {
		f.Close()
		return nil, 0, fmt.Errorf("%s: the tree's file cannot be read at an offset", p)
	}
	h.byKey[p] = h.lru.PushFront(&handle{p, f, r, st.Size()})
	for h.lru.Len() > h.max {
		old := h.lru.Remove(h.lru.Back()).(*handle)
		delete(h.byKey, old.key)
		old.f.Close()
	}
	return r, st.Size(), nil
}

func (h *handles) closeAll() {
	for e := h.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*handle).f.Close()
	}
	h.lru.Init()
	h.byKey = map[string]*list.Element{}
}

// dirStore is a plain data directory (a pg_basebackup -Fp copy, a Barman
// backup's data/, a stopped cluster). A tablespace is found through its
// pg_tblspc/OID symlink, else through tablespace_map or the directories
// the caller knows of (Barman keeps them beside data/).
type dirStore struct {
	root    string
	tblspc  map[string]string // tablespace OID -> its directory, when pg_tblspc/OID does not resolve
	handles *handles
}

func newDirStore(root string, tblspc map[string]string) *dirStore {
	return &dirStore{root: root, tblspc: tblspc, handles: newHandles(256)}
}

// osPath maps a data-directory-relative name to the operating system's path.
func (d *dirStore) osPath(name string) string {
	if rest, ok := strings.CutPrefix(name, "pg_tblspc/"); ok {
		oid, sub, _ := strings.Cut(rest, "/")
		if dir, ok := d.tblspc[oid]; ok {
			if _, err := os.Stat(filepath.Join(d.root, "pg_tblspc", oid)); err != nil {
				return filepath.Join(dir, filepath.FromSlash(sub))
			}
		}
	}
	return filepath.Join(d.root, filepath.FromSlash(name))
}

func (d *dirStore) open(name string) (file, error) {
	f, size, err := d.handles.get(d.osPath(name))
	if err != nil {
		return nil, err
	}
	return osFile{f, size}, nil
}

func (d *dirStore) stat(name string) (int64, error) {
	st, err := os.Stat(d.osPath(name))
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", name)
	}
	return st.Size(), nil
}

func (d *dirStore) list(dir string) ([]string, error) {
	p := d.root
	if dir != "" && dir != "." {
		p = d.osPath(dir)
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if dir == "pg_tblspc" {
		for oid := range d.tblspc {
			if !contains(names, oid) {
				names = append(names, oid)
			}
		}
		sort.Strings(names)
	}
	return names, nil
}

func (d *dirStore) close() error { d.handles.closeAll(); return nil }

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// cleanName checks and cleans a data-directory-relative name: relative,
// slash-separated, not leaving the directory.
func cleanName(name string) (string, bool) {
	name = strings.TrimPrefix(name, "./")
	if name == "" || name == "." {
		return ".", true
	}
	c := path.Clean(name)
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// notExist wraps fs.ErrNotExist for a name the store does not hold.
func notExist(name string) error {
	return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// readTablespaceMap reads a tablespace_map (lines "OID PATH", the path
// with "\\" escaping a newline or backslash since PostgreSQL 14).
func readTablespaceMap(b []byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		oid, p, ok := strings.Cut(line, " ")
		if !ok || oid == "" {
			continue
		}
		p = strings.ReplaceAll(strings.ReplaceAll(p, `\\`, "\x00"), `\`, "")
		m[oid] = strings.ReplaceAll(p, "\x00", `\`)
	}
	return m
}
