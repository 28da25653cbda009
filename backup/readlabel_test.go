package backup

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/internal/testwal"
)

// TestReadLabel: the label read ahead of Open is the one Open reads, for
// pg_basebackup -Ft tars compressed with gzip (fixtures/rows) and zstd
// (fixtures/backup-pg15) and the latter uncompressed, each given as the
// file and as its directory, and for a data directory (fixtures/rows's
// tar extracted); a tar with backup_label after its first members and a
// directory without one are not read ahead (ErrNoLabelAhead). InflatesToEnd
// is true for the compressed tars alone.
func TestReadLabel(t *testing.T) {
	root := testwal.Root(t)
	tmp := t.TempDir()
	gz := filepath.Join(root, "fixtures", "rows", "base.tar.gz")
	zst := filepath.Join(root, "fixtures", "backup-pg15", "base.tar.zst")

	// base.tar: the zstd tar decompressed, beside its manifest
	plainTar := filepath.Join(tmp, "tar", "base.tar")
	copyThrough(t, zst, plainTar, func(r io.Reader) io.Reader {
		zr, err := zstd.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		return zr
	})
	copyThrough(t, filepath.Join(root, "fixtures", "backup-pg15", "backup_manifest"), filepath.Join(tmp, "tar", "backup_manifest"), nil)
	// a data directory: the gzip tar extracted
	dataDir := filepath.Join(tmp, "data")
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var members []*tar.Header
	var bodies [][]byte
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		members, bodies = append(members, h), append(bodies, body)
		p := filepath.Join(dataDir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o700)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
				err = os.WriteFile(p, body, 0o600)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	compared := 0
	for _, p := range []string{gz, filepath.Dir(gz), zst, filepath.Dir(zst), plainTar, filepath.Dir(plainTar), dataDir} {
		b, err := Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := *b.Label()
		b.Close()
		l, err := ReadLabel(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if *l != want {
			t.Errorf("%s: read ahead %+v, Open's %+v", p, *l, want)
		}
		// the compressed tars (the file or its directory) are inflated
		// to their end by Open; the plain tar and the directory are not
		if got, want := InflatesToEnd(p), p == gz || p == filepath.Dir(gz) || p == zst || p == filepath.Dir(zst); got != want {
			t.Errorf("%s: InflatesToEnd %v, want %v", p, got, want)
		}
		compared++
	}
	if compared != 7 {
		t.Fatalf("%d labels compared", compared)
	}

	// backup_label moved after the other members
	if members[0].Name != "backup_label" {
		t.Fatalf("the fixture's first member is %s", members[0].Name)
	}
	late := filepath.Join(tmp, "late", "base.tar")
	if err := os.MkdirAll(filepath.Dir(late), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(late)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(out)
	for _, i := range append(seq(1, len(members)), 0) {
		if err := tw.WriteHeader(members[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if b, err := Open(late); err != nil {
		t.Fatalf("%s: %v", late, err) // still a backup
	} else {
		b.Close()
	}
	if err := os.Remove(filepath.Join(dataDir, "backup_label")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{late, dataDir} {
		if _, err := ReadLabel(p); !errors.Is(err, ErrNoLabelAhead) {
			t.Errorf("%s: %v, want ErrNoLabelAhead", p, err)
		}
	}
	t.Logf("%d labels read ahead equal to Open's", compared)
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// copyThrough copies src to dst (its directory made), through wrap if set.
func copyThrough(t *testing.T, src, dst string, wrap func(io.Reader) io.Reader) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var r io.Reader = in
	if wrap != nil {
		r = wrap(in)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, r); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
