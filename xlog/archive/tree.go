package archive

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Tree is the file tree an archive is read from: the local disk (Open), or
// an object store (OpenTree with xlog/objstore's trees), where "directories"
// are key prefixes. Layout detection, decompression and every check run the
// same over any Tree: only listing and opening differ.
//
// Paths are the tree's own: OS paths on disk, URLs such as
// s3://bucket/prefix/000000010000000000000001 in a store. They are what
// errors, ls and SegmentFile.Path show.
type Tree interface {
	// Stat describes the file or directory at name (fs.ErrNotExist if there
	// is neither).
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Open opens a file for reading. The file must also implement
	// io.ReaderAt and io.Seeker (as *os.File does).
	Open(name string) (fs.File, error)
	// Join joins path elements with the tree's separator.
	Join(elem ...string) string
}

// LocalTree is the local file system: paths are OS paths.
type LocalTree struct{}

// Stat implements Tree.
func (LocalTree) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// ReadDir implements Tree.
func (LocalTree) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Open implements Tree.
func (LocalTree) Open(name string) (fs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}

// Join implements Tree.
func (LocalTree) Join(elem ...string) string { return filepath.Join(elem...) }

// HeadOpener is implemented by trees where opening a file costs its whole
// transfer (object stores): OpenHead opens a file to read its first bytes
// (a page header, a compression header) cheaply. Reads beyond them must
// still work, if slower.
type HeadOpener interface {
	OpenHead(name string) (fs.File, error)
}

// openHead opens a file to read its first bytes: through the tree's
// OpenHead where it has one.
func (s *Source) openHead(name string) (treeFile, error) {
	h, ok := s.tree.(HeadOpener)
	if !ok {
		return s.open(name)
	}
	f, err := h.OpenHead(name)
	if err != nil {
		return nil, err
	}
	tf, ok := f.(treeFile)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: the tree's files do not support random reads", name)
	}
	return tf, nil
}

// treeFile is what a Tree's files offer: the sequential reads of decoders
// and tar readers, and the random reads of plain segments read in place.
type treeFile interface {
	fs.File
	io.ReaderAt
	io.Seeker
}

// open opens a file of the source's tree.
func (s *Source) open(name string) (treeFile, error) { return openTree(s.tree, name) }

func openTree(t Tree, name string) (treeFile, error) {
	f, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	tf, ok := f.(treeFile)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: the tree's files do not support random reads", name)
	}
	return tf, nil
}

// readFile reads a small file of the tree whole (info files, indexes).
func readFile(t Tree, name string) ([]byte, error) {
	f, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// readDir lists a directory of the tree once per opening: detecting the
// layout asks for the same directory up to four times (pgBackRest's
// stanzas, the repositories below, the files), which over an archive of
// many small segments cost as much as reading them (issue 16). finish
// drops the listings.
func (s *Source) readDir(dir string) ([]fs.DirEntry, error) {
	if l, ok := s.dirs[dir]; ok {
		return l.ents, l.err
	}
	ents, err := s.tree.ReadDir(dir)
	if s.dirs == nil {
		s.dirs = map[string]dirListing{}
	}
	s.dirs[dir] = dirListing{ents, err}
	return ents, err
}

// dirListing is what the tree's ReadDir returned for one directory.
type dirListing struct {
	ents []fs.DirEntry
	err  error
}

func (s *Source) isDir(p string) bool {
	st, err := s.tree.Stat(p)
	return err == nil && st.IsDir()
}

func (s *Source) exists(p string) bool {
	_, err := s.tree.Stat(p)
	return err == nil
}
