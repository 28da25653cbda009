package archive_test

import (
	"io/fs"
	"path"
	"strings"
	"testing/fstest"

	"github.com/walscope/walscope/xlog/archive"
)

// memTree is an archive.Tree held in memory: the fuzz targets build and
// read thousands of archives a second through it, where files on disk cost
// a directory, its files and their removal per input. Paths are absolute
// slash paths ("/w/pg_wal/000000010000000000000001"), so the layouts'
// filepath.Base and filepath.Dir see what they see on disk. Directories are
// implied by the files' paths (fstest.MapFS); a file's Mode may make it a
// named pipe or a symlink to test files that are not regular.
type memTree fstest.MapFS

var _ archive.Tree = memTree(nil)

func (t memTree) rel(name string) string {
	name = strings.TrimPrefix(path.Clean(name), "/")
	if name == "" {
		return "."
	}
	return name
}

func (t memTree) Stat(name string) (fs.FileInfo, error) { return fs.Stat(fstest.MapFS(t), t.rel(name)) }

func (t memTree) ReadDir(name string) ([]fs.DirEntry, error) {
	return fs.ReadDir(fstest.MapFS(t), t.rel(name))
}

func (t memTree) Open(name string) (fs.File, error) { return fstest.MapFS(t).Open(t.rel(name)) }

func (t memTree) Join(elem ...string) string { return path.Join(elem...) }

// add stores a regular file at the absolute path p.
func (t memTree) add(p string, data []byte) {
	t[strings.TrimPrefix(p, "/")] = &fstest.MapFile{Data: data, Mode: 0o644}
}
