package backup

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// gzipOracle extracts a .tar.gz with tar(1) and checks that every regular
// member walscope reads from it is the extracted file, asked for from the
// last member to the first (the worst order for a stream read forward).
// It returns the archive and the bytes a restart from the beginning of the
// stream for each member would have decompressed.
func gzipOracle(t *testing.T, tgz string, opt Options) (*tarArchive, int64) {
	t.Helper()
	x := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", tgz, "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf %s: %v\n%s", tgz, err, out)
	}
	b, err := OpenOptions(opt, tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ts := b.st.(*tarStore)
	var names []string
	for n, m := range ts.members {
		if m.typ == '0' && m.mem == nil && m.size > 0 {
			names = append(names, n)
		}
	}
	if len(names) < 3 {
		t.Fatalf("%d members to extract: the test needs more", len(names))
	}
	sort.Slice(names, func(i, j int) bool { return ts.members[names[i]].off > ts.members[names[j]].off })
	var restart int64
	for _, n := range names {
		got, err := b.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(x, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes read differ from tar -x's %d", n, len(got), len(want))
		}
		restart += ts.members[n].off + ts.members[n].size
	}
	a := ts.archives[0]
	t.Logf("%s: %d members not kept by the index pass (of more than %d bytes, or every one read through an index file) identical to tar -x's, read last first: %d resume points, %d bytes decompressed (%d restarting from the beginning)",
		filepath.Base(tgz), len(names), memLimit, len(a.gz.points), a.inflated, restart)
	return a, restart
}

// TestGzipResumePoints: a pg_basebackup -Ft -z base.tar.gz (fixtures/rows,
// 24 MB of tar) indexed at Open with resume points; its members read in
// reverse order are tar -x's files and cost a fraction of restarting the
// stream for each.
func TestGzipResumePoints(t *testing.T) {
	a, restart := gzipOracle(t, "../fixtures/rows/base.tar.gz", Options{})
	if len(a.gz.points) < 3 {
		t.Fatalf("%d resume points in 24 MB", len(a.gz.points))
	}
	if a.inflated*3 > restart {
		t.Errorf("%d bytes decompressed, %d without resume points: the points are not used", a.inflated, restart)
	}
}

// TestGzipMembers: the same tar split in three and each part compressed by
// gzip(1), concatenated (a gzip file of three members, which gzip -d and
// tar read as one stream): resume points in the later members too, and
// read back from an index file.
func TestGzipMembers(t *testing.T) {
	raw, err := exec.Command("gzip", "-dc", "../fixtures/rows/base.tar.gz").Output()
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	cuts := []int{0, len(raw) / 3, len(raw) * 2 / 3, len(raw)}
	for i := 0; i < 3; i++ {
		cmd := exec.Command("gzip", "-c", "-n")
		cmd.Stdin = bytes.NewReader(raw[cuts[i]:cuts[i+1]])
		part, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, part...)
	}
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := gzipOracle(t, p, Options{})
	members := map[int64]bool{}
	for _, pt := range a.gz.points {
		members[pt.deflate] = true
	}
	if len(members) < 3 {
		t.Errorf("resume points in %d of the 3 gzip members", len(members))
	}
	// and through an index file kept by a first Open: the points of
	// every gzip member read back, each member of the tar tar -x's
	dir := t.TempDir()
	gzipOracle(t, p, Options{IndexDir: dir})
	if a, _ := gzipOracle(t, p, Options{IndexDir: dir}); a.fromIndexFile == "" {
		t.Error("the second Open did not read the index file")
	}
}

// TestGzipDamaged: one byte of base.tar.gz's compressed data changed (in a
// member's data, where the tar's headers stay readable): Open fails with
// ErrDamaged naming the file, by the deflate data or by the CRC-32 of the
// gzip trailer, not a backup read with a wrong page.
func TestGzipDamaged(t *testing.T) {
	raw, err := os.ReadFile("../fixtures/rows/base.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(raw) / 4, len(raw) / 2, len(raw) * 3 / 4} {
		bad := append([]byte(nil), raw...)
		bad[at] ^= 0x01
		p := filepath.Join(t.TempDir(), "base.tar.gz")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p)
		if err == nil {
			b.Close()
		}
		wantErr(t, "Open", err, ErrDamaged, "base.tar.gz")
	}
}
