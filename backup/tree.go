package backup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Tree is a file tree a backup is read from: the methods of
// xlog/archive.Tree, so an object store bucket (xlog/objstore.Tree, paths
// that are URLs such as s3://bucket/repo) serves as one without this package
// importing either. Open's files must implement io.ReaderAt.
type Tree interface {
	Stat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Open(name string) (fs.File, error)
	Join(elem ...string) string
}

// localTree is the local file system.
type localTree struct{}

func (localTree) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (localTree) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (localTree) Join(elem ...string) string                 { return filepath.Join(elem...) }
func (localTree) Open(name string) (fs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readTreeFile reads a whole file of a tree, at most limit bytes.
func readTreeFile(t Tree, p string, limit int64) ([]byte, error) {
	f, err := t.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", p, limit)
	}
	return b, nil
}

// lastElem splits a tree path at its last separator (a URL's "//" kept,
// which path.Dir would fold).
func lastElem(p string) (dir, base string) {
	p = strings.TrimRight(p, "/"+string(os.PathSeparator))
	i := strings.LastIndexAny(p, "/"+string(os.PathSeparator))
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// OpenTree opens a pgBackRest backup whose repository lies in a Tree (an
// object store bucket: t is then an xlog/objstore.Tree and path a URL in
// it): path is the backup's directory (REPO/backup/STANZA/LABEL) or its
// stanza's (the newest backup). Files are read with ranged reads where the
// tree supports them, and decompressed into the cache as from a local
// repository. Other layouts are opened from the local file system only
// (Open).
func OpenTree(t Tree, path string, opt Options) (*Backup, error) {
	if opt.CacheBytes <= 0 {
		opt.CacheBytes = 1 << 30
	}
	var l *BackupLabel
	var err error
	exists := func(n string) bool { _, err := t.Stat(t.Join(path, n)); return err == nil }
	switch {
	case exists("backup.manifest") || exists("backup.manifest.copy"):
		l, err = readPgBackRestBackupIn(t, path)
	case isPgBackRestStanzaIn(t, path):
		l, err = readPgBackRestStanzaIn(t, path)
	default:
		return nil, errorf(path, "", -1, ErrNotBackup, "no pgBackRest backup.manifest or stanza backup.info (OpenTree reads pgBackRest repositories)")
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Backup: path, Offset: -1, Err: fmt.Errorf("%w: %v", ErrMissingFile, err)}
		}
		return nil, &Error{Backup: path, Offset: -1, Err: fmt.Errorf("%w: %v", ErrDamaged, err)}
	}
	cache := newExtractCache(opt.TempDir, opt.CacheBytes)
	b := &Backup{path: path, cache: cache, label: l, layout: LayoutPgBackRest}
	ps, err := openPgBackRestIn(t, path, l.Path, cache)
	if err != nil {
		cache.close()
		return nil, err
	}
	b.st = ps
	if err := b.init(); err != nil {
		b.close()
		cache.close()
		return nil, err
	}
	return b, nil
}
