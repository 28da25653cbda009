package backup

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
)

// copyFile copies src to a new file dst with src's modification time.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// indexFiles lists the index files of dir.
func indexFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// openIndexed opens tgz with index directory dir and tells whether its
// archive came from an index file, with its members (name -> entry).
func openIndexed(t *testing.T, tgz, dir string) (fromFile bool, members map[string]tarEntry, saveErr error) {
	t.Helper()
	b, err := OpenOptions(Options{IndexDir: dir}, tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ts := b.st.(*tarStore)
	members = map[string]tarEntry{}
	for n, m := range ts.members {
		members[n] = tarEntry{name: m.name, link: m.link, off: m.off, size: m.size, typ: m.typ}
	}
	return ts.archives[0].fromIndexFile != "", members, ts.indexSaveErr
}

// indexedOnce opens tgz once with a new index directory and returns the
// directory, the one index file made in it and its bytes.
func indexedOnce(t *testing.T, tgz string) (dir, file string, content []byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "index")
	openIndexed(t, tgz, dir)
	files := indexFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("index files: %v", files)
	}
	file = filepath.Join(dir, files[0])
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return dir, file, content
}

// TestGzipIndexFile: the first Open of a pg_basebackup -Ft -z base.tar.gz
// (fixtures/rows) with an index directory writes one index file; the next
// Open reads it instead of inflating the tar, and has the same members,
// each of which reads as tar -x's file (all of them now inflated from the
// resume points, none kept by a pass), last first, for a fraction of what
// restarting the stream for each costs. A copy elsewhere with the same
// modification time finds the same file.
func TestGzipIndexFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	tgz := filepath.Join(t.TempDir(), "base.tar.gz")
	copyFile(t, "../fixtures/rows/base.tar.gz", tgz)
	fromFile, first, saveErr := openIndexed(t, tgz, dir)
	if fromFile || saveErr != nil {
		t.Fatalf("first Open: from an index file %v, written: %v", fromFile, saveErr)
	}
	if files := indexFiles(t, dir); len(files) != 1 || !strings.HasSuffix(files[0], indexFileSuffix) {
		t.Fatalf("index directory after the first Open: %v", files)
	}
	fromFile, second, _ := openIndexed(t, tgz, dir)
	if !fromFile {
		t.Fatal("second Open did not read the index file")
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("members differ: %d from the pass, %d from the index file", len(first), len(second))
	}
	a, restart := gzipOracle(t, tgz, Options{IndexDir: dir})
	if a.fromIndexFile == "" {
		t.Fatal("the oracle's Open did not read the index file")
	}
	if a.inflated*3 > restart {
		t.Errorf("%d bytes decompressed, %d without resume points: the points are not used", a.inflated, restart)
	}
	other := filepath.Join(t.TempDir(), "base.tar.gz")
	copyFile(t, tgz, other)
	if fromFile, _, _ := openIndexed(t, other, dir); !fromFile {
		t.Error("a copy with the same content and time did not find the index file")
	}
}

// TestGzipIndexFileStale: an index file is not used, and is made again,
// when the tar's modification time changed, when it was damaged (a byte
// changed, cut short), or when it is another tar's (same name, its
// identity inside differs); a changed tar read through a stale index
// would hand out wrong members.
func TestGzipIndexFileStale(t *testing.T) {
	tgz := filepath.Join(t.TempDir(), "base.tar.gz")
	copyFile(t, "../fixtures/rows/base.tar.gz", tgz)
	dir, p, good := indexedOnce(t, tgz)
	damage := map[string]func() error{
		"modification time changed": func() error {
			when := time.Now().Add(-time.Hour)
			return os.Chtimes(tgz, when, when)
		},
		"a byte changed": func() error {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x40
			return os.WriteFile(p, bad, 0o600)
		},
		"cut short": func() error { return os.WriteFile(p, good[:len(good)-100], 0o600) },
		"empty":     func() error { return os.WriteFile(p, nil, 0o600) },
		"another tar's": func() error {
			x, err := decodeGzipTarIndex(good)
			if err != nil {
				return err
			}
			x.id.head[0] ^= 1
			return os.WriteFile(p, x.encode(nil), 0o600)
		},
	}
	for what, do := range damage {
		openIndexed(t, tgz, dir) // the file as it is now the tar's
		if err := do(); err != nil {
			t.Fatal(err)
		}
		fromFile, _, saveErr := openIndexed(t, tgz, dir)
		if fromFile || saveErr != nil {
			t.Errorf("%s: read from the index file %v, made again: %v", what, fromFile, saveErr)
		}
		if fromFile, _, _ := openIndexed(t, tgz, dir); !fromFile {
			t.Errorf("%s: the index file made again is not read", what)
		}
		if files := indexFiles(t, dir); len(files) != 1 {
			t.Errorf("%s: index files %v", what, files)
		}
	}
}

// TestGzipIndexFileUnwritable: an index directory that cannot be made
// (under a file) costs nothing but the file: Open reads the tar.
func TestGzipIndexFileUnwritable(t *testing.T) {
	block := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(block, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, members, saveErr := openIndexed(t, "../fixtures/rows/base.tar.gz", filepath.Join(block, "index"))
	if fromFile || saveErr == nil || len(members) == 0 {
		t.Fatalf("from an index file %v, save error %v, %d members", fromFile, saveErr, len(members))
	}
}

// TestPruneIndexDir: beyond the files or bytes kept, the least recently
// used index files go; temporary files of ours go after an hour; nothing
// else in the directory is touched.
func TestPruneIndexDir(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, size int, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		write(string(rune('a'+i))+indexFileSuffix, 100, time.Duration(i)*time.Minute)
	}
	write("notes.txt", 10, 10*time.Hour)
	write("old"+indexFileSuffix+".bak", 10, 10*time.Hour)
	write(indexTempPrefix+"1", 10, 2*time.Hour)
	write(indexTempPrefix+"2", 10, time.Minute)
	pruneIndexDir(dir, 4, 1<<20)
	want := []string{indexTempPrefix + "2", "a" + indexFileSuffix, "b" + indexFileSuffix, "c" + indexFileSuffix, "d" + indexFileSuffix, "notes.txt", "old" + indexFileSuffix + ".bak"}
	if got := indexFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("by count: %v, want %v", got, want)
	}
	pruneIndexDir(dir, 4, 250)
	want = []string{indexTempPrefix + "2", "a" + indexFileSuffix, "b" + indexFileSuffix, "notes.txt", "old" + indexFileSuffix + ".bak"}
	if got := indexFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("by bytes: %v, want %v", got, want)
	}
}

// sampleIndex is a small index for the encoding's tests and the fuzz
// target's seeds.
func sampleIndex() *gzipTarIndex {
	x := &gzipTarIndex{id: gzipFileID{size: 5 << 20, mtime: 1733400000123456789}, total: 40 << 20}
	x.id.head[0], x.id.tail[31] = 1, 2
	x.entries = []tarEntry{
		{name: "backup_label", off: 512, size: 227, typ: tar.TypeReg},
		{name: "base/", off: 1536, typ: tar.TypeDir},
		{name: "pg_tblspc/16385", link: "/srv/ts", off: 2048, typ: tar.TypeSymlink},
		{name: "global/pg_control", off: 40<<20 - 9216, size: 8192, typ: tar.TypeReg},
	}
	x.gz.spacing = 1 << 20
	for i := range 3 {
		x.gz.points = append(x.gz.points, gzipPoint{unc: int64(i+1) << 20, deflate: 10, cp: flate.InflateCheckpoint{
			UncompressedOffset: int64(i+1) << 20, CompressedOffset: int64(i+1) << 17, BitOffset: uint8(i * 3), Window: bytes.Repeat([]byte{byte(i)}, 64)}})
	}
	return x
}

// TestIndexFileEncoding: an index read back is the one written.
func TestIndexFileEncoding(t *testing.T) {
	x := sampleIndex()
	y, err := decodeGzipTarIndex(x.encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Errorf("read back:\n%+v\nwritten:\n%+v", y, x)
	}
}

// FuzzIndexFile: any bytes (given a right CRC-32C, so that the decoder
// is reached) decode without a panic into an index whose members lie
// within its stream and whose points ascend, or are refused; one decoded
// encodes into a file that decodes to the same index.
func FuzzIndexFile(f *testing.F) {
	enc := sampleIndex().encode(nil)
	f.Add(enc[:len(enc)-4])
	f.Add([]byte(indexFileMagic))
	// a count of members as large as allowed, and no member: no room is
	// made for 2^24 members (1 GB) on a count's word
	huge := append([]byte(indexFileMagic), make([]byte, 8+8+2*32)...)
	huge = binary.AppendUvarint(huge, 1<<40)
	huge = binary.AppendUvarint(huge, indexMaxMembers)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crc32c))
		x, err := decodeGzipTarIndex(b)
		if err != nil {
			return
		}
		for _, e := range x.entries {
			if e.off < 0 || e.size < 0 || e.off+e.size > x.total {
				t.Fatalf("member %q at %d, %d bytes, beyond the stream's %d", e.name, e.off, e.size, x.total)
			}
		}
		for i, p := range x.gz.points {
			if p.unc > x.total || p.deflate > x.id.size || p.cp.BitOffset > 7 || len(p.cp.Window) > 32<<10 || (i > 0 && p.unc <= x.gz.points[i-1].unc) {
				t.Fatalf("point %d: %+v", i, p)
			}
		}
		y, err := decodeGzipTarIndex(x.encode(nil))
		if err != nil {
			t.Fatalf("an index decoded, encoded again, does not decode: %v", err)
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatal("an index decoded, encoded and decoded again differs")
		}
	})
}

// TestGzipIndexFileWrong: an index file whole and of the tar's identity
// but not describing it (two members of the same size and type given each
// other's offsets: what a bug or a file made by hand would do) gives an
// error naming the member and the index file when the member is read,
// rather than the other member's bytes, and the file is removed: the next
// Open indexes the tar again and reads the member right.
func TestGzipIndexFileWrong(t *testing.T) {
	tgz := "../fixtures/rows/base.tar.gz"
	dir, p, good := indexedOnce(t, tgz)
	x, err := decodeGzipTarIndex(good)
	if err != nil {
		t.Fatal(err)
	}
	// the last two relation files of 8192 bytes (not read by Open)
	var pair []int
	for i := len(x.entries) - 1; i >= 0 && len(pair) < 2; i-- {
		if e := x.entries[i]; e.typ == tar.TypeReg && e.size == 8192 && strings.HasPrefix(e.name, "base/") {
			pair = append(pair, i)
		}
	}
	if len(pair) != 2 {
		t.Fatal("no two members of 8192 bytes")
	}
	a, b := &x.entries[pair[0]], &x.entries[pair[1]]
	a.off, b.off = b.off, a.off
	if err := os.WriteFile(p, x.encode(nil), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command("tar", "-xzOf", tgz, a.name).Output()
	if err != nil {
		t.Fatal(err)
	}
	// the error comes as soon as a read passes either member: at Open
	// (pg_control, with the small members on the way kept), or reading it
	bk, err := OpenOptions(Options{IndexDir: dir}, tgz)
	if err == nil {
		if bk.st.(*tarStore).archives[0].fromIndexFile == "" {
			t.Fatal("the index file made by hand was not read")
		}
		var got []byte
		got, err = bk.ReadFile(a.name)
		bk.Close()
		if err == nil {
			t.Fatalf("%s read through a wrong index: %d bytes, same as tar -x's: %v", a.name, len(got), bytes.Equal(got, want))
		}
	}
	wantErr(t, "Open or ReadFile", err, ErrDamaged, p)
	if msg := err.Error(); !strings.Contains(msg, errNotItsHeader.Error()) || (!strings.Contains(msg, a.name) && !strings.Contains(msg, b.name)) {
		t.Errorf("the error does not name %s or %s: %v", a.name, b.name, err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the wrong index file is still there: %v", err)
	}
	bk, err = OpenOptions(Options{IndexDir: dir}, tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	if bk.st.(*tarStore).archives[0].fromIndexFile != "" {
		t.Error("the next Open read an index file")
	}
	if got, err := bk.ReadFile(a.name); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s after indexing again: %v, same as tar -x's: %v", a.name, err, bytes.Equal(got, want))
	}
}
