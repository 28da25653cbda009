package archive_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestOpenNothing: a path holding no WAL is an error matching
// xlog.ErrNoSegments, never an empty source.
func TestOpenNothing(t *testing.T) {
	empty := t.TempDir()
	junk := t.TempDir()
	other := filepath.Join(junk, "notes.txt")
	os.WriteFile(other, []byte("not WAL"), 0o644)
	for name, paths := range map[string][]string{
		"empty directory":       {empty},
		"directory of non-WAL":  {junk},
		"several non-WAL paths": {other, empty},
		"no path":               nil,
	} {
		src, err := archive.Open(paths...)
		if !errors.Is(err, xlog.ErrNoSegments) || src != nil {
			t.Errorf("%s: Open = %v, %v; want an error matching xlog.ErrNoSegments", name, src, err)
		}
		if _, ok := errors.AsType[*archive.Error](err); !ok {
			t.Errorf("%s: %v is not an *archive.Error", name, err)
		}
	}
	if _, err := archive.Open(filepath.Join(empty, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v, want os.ErrNotExist", err)
	}
}

// TestOpenEveryForm: Open reads one directory, a data directory, a
// repository, compressed files named one by one and a tar file, and gives
// each the same segments.
func TestOpenEveryForm(t *testing.T) {
	plain := fixture(t, "fixtures/pg15-replica-lz4")
	base, err := archive.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	want := len(base.Segments())
	if want == 0 {
		t.Fatal("no segments in the fixture")
	}
	root := t.TempDir()
	datadir := filepath.Join(root, "data")
	archivetest.Plain(t, plain, filepath.Join(datadir, "pg_wal"))
	os.WriteFile(filepath.Join(datadir, "PG_VERSION"), []byte("15\n"), 0o644)
	walg := filepath.Join(root, "walg")
	archivetest.WALG(t, plain, walg)
	tar := filepath.Join(root, "pg_wal.tar.gz")
	archivetest.Tar(t, plain, tar, false, "gzip")
	gz := filepath.Join(root, "gz")
	os.MkdirAll(gz, 0o755)
	var files []string
	for _, p := range archivetest.WALFiles(t, plain) {
		dst := filepath.Join(gz, p+".gz")
		os.WriteFile(dst, archivetest.Compress(t, "gzip", readFile(t, filepath.Join(plain, p))), 0o644)
		files = append(files, dst)
	}
	for name, paths := range map[string][]string{
		"data directory":   {datadir},
		"wal-g":            {walg},
		"tar":              {tar},
		"compressed files": files,
	} {
		src, err := archive.Open(paths...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := len(src.Segments()); got != want {
			t.Errorf("%s: %d segments, want %d", name, got, want)
		}
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
		if err != nil {
			t.Errorf("%s: NewReader: %v", name, err)
		} else {
			if _, err := r.Next(); err != nil {
				t.Errorf("%s: first record: %v", name, err)
			}
			r.Close()
		}
		src.Close()
	}
}
