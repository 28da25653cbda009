package backup

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
)

// fakeBackup is a Backup over a directory the test writes, with a relseg_size
// of its choosing: Debian's PostgreSQL is built with 1 GB segments
// (--with-segsize is not available), so segment arithmetic is tested with
// tiny segments here, and with real files everywhere else.
func fakeBackup(t *testing.T, relseg uint32, files map[string][]byte) *Backup {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Backup{path: dir, st: newDirStore(dir, nil), cache: newExtractCache("", 1<<20), blcksz: 8192, relseg: relseg,
		major: 15, control: &ControlFile{CatalogVersion: 202209061, BlockSize: 8192, RelSegSize: relseg}}
}

// blocks makes n blocks whose first bytes say which block of the relation
// they are (from first on).
func blocks(first, n int) []byte {
	out := make([]byte, n*8192)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(out[i*8192:], uint32(first+i))
	}
	return out
}

func TestSegments(t *testing.T) {
	rel := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 100}
	b := fakeBackup(t, 3, map[string][]byte{
		"base/5/100":     blocks(0, 3),
		"base/5/100.1":   blocks(3, 3),
		"base/5/100.2":   append(blocks(6, 2), 1, 2, 3), // a partial block at the end is not a block
		"base/5/101":     blocks(0, 3),                  // full, no .1: 3 blocks
		"base/5/102":     blocks(0, 4),                  // more than relseg_size
		"base/5/100_fsm": blocks(0, 1),
	})
	n, err := b.NBlocks(rel, decode.ForkMain)
	if err != nil || n != 8 {
		t.Fatalf("NBlocks over REL, REL.1, REL.2 = %d, %v; want 8", n, err)
	}
	buf := make([]byte, 8192)
	for blk := uint32(0); blk < n; blk++ {
		if err := b.ReadBlock(rel, decode.ForkMain, blk, buf); err != nil {
			t.Fatalf("ReadBlock %d: %v", blk, err)
		}
		if got := binary.LittleEndian.Uint32(buf); got != blk {
			t.Errorf("ReadBlock %d read block %d", blk, got)
		}
	}
	for _, blk := range []uint32{8, 9, 10, 1000} {
		if err := b.ReadBlock(rel, decode.ForkMain, blk, buf); !errors.Is(err, ErrNoBlock) {
			t.Errorf("ReadBlock %d: %v, want ErrNoBlock", blk, err)
		}
	}
	if n, err := b.NBlocks(decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 101}, decode.ForkMain); n != 3 || err != nil {
		t.Errorf("a full first segment alone: %d, %v", n, err)
	}
	if _, err := b.NBlocks(decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 102}, decode.ForkMain); !errors.Is(err, ErrDamaged) {
		t.Errorf("a segment over relseg_size: %v, want ErrDamaged", err)
	}
	if n, err := b.NBlocks(rel, decode.ForkFSM); n != 1 || err != nil {
		t.Errorf("fsm fork: %d, %v", n, err)
	}
	if _, err := b.NBlocks(rel, decode.ForkVisibilityMap); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent vm fork: %v", err)
	}
	if err := b.ReadBlock(rel, decode.ForkMain, 0, make([]byte, 100)); err == nil {
		t.Errorf("ReadBlock into a short buffer succeeded")
	}
}

func TestRelPath(t *testing.T) {
	b := fakeBackup(t, 131072, nil)
	for _, tc := range []struct {
		loc  decode.RelFileLocator
		fork decode.ForkNumber
		want string
	}{
		{decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 1259}, decode.ForkMain, "base/5/1259"},
		{decode.RelFileLocator{SpcOID: 1664, DBOID: 0, RelNumber: 1262}, decode.ForkMain, "global/1262"},
		{decode.RelFileLocator{SpcOID: 1663, DBOID: 16385, RelNumber: 16400}, decode.ForkFSM, "base/16385/16400_fsm"},
		{decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16400}, decode.ForkVisibilityMap, "base/5/16400_vm"},
		{decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16400}, decode.ForkInit, "base/5/16400_init"},
		{decode.RelFileLocator{SpcOID: 16384, DBOID: 5, RelNumber: 16396}, decode.ForkMain, "pg_tblspc/16384/PG_15_202209061/5/16396"},
	} {
		if got := b.RelPath(tc.loc, tc.fork); got != tc.want {
			t.Errorf("RelPath(%+v, %d) = %s, want %s", tc.loc, tc.fork, got, tc.want)
		}
	}
	// segment names
	if got, off := blockPlace("base/5/1", 262145, 8192, 131072); got != "base/5/1.2" || off != 8192 {
		t.Errorf("blockPlace = %s %d", got, off)
	}
}

func TestMajorVersionByCatalog(t *testing.T) {
	for _, tc := range []struct {
		cv, cat uint32
		want    int
	}{
		{1002, 201707211, 10}, {1100, 201809051, 11}, {1201, 201909212, 12},
		{1300, 202007201, 13}, {1300, 202107181, 14}, {1300, 202209061, 15}, {1300, 202307071, 16},
		{1300, 202211111, 16}, // a 16 beta
		{1700, 202406281, 17}, {1800, 202506291, 18},
	} {
		c := &ControlFile{ControlVersion: tc.cv, CatalogVersion: tc.cat}
		if got := c.MajorVersion(); got != tc.want {
			t.Errorf("pg_control_version %d catalog %d: %d, want %d", tc.cv, tc.cat, got, tc.want)
		}
	}
}

func TestIncrementalHeader(t *testing.T) {
	le := binary.LittleEndian
	head := func(magic, n, trunc uint32, blocks ...uint32) []byte {
		b := le.AppendUint32(nil, magic)
		b = le.AppendUint32(b, n)
		b = le.AppendUint32(b, trunc)
		for _, x := range blocks {
			b = le.AppendUint32(b, x)
		}
		return b
	}
	pad := func(b []byte, blocks int) []byte {
		if blocks > 0 {
			b = append(b, make([]byte, 8192-len(b)%8192)...)
		}
		return append(b, make([]byte, blocks*8192)...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"no blocks", head(incrementalMagic, 0, 7), true},
		{"two blocks", pad(head(incrementalMagic, 2, 10, 3, 12), 2), true},
		{"bad magic", pad(head(0xd3ae1f0e, 1, 1, 0), 1), false},
		{"block count over relseg", head(incrementalMagic, 200, 1), false},
		{"truncation over relseg", head(incrementalMagic, 0, 200), false},
		{"block number over relseg", pad(head(incrementalMagic, 1, 1, 128), 1), false},
		{"a block missing", pad(head(incrementalMagic, 2, 1, 0, 1), 1), false},
		{"cut in the numbers", head(incrementalMagic, 3, 1, 0)[:14], false},
		{"short", []byte{1, 2}, false},
	} {
		h, err := parseIncrementalHeader(bytes.NewReader(tc.b), int64(len(tc.b)), 8192, 128)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err != nil && !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v does not wrap ErrDamaged", tc.name, err)
		}
		if err == nil && len(h.blocks) > 0 && h.dataOff != 8192 {
			t.Errorf("%s: blocks at %d, want 8192 (the header padded to BLCKSZ)", tc.name, h.dataOff)
		}
	}
}

// TestCacheBounded: decompressed copies beyond the bound are evicted, the
// one in use kept, and Close removes our directory.
func TestCacheBounded(t *testing.T) {
	dir := t.TempDir()
	c := newExtractCache(dir, 1<<20)
	for i := 0; i < 5; i++ {
		if _, err := c.put(string(rune('a'+i)), bytes.NewReader(make([]byte, 600<<10)), 600<<10); err != nil {
			t.Fatal(err)
		}
	}
	if c.used > 1<<20+600<<10 || c.lru.Len() != 1 {
		t.Errorf("%d bytes in %d copies kept, bound 1 MiB", c.used, c.lru.Len())
	}
	if _, err := c.put("short", bytes.NewReader(make([]byte, 10)), 300<<10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short stream: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d directories made in TempDir, want 1", len(ents))
	}
	c.close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Close left %d entries in TempDir", len(ents))
	}
}

// TestPrefetch: a compressed tar's members asked for after Prefetch are
// read from the copies it made in one pass (a gzip one: a zstd one's have
// been made by the index pass already, TestSpill).
func TestPrefetch(t *testing.T) {
	b := openT(t, "../fixtures/rows/base.tar.gz")
	names := []string{"base/5/1259", "base/5/1249", "base/1/1259", "global/1262"}
	if err := b.Prefetch(names...); err != nil {
		t.Fatal(err)
	}
	ts := b.st.(*tarStore)
	big := 0
	for _, n := range names {
		m := ts.members[n]
		if m == nil {
			t.Fatalf("%s not in the tar", n)
		}
		if m.mem == nil {
			big++
		}
		if m.mem == nil && ts.cache.get(m.arc.path+"\x00"+m.name) == nil {
			t.Errorf("%s: not made ready by Prefetch", n)
		}
		if _, err := b.ReadFile(n); err != nil {
			t.Error(err)
		}
	}
	if big == 0 {
		t.Error("every member named was kept in memory by the index pass: Prefetch was not tried")
	}
}

// tarOf builds a tar in memory (for the fuzz seeds).
func tarOf(files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, body := range files {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	return buf.Bytes()
}

// TestConcurrentReads: a Backup read from several goroutines at once (run
// with -race) gives every one the same bytes.
func TestConcurrentReads(t *testing.T) {
	b := openT(t, "../fixtures/backup-pg15")
	rels := []decode.RelFileLocator{{SpcOID: 1663, DBOID: 5, RelNumber: 1259}, {SpcOID: 1663, DBOID: 5, RelNumber: 1249},
		{SpcOID: 1663, DBOID: 5, RelNumber: 16384}, {SpcOID: 1663, DBOID: 1, RelNumber: 1259}}
	want := map[decode.RelFileLocator][]byte{}
	for _, r := range rels {
		all, err := b.ReadFile(b.RelPath(r, decode.ForkMain))
		if err != nil {
			t.Fatal(err)
		}
		want[r] = all
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			buf := make([]byte, 8192)
			for i := 0; i < 200; i++ {
				r := rels[(g+i)%len(rels)]
				blk := uint32(i) % uint32(len(want[r])/8192)
				if err := b.ReadBlock(r, decode.ForkMain, blk, buf); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, want[r][blk*8192:(blk+1)*8192]) {
					errs <- errors.New("a block read concurrently differs")
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestSpill: a zstd-compressed base.tar (no resume points) has its members
// of up to spillLimit bytes decompressed by the index pass at Open: read
// afterwards, they are tar -x's files and cost no second pass.
func TestSpill(t *testing.T) {
	x := t.TempDir()
	if out, err := exec.Command("tar", "--zstd", "-xf", "../fixtures/backup-pg15/base.tar.zst", "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	b := openT(t, "../fixtures/backup-pg15")
	ts := b.st.(*tarStore)
	n := 0
	for name, m := range ts.members {
		if m.typ != tar.TypeReg || m.size <= memLimit || m.arc.prefix != "" {
			continue
		}
		got, err := b.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(x, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: differs from tar -x's", name)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no member above memLimit: the test needs one")
	}
	if a := ts.archives[0]; a.inflated != 0 || ts.spilled == 0 {
		t.Errorf("%d members read: %d bytes decompressed after Open, %d spilled at Open", n, a.inflated, ts.spilled)
	}
	t.Logf("%d members of %d bytes or more identical to tar -x's, %d bytes decompressed at Open, none after", n, memLimit, ts.spilled)
}

// TestSpillCut: a zstd-compressed base.tar cut short, at points inside
// members the index pass decompresses into the cache: Open fails with
// ErrDamaged naming the file (not a backup with a file missing).
func TestSpillCut(t *testing.T) {
	raw, err := os.ReadFile("../fixtures/backup-pg15/base.tar.zst")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(raw) / 3, len(raw) / 2, len(raw) * 2 / 3} {
		p := filepath.Join(t.TempDir(), "base.tar.zst")
		if err := os.WriteFile(p, raw[:at], 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p)
		if err == nil {
			b.Close()
		}
		wantErr(t, "Open", err, ErrDamaged, "base.tar.zst")
	}
}
