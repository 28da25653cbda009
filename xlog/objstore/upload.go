package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrExists reports objects already under a prefix an upload would write.
var ErrExists = errors.New("objects already exist")

// UploadOptions tune Upload.
type UploadOptions struct {
	// Overwrite replaces what is under the prefixes the upload writes:
	// objects there that the upload does not replace are removed after it.
	// Without it, an upload into a prefix that holds objects fails before
	// writing anything (ErrExists).
	Overwrite bool
	// Concurrency bounds the uploads in flight (default 4).
	Concurrency int
}

// Upload copies the files under the local directory dir to the store
// location dst (a URL), keeping their relative paths. Every file is one
// object, visible only once complete (a single request, or a multipart
// upload or block list committed at the end); files whose names start with
// "_" (completion markers, metadata) are uploaded after all the others, so
// a reader that waits for them sees a complete dataset. Hidden files and
// directories (".name": a local writer's locks and staging) are not
// uploaded.
//
// The prefixes written are the directories that hold data files: unless
// opts.Overwrite, Upload refuses (ErrExists) when one of them already holds
// objects, before writing anything. On failure some data files may have
// been uploaded, never a marker.
func Upload(ctx context.Context, dir, dst string, opts UploadOptions) error {
	t, err := Open(ctx, dst, Options{})
	if err != nil {
		return err
	}
	loc, _ := ParseURL(dst)
	return upload(ctx, t, loc.Key, dir, opts)
}

func upload(ctx context.Context, t *Tree, root, dir string, opts UploadOptions) error {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	var data, markers []string // relative, slash-separated
	dirs := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			// Hidden: the local writer's own state (locks, staging).
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), "_") {
			markers = append(markers, rel)
		} else {
			data = append(data, rel)
			dirs[path.Dir(rel)] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	key := func(rel string) string {
		if root == "" {
			return rel
		}
		return root + "/" + rel
	}
	// What is there already, by prefix written.
	existing := map[string]bool{}
	var prefixes []string
	for d := range dirs {
		prefixes = append(prefixes, d)
	}
	sort.Strings(prefixes)
	for _, d := range prefixes {
		k := key(d)
		if d == "." {
			k = root
		}
		var found []string
		if err := t.walk(k, func(key string) { found = append(found, key) }); err != nil {
			return err
		}
		if len(found) > 0 && !opts.Overwrite {
			return fmt.Errorf("%s: %w (%d, e.g. %s): use --overwrite to replace them", t.url(k), ErrExists, len(found), t.url(found[0]))
		}
		for _, f := range found {
			existing[f] = true
		}
	}
	sort.Strings(data)
	sort.Strings(markers)
	if err := t.putAll(ctx, dir, data, key, opts.Concurrency); err != nil {
		return err
	}
	if err := t.putAll(ctx, dir, markers, key, opts.Concurrency); err != nil {
		return err
	}
	for _, rel := range append(data, markers...) {
		delete(existing, key(rel))
	}
	var stale []string
	for k := range existing {
		stale = append(stale, k)
	}
	sort.Strings(stale)
	for _, k := range stale {
		if err := t.retry(func() error { return t.b.del(ctx, k) }); err != nil && t.class(err) != ClassNotFound {
			return &Error{URL: t.url(k), Op: "delete", Class: t.class(err), Err: err}
		}
	}
	return nil
}

// walk calls fn with the key of every object at or under the prefix key
// (recursively, through the tree's listings).
func (t *Tree) walk(key string, fn func(string)) error {
	l := t.listFresh(dirPrefix(key))
	if l.err != nil {
		var e *Error
		if errors.As(l.err, &e) && e.Class == ClassNotFound {
			return nil
		}
		return l.err
	}
	for _, o := range l.objs {
		k := dirPrefix(key) + o.name
		if o.dir {
			if err := t.walk(k, fn); err != nil {
				return err
			}
			continue
		}
		fn(k)
	}
	return nil
}

// listFresh lists a prefix without the cache (an upload's view must be
// current).
func (t *Tree) listFresh(prefix string) *listing {
	t.mu.Lock()
	delete(t.dirs, prefix)
	t.mu.Unlock()
	return t.list(prefix)
}

// putAll uploads files, relative to dir, with bounded concurrency; the
// first error stops the others from starting.
func (t *Tree) putAll(ctx context.Context, dir string, rels []string, key func(string) string, concurrency int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, concurrency)
	for _, rel := range rels {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := t.putFile(ctx, filepath.Join(dir, filepath.FromSlash(rel)), key(rel))
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func (t *Tree) putFile(ctx context.Context, local, key string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	err = t.retry(func() error { return t.b.put(ctx, key, f, st.Size()) })
	if err != nil {
		return &Error{URL: t.url(key), Op: "put", Class: t.class(err), Err: err}
	}
	return nil
}
