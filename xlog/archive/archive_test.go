package archive_test

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"github.com/klauspost/compress/zstd"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testwal.Cleanup()
	os.Exit(code)
}

// sample returns the directory of the two plain sample segments.
func sample(t *testing.T) string {
	return filepath.Join(testwal.Root(t), "fixtures", "sample")
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	for _, s := range testwal.Sets(t) {
		if s.Name == name {
			return filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	t.Fatalf("fixture %s not found", name)
	return ""
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readSegment opens the only segment file of src and reads it whole.
func readSegment(t *testing.T, src *archive.Source, sf xlog.SegmentFile) ([]byte, error) {
	t.Helper()
	f, err := src.Open(sf)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 100000)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// TestCompressionFormats compresses a real segment with each tool and reads
// it back, named with its extension and without one (detection is by
// content).
func TestCompressionFormats(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	exts := map[string]string{"gzip": "gz", "zstd": "zst", "lz4": "lz4", "bzip2": "bz2", "xz": "xz", "lzma": "lzma", "brotli": "br"}
	for _, m := range archivetest.Methods {
		t.Run(m, func(t *testing.T) {
			comp := archivetest.Compress(t, m, seg)
			for _, name := range []string{"000000010000000000000006." + exts[m], "000000010000000000000006"} {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, name), comp, 0o644); err != nil {
					t.Fatal(err)
				}
				src, err := archive.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				files := src.Segments()
				if len(files) != 1 {
					t.Fatalf("%d segments", len(files))
				}
				got, err := readSegment(t, src, files[0])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, seg) {
					t.Fatalf("%s: content differs (%d bytes, want %d)", name, len(got), len(seg))
				}
				facts, err := src.Facts()
				if err != nil {
					t.Fatal(err)
				}
				if f := facts[0]; f.Compression != archive.Compression(m) || f.Size != int64(len(seg)) || f.StoredSize != int64(len(comp)) || len(f.Problems) != 0 {
					t.Fatalf("facts %+v", f)
				}
				quick, _ := src.FactsWith(archive.FactsOptions{Quick: true})
				q := quick[0]
				if q.Compression != archive.Compression(m) || q.SystemID != facts[0].SystemID || len(q.Problems) != 0 ||
					q.Size != int64(len(seg)) && (q.Size != -1 || m == "gzip") {
					t.Fatalf("quick facts %+v", q)
				}
			}
		})
	}
}

// TestBomb: content that decompresses past the segment size of its own long
// header is refused, and the buffer never grows past it.
func TestBomb(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	const extra = 96 << 20
	for _, m := range []string{"gzip", "zstd"} {
		t.Run(m, func(t *testing.T) {
			var bomb []byte
			if archivetest.HaveTool(m) {
				// Stream 97 MB through the tool without holding it.
				args := map[string][]string{"gzip": {"gzip", "-c", "-9"}, "zstd": {"zstd", "-q", "-c", "-3"}}[m]
				cmd := exec.Command(args[0], args[1:]...)
				pr, pw := io.Pipe()
				cmd.Stdin = pr
				var out bytes.Buffer
				cmd.Stdout = &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() {
					pw.Write(seg)
					zero := make([]byte, 1<<20)
					for i := 0; i < extra>>20; i++ {
						pw.Write(zero)
					}
					pw.Close()
				}()
				if err := cmd.Wait(); err != nil {
					t.Fatal(err)
				}
				bomb = out.Bytes()
			} else {
				bomb = archivetest.Compress(t, m, append(append([]byte{}, seg...), make([]byte, extra)...))
			}
			dir := t.TempDir()
			p := filepath.Join(dir, "000000010000000000000006."+map[string]string{"gzip": "gz", "zstd": "zst"}[m])
			os.WriteFile(p, bomb, 0o644)
			src, err := archive.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = src.Open(src.Segments()[0])
			runtime.ReadMemStats(&after)
			if !errors.Is(err, archive.ErrTooLarge) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open: %v; want ErrTooLarge naming %s", err, p)
			}
			// The segment is 1 MB: its buffer never exceeds 1 MB + 1 byte;
			// the decoders add their windows.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("opening the bomb allocated %d bytes", alloc)
			}
			facts, _ := src.Facts()
			if len(facts[0].Problems) != 1 || facts[0].Problems[0].Kind != archive.ProblemTooLarge {
				t.Errorf("facts: %+v", facts[0])
			}
		})
	}
}

// TestNotWAL: encrypted envelopes, random bytes and compressed non-WAL are
// reported as encrypted or unrecognised, never read as WAL.
func TestNotWAL(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	random := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{'w', 'a', 'l'}).Read(random)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"openssl", append([]byte("Salted__\x01\x02\x03\x04\x05\x06\x07\x08"), random[:4096]...), archive.ErrEncrypted},
		// The first bytes of gpg --symmetric's output (gpg 2.2: SKESK v4,
		// AES-256, iterated and salted S2K); gpg itself is not run, as it
		// leaves an agent behind.
		{"openpgp", append([]byte{0x8c, 0x0d, 0x04, 0x09, 0x03, 0x02}, random[:4096]...), archive.ErrEncrypted},
		{"age", append([]byte("age-encryption.org/v1\n-> X25519 "), random[:4096]...), archive.ErrEncrypted},
		{"libsodium (random)", random, archive.ErrUnrecognized},
		{"gzip of random", archivetest.Compress(t, "gzip", random), archive.ErrUnrecognized},
		{"zstd of text", archivetest.Compress(t, "zstd", bytes.Repeat([]byte("hello "), 100000)), archive.ErrUnrecognized},
	}
	if _, err := exec.LookPath("openssl"); err == nil {
		cmd := exec.Command("openssl", "enc", "-aes-256-cbc", "-pbkdf2", "-pass", "pass:x")
		cmd.Stdin = bytes.NewReader(seg)
		if out, err := cmd.Output(); err == nil {
			cases = append(cases, struct {
				name string
				data []byte
				want error
			}{"openssl tool", out, archive.ErrEncrypted})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "000000010000000000000006.lz4")
			os.WriteFile(p, c.data, 0o644)
			src, err := archive.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = src.Open(src.Segments()[0])
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open: %v; want %v naming the file", err, c.want)
			}
			facts, _ := src.Facts()
			want := archive.ProblemEncrypted
			if c.want == archive.ErrUnrecognized {
				want = archive.ProblemUnrecognized
			}
			if len(facts[0].Problems) != 1 || facts[0].Problems[0].Kind != want {
				t.Fatalf("facts: %+v", facts[0])
			}
		})
	}
}

// TestHistories: history files are found in every layout and read through
// ReadHistory, compressed or inside a tar.
func TestHistories(t *testing.T) {
	plain := fixture(t, "fixtures/pg15-replica-pglz-k-tl")
	want := string(readFile(t, filepath.Join(plain, "00000002.history")))
	build := map[string]func(root string) string{
		"wal-g":         func(root string) string { archivetest.WALG(t, plain, root); return root },
		"pgbackrest":    func(root string) string { archivetest.PgBackRest(t, plain, root, "db", "15"); return root },
		"barman":        func(root string) string { archivetest.Barman(t, plain, root); return root },
		"pg_receivewal": func(root string) string { archivetest.Receivewal(t, plain, root); return root },
		"tar.zst": func(root string) string {
			p := filepath.Join(root, "base.tar.zst")
			archivetest.Tar(t, plain, p, false, "zstd")
			return p
		},
	}
	for name, b := range build {
		t.Run(name, func(t *testing.T) {
			src, err := archive.Open(b(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			key, ok := src.Histories()[2]
			if !ok {
				t.Fatalf("no history file for timeline 2: %v", src.Histories())
			}
			got, err := src.ReadHistory(key)
			if err != nil || got != want {
				t.Fatalf("ReadHistory(%s) = %q, %v; want %q", key, got, err, want)
			}
		})
	}
}

// TestTruncatedCompressed: a partial segment that pg_receivewal was still
// compressing ends inside its stream and is read up to there; a complete
// segment cut short is a corrupt file.
func TestTruncatedCompressed(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	for _, m := range []struct{ method, ext string }{{"gzip", "gz"}, {"lz4", "lz4"}} {
		comp := archivetest.Compress(t, m.method, seg)
		comp = comp[:len(comp)/2]
		for _, partial := range []bool{true, false} {
			dir := t.TempDir()
			name := "000000010000000000000006." + m.ext
			if partial {
				name += ".partial"
			}
			os.WriteFile(filepath.Join(dir, name), comp, 0o644)
			src, err := archive.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readSegment(t, src, src.Segments()[0])
			if partial {
				// lz4 decodes whole blocks (4 MB by default): a cut one
				// yields nothing.
				if err != nil || len(got) == 0 && m.method == "gzip" || !bytes.Equal(got, seg[:len(got)]) {
					t.Errorf("%s: %d bytes, %v", name, len(got), err)
				}
			} else if !errors.Is(err, archive.ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt", name, err)
			}
		}
	}
}

// TestShortHistory reads a compressed history file shorter than a page
// header.
func TestShortHistory(t *testing.T) {
	dir := t.TempDir()
	text := "1\t0/3000000\tno recovery target specified\n"
	os.WriteFile(filepath.Join(dir, "00000002.history.gz"), archivetest.Compress(t, "gzip", []byte(text[:20])), 0o644)
	os.WriteFile(filepath.Join(dir, "00000003.history"), []byte(text), 0o644)
	src, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for tli, want := range map[xlog.TimeLineID]string{2: text[:20], 3: text} {
		if got, err := src.ReadHistory(src.Histories()[tli]); got != want || err != nil {
			t.Errorf("timeline %d: %q, %v", tli, got, err)
		}
	}
}

// TestTarConcurrent opens the members of a compressed tar from several
// goroutines, in and out of order.
func TestTarConcurrent(t *testing.T) {
	plain := fixture(t, "fixtures/pg15-replica-lz4")
	p := filepath.Join(t.TempDir(), "pg_wal.tar.zst")
	archivetest.Tar(t, plain, p, true, "zstd")
	src, err := archive.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	files := src.Segments()
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for k := range files {
				i := (k*(w+1) + w) % len(files)
				if w%2 == 1 {
					i = len(files) - 1 - i
				}
				got, err := readSegment(t, src, files[i])
				want, rerr := os.ReadFile(filepath.Join(plain, files[i].Name.String()))
				if err == nil && (rerr != nil || !bytes.Equal(got, want)) {
					err = fmt.Errorf("%s: content differs (%v)", files[i].Path, rerr)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPgBackRestInfo reads archive.info's system id and version.
func TestPgBackRestInfo(t *testing.T) {
	plain := filepath.Join(testwal.Root(t), "fixtures", "sample")
	root := t.TempDir()
	archivetest.PgBackRest(t, plain, root, "demo", "15")
	src, err := archive.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	seg := readFile(t, filepath.Join(plain, "000000010000000000000006"))
	r := src.Repo()
	if src.Layout() != archive.LayoutPgBackRest || r == nil || r.Stanza != "demo" || r.Version != "15" || r.ArchiveID != "15-1" || r.SystemID != archivetest.SystemID(seg) {
		t.Fatalf("layout %s, repo %+v", src.Layout(), r)
	}
	if facts, _ := src.Facts(); len(facts) != 2 || len(facts[0].Problems)+len(facts[1].Problems) != 0 {
		t.Fatalf("facts: %+v", facts)
	}
	// archive.info of another system: every file is from another system.
	info := filepath.Join(root, "archive", "demo", "archive.info")
	b := readFile(t, info)
	os.WriteFile(info, bytes.ReplaceAll(b, []byte(fmt.Sprint(r.SystemID)), []byte("12345")), 0o644)
	src, _ = archive.Open(root)
	facts, _ := src.Facts()
	for _, f := range facts {
		if len(f.Problems) != 1 || f.Problems[0].Kind != archive.ProblemOtherSystem || !strings.Contains(f.Problems[0].Message, "12345") {
			t.Fatalf("facts with archive.info of another system: %+v", f)
		}
	}
	// Two stanzas: the choice is the user's.
	archivetest.PgBackRest(t, plain, root, "other", "15")
	if _, err := archive.Open(root); !errors.Is(err, archive.ErrLayout) {
		t.Fatalf("two stanzas: %v", err)
	}
	if src, err := archive.Open(filepath.Join(root, "archive", "other")); err != nil || len(src.Segments()) != 2 {
		t.Fatalf("archive/other: %v", err)
	}
}

// TestBarmanIndex: xlog.db names the files; one it lists that is missing and
// one it does not list are reported.
func TestBarmanIndex(t *testing.T) {
	plain := fixture(t, "fixtures/pg15-replica-lz4")
	root := t.TempDir()
	archivetest.Barman(t, plain, root)
	os.Remove(filepath.Join(root, "wals", "0000000100000000", "000000010000000000000009"))
	db := readFile(t, filepath.Join(root, "wals", "xlog.db"))
	db = bytes.Replace(db, []byte("00000001000000000000000B\t"), []byte("0000000100000000000000FF\t"), 1)
	os.WriteFile(filepath.Join(root, "wals", "xlog.db"), db, 0o644)
	src, err := archive.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	facts, _ := src.Facts()
	got := map[string]string{}
	for _, f := range facts {
		for _, p := range f.Problems {
			got[f.Name] += string(p.Kind) + " "
		}
	}
	want := map[string]string{
		"000000010000000000000009": "missing ",
		"00000001000000000000000A": "gap ", // 9 is missing from the disk
		"00000001000000000000000B": "index ",
		"0000000100000000000000FF": "missing ",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func TestParseName(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		in        string
		canonical string
		ext, sha1 string
	}{
		{"000000010000000000000001", "000000010000000000000001", "", ""},
		{"000000010000000000000001.partial", "000000010000000000000001.partial", "", ""},
		{"000000010000000000000001.gz", "000000010000000000000001", "gz", ""},
		{"000000010000000000000001.gz.partial", "000000010000000000000001.partial", "gz", ""},
		{"000000010000000000000001.lz4.partial", "000000010000000000000001.partial", "lz4", ""},
		{"000000010000000000000001.", "000000010000000000000001", ".", ""},
		{"000000010000000000000001.partial.", "000000010000000000000001.partial", ".", ""},
		{"000000010000000000000001.br", "000000010000000000000001", "br", ""},
		{"000000010000000000000001.lzma", "000000010000000000000001", "lzma", ""},
		{"000000010000000000000001-" + sha + ".zst", "000000010000000000000001", "zst", sha},
		{"000000010000000000000001-" + sha, "000000010000000000000001", "", sha},
		{"000000010000000000000001.partial-" + sha + ".gz", "000000010000000000000001.partial", "gz", sha},
		{"00000002.history", "00000002.history", "", ""},
		{"00000002.history.lz4", "00000002.history", "lz4", ""},
		{"00000002.history.", "00000002.history", ".", ""},
	} {
		n, ok := archive.ParseName(c.in)
		if !ok || n.Canonical != c.canonical || n.Ext != c.ext || n.SHA1 != c.sha1 {
			t.Errorf("ParseName(%q) = %+v, %v", c.in, n, ok)
		}
	}
	for _, bad := range []string{"00000001000000000000000F.00000028.backup", "archive_status", "0000000100000000000000zz.gz", "00000002.history.partial", "xlog.db", "base.tar.gz"} {
		if n, ok := archive.ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %+v", bad, n)
		}
	}
}

// TestReaderOverLayouts reads every record of a fixture through xlog.Reader
// from a compressed tar and a pgBackRest repository, as from the plain
// directory.
func TestReaderOverLayouts(t *testing.T) {
	plain := fixture(t, "fixtures/pg15-replica-pglz-k-tl")
	records := func(src xlog.Source) []xlog.LSN {
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []xlog.LSN
		for {
			rec, err := r.Next()
			if err != nil {
				if !xlog.IsEndOfWAL(err) {
					t.Fatal(err)
				}
				return out
			}
			out = append(out, rec.LSN)
		}
	}
	base, err := archive.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	want := records(base)
	root := t.TempDir()
	archivetest.Tar(t, plain, filepath.Join(root, "t", "base.tar.lz4"), false, "lz4")
	archivetest.PgBackRest(t, plain, filepath.Join(root, "p"), "main", "15")
	for _, p := range []string{filepath.Join(root, "t", "base.tar.lz4"), filepath.Join(root, "p")} {
		src, err := archive.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got := records(src)
		src.Close()
		if len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
			t.Fatalf("%s: %d records, want %d", p, len(got), len(want))
		}
	}
}

// TestZstdWhole: zstd files whose frames declare their size are
// decompressed in one call (archive_command's `zstd FILE` writes them):
// one frame or several, refused when they decompress past the segment size
// of their long header (declared or not) without allocating the excess, and
// reported as corrupt when damaged.
func TestZstdWhole(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	frame := func(b []byte) []byte { return enc.EncodeAll(b, nil) }
	if h := new(zstd.Header); h.Decode(frame(seg)) != nil || !h.HasFCS || h.FrameContentSize != uint64(len(seg)) {
		t.Fatalf("the encoder does not declare the content size: %+v", h)
	}
	damaged := frame(seg)
	damaged[len(damaged)/2] ^= 0x55
	cases := []struct {
		name string
		file []byte
		want error // nil: the segment
	}{
		{"one frame", frame(seg), nil},
		{"two frames", append(frame(seg[:300000]), frame(seg[300000:])...), nil},
		{"declared bomb", frame(append(append([]byte{}, seg...), make([]byte, 96<<20)...)), archive.ErrTooLarge},
		{"more frames than the segment", append(frame(seg), frame(make([]byte, 2<<20))...), archive.ErrTooLarge},
		{"damaged", damaged, archive.ErrCorrupt},
	}
	// pgBackRest names: the SHA-1 of the content, checked on the one-call path too.
	sum := fmt.Sprintf("%x", sha1.Sum(seg))
	cases = append(cases, []struct {
		name string
		file []byte
		want error
	}{
		{"pgBackRest -" + sum, frame(seg), nil},
		{"pgBackRest -" + strings.Repeat("0", 40), frame(seg), archive.ErrChecksum},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "000000010000000000000006.zst")
			if name, ok := strings.CutPrefix(c.name, "pgBackRest "); ok {
				p = filepath.Join(dir, "000000010000000000000006"+name+".zst")
			}
			if err := os.WriteFile(p, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := archive.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := readSegment(t, src, src.Segments()[0])
			runtime.ReadMemStats(&after)
			if c.want == nil {
				if err != nil || !bytes.Equal(got, seg) {
					t.Fatalf("err %v, %d bytes; want the %d bytes of the segment", err, len(got), len(seg))
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err %v; want %v naming %s", err, c.want, p)
			}
			// The compressed file, a 1 MB segment's buffer and the decoders'
			// windows: never the 97 MB the bomb declares.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d bytes", alloc)
			}
		})
	}
}
