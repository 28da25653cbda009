package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/walscope/walscope/internal/outfile"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/objstore"
)

// anyURL reports whether one of paths is an object store URL.
func anyURL(paths []string) bool {
	for _, p := range paths {
		if objstore.IsURL(p) {
			return true
		}
	}
	return false
}

// openArchive opens WAL on the local disk, or in place in an object store
// (s3://, gs://, azblob://): every path in one bucket, then.
func openArchive(paths ...string) (*archive.Source, error) {
	if !anyURL(paths) {
		return archive.Open(paths...)
	}
	first, err := objstore.ParseURL(paths[0])
	if err != nil {
		return nil, usageErr("%v", err)
	}
	for _, p := range paths[1:] {
		l, err := objstore.ParseURL(p)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		if l.Scheme != first.Scheme || l.Bucket != first.Bucket {
			return nil, usageErr("%s and %s: all the paths of one run must be in one bucket", paths[0], p)
		}
	}
	t, err := storeTree(first)
	if err != nil {
		return nil, err
	}
	clean := make([]string, len(paths))
	for i, p := range paths {
		l, _ := objstore.ParseURL(p)
		clean[i] = l.String() // no trailing slash: the tree's paths
	}
	return archive.OpenTree(t, clean...)
}

// trees keeps each bucket's tree for the run: a command that opens its
// input twice (export's passes) lists the store once.
var (
	treesMu sync.Mutex
	trees   = map[string]*objstore.Tree{}
)

func storeTree(loc objstore.Location) (*objstore.Tree, error) {
	treesMu.Lock()
	defer treesMu.Unlock()
	key := loc.Scheme + "://" + loc.Bucket
	if t := trees[key]; t != nil {
		return t, nil
	}
	t, err := objstore.Open(context.Background(), key, objstore.Options{})
	if err != nil {
		return nil, err
	}
	trees[key] = t
	return t, nil
}

// storeErr is the error for an object store that cannot be read or
// written: the input (or output) cannot be used, exit 2, with the class.
func storeErr(err error) error {
	if se, ok := errors.AsType[*objstore.Error](err); ok {
		// Not a mistake in the arguments: no "Try --help" hint.
		return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %s failed (%s): %v", se.URL, se.Op, se.Class, se.Err)}
	}
	return nil
}

// exportStaging returns the local directory an export to a store writes
// first (the export package writes only local files), and the function
// that uploads it when the export is complete. Local outputs are returned
// unchanged, with no upload.
func exportStaging(out string) (dir string, upload func(overwrite bool) error, cleanup func(), err error) {
	if !objstore.IsURL(out) {
		return out, nil, func() {}, nil
	}
	if _, err := objstore.ParseURL(out); err != nil {
		return "", nil, nil, usageErr("%v", err)
	}
	// Tracked: SIGINT and SIGTERM remove it too (internal/outfile).
	dir, err = outfile.MkdirTemp(os.TempDir(), "walscope-export-")
	if err != nil {
		return "", nil, nil, err
	}
	upload = func(overwrite bool) error {
		return objstore.Upload(context.Background(), dir, out, objstore.UploadOptions{Overwrite: overwrite})
	}
	return dir, upload, func() { os.RemoveAll(dir); outfile.Untrack(dir) }, nil
}
