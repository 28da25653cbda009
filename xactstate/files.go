package xactstate

import (
	"io/fs"
	"path"
	"sort"
)

// Files is how a State reads the backup's data directory. A backup package
// implements it over its layouts (plain directory, tar, a backup tool's
// repository); FS adapts an fs.FS such as os.DirFS(dataDir).
type Files interface {
	// ReadFile returns a data-directory-relative file, e.g. "pg_xact/0000";
	// an error wrapping fs.ErrNotExist if it is absent.
	ReadFile(name string) ([]byte, error)
	// ReadDir returns the names in a directory, e.g. "pg_twophase"; an error
	// wrapping fs.ErrNotExist if it is absent.
	ReadDir(name string) ([]string, error)
}

// FS returns the Files of a data directory given as an fs.FS (for a
// directory on disk: os.DirFS(dir)).
func FS(fsys fs.FS) Files { return fsFiles{fsys} }

type fsFiles struct{ fsys fs.FS }

func (f fsFiles) ReadFile(name string) ([]byte, error) {
	return fs.ReadFile(f.fsys, path.Clean(name))
}

func (f fsFiles) ReadDir(name string) ([]string, error) {
	ents, err := fs.ReadDir(f.fsys, path.Clean(name))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}
