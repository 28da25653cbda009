package backup

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
)

// copyDir copies a directory of the scenario (cp -a: symlinks kept).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", src, err, out)
	}
	return dst
}

// wantErr checks that err wraps sentinel and names the file concerned.
func wantErr(t *testing.T, what string, err, sentinel error, names string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: %v, want %v", what, err, sentinel)
	}
	if !strings.Contains(err.Error(), names) {
		t.Errorf("%s: %q does not name %s", what, err, names)
	}
	t.Logf("%s: %v", what, err)
}

// TestDamagedTar: a base.tar cut inside a member, a base.tar cut at a
// member's end (the tar reads as complete: backup_manifest tells), a
// compressed tar cut short, a backup_manifest changed.
func TestDamagedTar(t *testing.T) {
	w := scenario(t)
	t.Run("cut inside a member", func(t *testing.T) {
		dir := copyDir(t, filepath.Join(w, "tar-none"))
		base := filepath.Join(dir, "base.tar")
		st, _ := os.Stat(base)
		if err := os.Truncate(base, st.Size()/2+100); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		wantErr(t, "Open", err, ErrDamaged, "base.tar")
	})
	t.Run("cut at a member's end", func(t *testing.T) {
		dir := copyDir(t, filepath.Join(w, "tar-none"))
		base := filepath.Join(dir, "base.tar")
		// the end of the member nearest the middle, rounded to the tar's blocks
		f, err := os.Open(base)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		tr := tar.NewReader(f)
		var cut int64
		for {
			h, err := tr.Next()
			if err != nil {
				t.Fatalf("no member past the middle: %v", err)
			}
			pos, _ := f.Seek(0, 1)
			if end := pos + (h.Size+511)/512*512; end > st.Size()/2 {
				cut = end
				break
			}
		}
		f.Close()
		if err := os.Truncate(base, cut); err != nil {
			t.Fatal(err)
		}
		_, err = Open(dir)
		wantErr(t, "Open", err, ErrMissingFile, "listed in backup_manifest")
	})
	for _, kind := range []string{"client-gzip", "server-lz4", "client-zstd"} {
		t.Run("compressed "+kind+" cut", func(t *testing.T) {
			dir := copyDir(t, filepath.Join(w, "tar-"+kind))
			base, _, _ := findTars(dir)
			p := filepath.Join(dir, base)
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()*2/3); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			wantErr(t, "Open", err, ErrDamaged, base)
		})
	}
	t.Run("manifest changed", func(t *testing.T) {
		dir := copyDir(t, filepath.Join(w, "tar-none"))
		mf := filepath.Join(dir, "backup_manifest")
		raw, err := os.ReadFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.Replace(raw, []byte(`"Size": 8192`), []byte(`"Size": 8193`), 1)
		if err := os.WriteFile(mf, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Open(dir)
		wantErr(t, "Open", err, ErrDamaged, "backup_manifest")
	})
	t.Run("pg_control damaged", func(t *testing.T) {
		dir := copyDir(t, filepath.Join(w, "plain"))
		p := filepath.Join(dir, "global", "pg_control")
		raw, _ := os.ReadFile(p)
		raw[100] ^= 0x10
		os.WriteFile(p, raw, 0o600)
		_, err := Open(dir)
		wantErr(t, "Open", err, ErrDamaged, "global/pg_control")
	})
}

// TestDamagedPgBackRest: an incr backup whose full backup is gone, a
// repository file changed.
func TestDamagedPgBackRest(t *testing.T) {
	w := scenario(t)
	labels := strings.Fields(facts["pgbr_labels"])
	full, incr := labels[0], labels[2] // 054603F and its incr
	set := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(set, 0o755)
	for _, l := range []string{full, labels[1], incr} {
		if out, err := exec.Command("cp", "-a", filepath.Join(w, "pgbr", "backup", "demo", l), set).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	b := openT(t, filepath.Join(set, incr))
	ps := b.st.(*pgbrStore)
	var referenced, own string
	for name, f := range ps.files {
		if f.size > 0 && f.reference == full && locMatch(name) && referenced == "" {
			referenced = name
		}
		if f.size > 8192 && f.reference == "" && locMatch(name) && own == "" {
			own = name
		}
	}
	if referenced == "" || own == "" {
		t.Fatalf("no relation file referenced from %s, or none of its own", full)
	}
	want, err := b.ReadFile(referenced)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()

	if err := os.RemoveAll(filepath.Join(set, full)); err != nil {
		t.Fatal(err)
	}
	b = openT(t, filepath.Join(set, incr))
	_, err = b.ReadFile(referenced)
	wantErr(t, "ReadFile of a file of the removed full backup", err, ErrMissingFile, full)
	loc, fork, _ := locOf(referenced)
	err = b.ReadBlock(loc, fork, 0, make([]byte, 8192))
	wantErr(t, "ReadBlock of it", err, ErrMissingFile, full)
	_ = want

	// backup.manifest (and its .copy) cut short, or a file's size changed in
	// it: its backrest-checksum tells
	for _, change := range []func([]byte) []byte{
		func(m []byte) []byte { return m[:len(m)*2/3] },
		func(m []byte) []byte { return bytes.Replace(m, []byte(`"size":8192,`), []byte(`"size":8193,`), 1) },
	} {
		dir := copyDir(t, filepath.Join(set, incr))
		for _, n := range []string{"backup.manifest", "backup.manifest.copy"} {
			m, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, n), change(m), 0o600)
		}
		// the copy is read beside the other backups of the set
		moved := filepath.Join(set, "changed")
		os.Rename(dir, moved)
		_, err := Open(moved)
		wantErr(t, "Open with a changed backup.manifest", err, ErrDamaged, "backrest-checksum")
		os.RemoveAll(moved)
	}

	// a stored file changed: gzip's CRC or the manifest's SHA-1 tells
	rp := ps.repoPath(own, ps.files[own])
	rp = strings.Replace(rp, filepath.Join(w, "pgbr", "backup", "demo"), set, 1)
	raw, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0xff
	os.WriteFile(rp, raw, 0o644)
	_, err = b.ReadFile(own)
	wantErr(t, "ReadFile of a changed file", err, ErrDamaged, filepath.Base(rp))
}

func locMatch(name string) bool { _, _, ok := locOf(name); return ok }

// TestNotFound: what a backup does not hold, and what is not a backup.
func TestNotFound(t *testing.T) {
	w := scenario(t)
	b := openT(t, filepath.Join(w, "tar-client-zstd"))
	if _, err := b.ReadFile("base/5/999999"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of an absent file: %v", err)
	}
	if _, err := b.NBlocks(decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 999999}, decode.ForkMain); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("NBlocks of an absent relation: %v", err)
	}
	if err := b.ReadBlock(decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 999999}, decode.ForkMain, 0, make([]byte, 8192)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadBlock of an absent relation: %v", err)
	}
	if _, err := b.ReadFile("../etc/passwd"); err == nil {
		t.Errorf("ReadFile outside the data directory succeeded")
	}
	// pg_xact and both kinds of pg_filenode.map are there
	for _, n := range []string{"pg_xact/0000", "global/pg_filenode.map", "base/5/pg_filenode.map", "postgresql.auto.conf", "PG_VERSION"} {
		if _, err := b.ReadFile(n); err != nil {
			t.Errorf("ReadFile(%s): %v", n, err)
		}
	}
	_, err := Open(t.TempDir())
	wantErr(t, "Open of an empty directory", err, ErrNotBackup, "")
	_, err = Open(filepath.Join(w, "plain"), filepath.Join(w, "tar-none"))
	wantErr(t, "Open of two full backups", err, ErrChain, "full backup")
}
