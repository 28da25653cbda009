package archive_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/walscope/walscope/xlog/archive"
)

// prefixTree is a Tree of made-up URLs over a local directory: what an
// object store's tree (xlog/objstore) looks like to OpenTree, paths that
// are not the disk's.
type prefixTree struct{ dir string }

const prefix = "mem://bucket"

func (t prefixTree) local(name string) string {
	return filepath.Join(t.dir, strings.TrimPrefix(name, prefix))
}
func (t prefixTree) Stat(name string) (fs.FileInfo, error) {
	return archive.LocalTree{}.Stat(t.local(name))
}
func (t prefixTree) ReadDir(name string) ([]fs.DirEntry, error) {
	return archive.LocalTree{}.ReadDir(t.local(name))
}
func (t prefixTree) Open(name string) (fs.File, error) {
	return archive.LocalTree{}.Open(t.local(name))
}
func (t prefixTree) Join(elem ...string) string {
	return prefix + "/" + strings.TrimPrefix(strings.Join(append([]string{strings.TrimPrefix(elem[0], prefix)}, elem[1:]...), "/"), "/")
}

// OpenTree detects layouts over any file tree: the paths it reports are
// the tree's own.
func ExampleOpenTree() {
	tree := prefixTree{dir: filepath.Join("..", "..", "fixtures")}
	src, err := archive.OpenTree(tree, prefix+"/sample")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	for _, f := range src.Segments() {
		fmt.Println(src.Layout(), f.Path)
	}
	// Output:
	// directory mem://bucket/sample/000000010000000000000006
	// directory mem://bucket/sample/000000010000000000000007
}
