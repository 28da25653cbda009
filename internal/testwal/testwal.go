// Package testwal finds the real WAL that tests read: the fixtures under
// fixtures/ (PostgreSQL 15, made by fixtures/generate.sh) and the corpora in
// ../shared/corpora (PostgreSQL 13 and 18). Each set is a directory holding
// archive.tar.zst (archive/: segments, .partial, .history) and ref.tar.zst
// (ref/: pg_waldump's outputs), which Extract unpacks once per test binary.
package testwal

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Set is one fixture or corpus.
type Set struct {
	Name string // e.g. "corpora/pg18-8k-mixed" or "fixtures/pg15-replica-pglz"
	Dir  string // the directory holding archive.tar.zst and ref.tar.zst
}

// Root returns the module root (the directory holding go.mod).
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Sets lists every fixture and corpus present. The corpora are required: a
// missing ../shared/corpora fails the test rather than skipping it.
func Sets(tb testing.TB) []Set {
	tb.Helper()
	root := Root(tb)
	var out []Set
	for _, base := range []string{filepath.Join(root, "fixtures"), filepath.Join(root, "fixtures", "whatif"), filepath.Join(root, "..", "shared", "corpora")} {
		ents, err := os.ReadDir(base)
		if err != nil {
			tb.Fatalf("reading %s: %v", base, err)
		}
		for _, e := range ents {
			d := filepath.Join(base, e.Name())
			// a set is an archive with pg_waldump's answers beside it
			// (fixtures/README.md); fixtures of other layouts (a backup
			// and its archive, such as fixtures/rows) are not sets
			_, aerr := os.Stat(filepath.Join(d, "archive.tar.zst"))
			_, rerr := os.Stat(filepath.Join(d, "ref.tar.zst"))
			if aerr == nil && rerr == nil {
				name, _ := filepath.Rel(filepath.Join(root, "fixtures"), d)
				if strings.HasPrefix(name, "..") {
					name = "corpora/" + e.Name()
				} else {
					name = "fixtures/" + name
				}
				out = append(out, Set{Name: name, Dir: d})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	var corpora int
	for _, s := range out {
		if strings.HasPrefix(s.Name, "corpora/") {
			corpora++
		}
	}
	if corpora == 0 {
		tb.Fatal("no corpora found in ../shared/corpora")
	}
	return out
}

var (
	mu        sync.Mutex
	extracted = map[string]string{}
	tmpRoot   string
)

// Extract unpacks the set's archive and ref tarballs into a directory shared
// by the whole test binary and returns it; it holds archive/ and ref/.
func Extract(tb testing.TB, s Set) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if d, ok := extracted[s.Dir]; ok {
		return d
	}
	if tmpRoot == "" {
		var err error
		if tmpRoot, err = os.MkdirTemp("", "walscope-testwal-"); err != nil {
			tb.Fatal(err)
		}
	}
	dst := filepath.Join(tmpRoot, strings.ReplaceAll(s.Name, "/", "_"))
	for _, tarball := range []string{"archive.tar.zst", "ref.tar.zst"} {
		if err := UntarZstd(filepath.Join(s.Dir, tarball), dst); err != nil {
			tb.Fatalf("extracting %s/%s: %v", s.Name, tarball, err)
		}
	}
	extracted[s.Dir] = dst
	return dst
}

// CorruptCases returns the tarballs of fixtures/corrupt's cases (one
// damage each, see fixtures/corrupt), sorted; fewer than atLeast fails the
// test: the catalogue would be missing.
func CorruptCases(tb testing.TB, atLeast int) []string {
	tb.Helper()
	cases, _ := filepath.Glob(filepath.Join(Root(tb), "fixtures", "corrupt", "*", "segments.tar.zst"))
	if len(cases) < atLeast {
		tb.Fatalf("only %d cases in fixtures/corrupt", len(cases))
	}
	return cases
}

// CaseName is a case's name: its folder in fixtures/corrupt.
func CaseName(tarball string) string { return filepath.Base(filepath.Dir(tarball)) }

// ExtractCase unpacks a case's segments into a temporary directory of the
// test and returns it.
func ExtractCase(tb testing.TB, tarball string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := UntarZstd(tarball, dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// UntarZstd unpacks a .tar.zst file into dst, refusing paths that leave it.
func UntarZstd(path, dst string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("unsafe path %q in %s", h.Name, path)
		}
		target := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, io.LimitReader(tr, h.Size)); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}

// Timeline is one timeline of a set, with the first and last plain segment
// that pg_waldump was run over to make ref/*-TL.txt.
type Timeline struct {
	TLI         string // 8 hex digits
	First, Last string // segment file names
}

// Timelines lists the timelines of an extracted set that have reference output.
func Timelines(tb testing.TB, dir string) []Timeline {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "archive"))
	if err != nil {
		tb.Fatal(err)
	}
	segs := map[string][]string{}
	for _, e := range ents {
		n := e.Name()
		if len(n) == 24 && !strings.Contains(n, ".") {
			segs[n[:8]] = append(segs[n[:8]], n)
		}
	}
	var out []Timeline
	for tli, names := range segs {
		if _, err := os.Stat(filepath.Join(dir, "ref", "records-"+tli+".txt")); err != nil {
			continue
		}
		sort.Strings(names)
		out = append(out, Timeline{TLI: tli, First: names[0], Last: names[len(names)-1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TLI < out[j].TLI })
	if len(out) == 0 {
		tb.Fatalf("%s: no timeline with reference output", dir)
	}
	return out
}

// ReadRef returns the content of ref/name, or an error wrapping
// os.ErrNotExist.
func ReadRef(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "ref", name))
	if errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return string(b), err
}

// Cleanup removes everything Extract unpacked; call it from TestMain.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
		tmpRoot = ""
		extracted = map[string]string{}
	}
}
