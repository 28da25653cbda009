package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// The alphabet FuzzArchiveLayout builds trees from: the folders, file names
// and suffixes of every layout xlog/archive recognises, and the files beside
// WAL that users keep there.
var (
	fuzzDirs = []string{
		"", "pg_wal/", "pg_wal/archive_status/", "pg_xlog/", "wal_005/", "basebackups_005/",
		"archive/db/", "archive/db/15-1/", "archive/db/15-1/0000000100000000/", "archive/db/13-2/0000000100000000/",
		"archive/other/15-1/0000000100000000/", "db/15-1/0000000100000000/", "archive/db/15-1/notes/",
		"wals/", "wals/0000000100000000/", "wals/junk/", "srv/wals/", "srv/wals/0000000100000000/",
		"data/", "data/pg_wal/", "a/wal_005/", "b/wal_005/", "streaming/",
	}
	fuzzNames = []string{
		"000000010000000000000006", "000000010000000000000007", "000000020000000000000007",
		"00000002.history", "00000003.history", "000000010000000000000006.00000028.backup",
		"000000010000000000000006-SHA1", "000000010000000000000007-SHA1", "archive.info", "archive.info.copy",
		"xlog.db", "README", ".hidden", "backup_label", "PG_VERSION", "pg_wal", "base", "backup_manifest",
		"000000010000000000000006.done", "0000000100000000",
	}
	fuzzSuffixes = []string{
		"", "", "", ".partial", ".gz", ".zst", ".lz4", ".br", ".xz", ".bz2", ".lzma", ".tar", ".tar.gz",
		".tar.zst", ".gz.partial", ".", ".tar.lz4",
	}
)

// fuzzSegments are the sample's two real segments (PostgreSQL 15, 1 MB);
// fuzzPacked holds prefixes of them compressed once with the Go encoders.
var (
	fuzzOnce     sync.Once
	fuzzSegments [2][]byte
	fuzzPacked   map[string][]byte // method/segment/prefix KB
	fuzzZstd     *zstd.Encoder
)

var fuzzPrefixes = []int{8 << 10, 64 << 10, 1 << 20}

func loadFuzzSegments(tb testing.TB) {
	fuzzOnce.Do(func() {
		for i, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sample", n))
			if err != nil {
				tb.Fatal(err)
			}
			fuzzSegments[i] = b
		}
		fuzzZstd, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
		fuzzPacked = map[string][]byte{}
		for i, seg := range fuzzSegments {
			for _, p := range fuzzPrefixes {
				for _, m := range []string{"gzip", "zstd", "lz4"} {
					fuzzPacked[fmt.Sprintf("%s/%d/%d", m, i, p)] = compressWith(m, seg[:p])
				}
			}
		}
	})
}

// The gzip and lz4 writers are reused: a new one per tar was most of the
// building's time (the fuzz target runs single-threaded per worker).
var (
	fuzzGzip, _ = gzip.NewWriterLevel(nil, gzip.BestSpeed)
	fuzzLZ4     = lz4.NewWriter(nil)
)

// compressWith compresses b with a Go encoder of method (gzip, zstd, lz4).
func compressWith(method string, b []byte) []byte {
	var buf bytes.Buffer
	switch method {
	case "gzip":
		fuzzGzip.Reset(&buf)
		fuzzGzip.Write(b)
		fuzzGzip.Close()
	case "zstd":
		return fuzzZstd.EncodeAll(b, nil)
	case "lz4":
		fuzzLZ4.Reset(&buf)
		fuzzLZ4.Write(b)
		fuzzLZ4.Close()
	default:
		return b
	}
	return buf.Bytes()
}

// fuzzInput reads the fuzzer's bytes as choices: a byte at a time, zeros
// once they are used up.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *fuzzInput) pick(n int) int { return int(in.byte()) % n }

// bytes takes up to n of the remaining bytes.
func (in *fuzzInput) bytes(n int) []byte {
	n = min(n, len(in.b))
	b := in.b[:n]
	in.b = in.b[n:]
	return b
}

// builtTar is a tar file the fuzz target made, with its regular members.
type builtTar struct {
	path    string
	members []string
	intact  bool // stored as built: every member can be found in it
}

// fuzzTree is one archive built from the fuzzer's choices.
type fuzzTree struct {
	tree memTree
	tars []builtTar
}

// content makes a file's content: fuzz bytes, a real segment's prefix (maybe
// patched, maybe compressed), a history, an info file or an index. It
// returns the content and what pgBackRest's SHA-1 of the decompressed
// content would be.
func (ft *fuzzTree) content(in *fuzzInput, p string, depth int) ([]byte, []byte) {
	switch in.pick(9) {
	case 0: // the fuzzer's bytes
		b := in.bytes(int(in.byte()) * 16)
		return b, b
	case 1, 2: // a real segment's prefix, maybe with bytes of the fuzzer's at an offset
		seg := fuzzSegments[in.pick(2)]
		b := seg[:fuzzPrefixes[in.pick(len(fuzzPrefixes))]]
		if n := in.pick(4); n > 0 {
			off := (int(in.byte())<<8 | int(in.byte())) * n % len(b)
			patch := in.bytes(int(in.byte()) % 64)
			b = append([]byte(nil), b...)
			copy(b[off:], patch)
		}
		if in.pick(4) == 0 {
			b = b[:len(b)-int(in.byte())*32%len(b)] // truncated
		}
		return b, b
	case 3: // a real segment's prefix compressed, maybe cut short or damaged
		i, p := in.pick(2), fuzzPrefixes[in.pick(len(fuzzPrefixes))]
		m := []string{"gzip", "zstd", "lz4"}[in.pick(3)]
		c := fuzzPacked[fmt.Sprintf("%s/%d/%d", m, i, p)]
		switch in.pick(4) {
		case 1:
			c = c[:len(c)*int(in.byte())/256]
		case 2:
			c = append([]byte(nil), c...)
			c[(int(in.byte())<<8|int(in.byte()))%len(c)] ^= in.byte() | 1
		}
		return c, fuzzSegments[i][:p]
	case 4: // a timeline history
		if in.pick(2) == 0 {
			b := []byte("1\t0/7000A0\tno recovery target specified\n")
			return b, b
		}
		b := in.bytes(int(in.byte()))
		return b, b
	case 5: // pgBackRest's archive.info
		b := []byte("[db]\ndb-id=1\ndb-system-id=7713749427451375675\ndb-version=\"15\"\n\n[db:history]\n1={\"db-id\":7713749427451375675,\"db-version\":\"15\"}\n")
		if in.pick(2) == 0 {
			b = append(b[:in.pick(len(b))], in.bytes(int(in.byte()))...)
		}
		return b, b
	case 6: // Barman's xlog.db
		var b []byte
		for n := in.pick(4); n > 0; n-- {
			b = fmt.Appendf(b, "%s\t%d\t1700000000.0\t%s\n", fuzzNames[in.pick(4)], int(in.byte())<<12,
				[]string{"None", "gzip", "bzip2", "zstd"}[in.pick(4)])
		}
		b = append(b, in.bytes(int(in.byte())%32)...)
		return b, b
	case 7: // a tar of files chosen alike
		if depth > 0 {
			return nil, nil
		}
		return ft.tarOf(in, p), nil
	}
	return nil, nil // empty
}

// tarOf builds a tar holding up to 4 members (pg_wal/<name> or bare),
// compressed as p's name says; damaged at times.
func (ft *fuzzTree) tarOf(in *fuzzInput, p string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	bt := builtTar{path: p, intact: true}
	for n := 1 + in.pick(4); n > 0; n-- {
		name := []string{"", "pg_wal/", "./pg_wal/", "base/1/", "pg_wal/archive_status/"}[in.pick(5)] + ft.name(in)
		if in.pick(8) == 0 {
			tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: "x", Mode: 0o777})
			continue
		}
		data, _ := ft.content(in, name, 1)
		if tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(data)), Mode: 0o600, Typeflag: tar.TypeReg}) != nil {
			continue
		}
		tw.Write(data)
		if !slices.Contains(bt.members, name) {
			bt.members = append(bt.members, name)
		}
	}
	tw.Close()
	b := buf.Bytes()
	switch {
	case strings.HasSuffix(p, ".tar.gz"):
		b = compressWith("gzip", b)
	case strings.HasSuffix(p, ".tar.zst"):
		b = compressWith("zstd", b)
	case strings.HasSuffix(p, ".tar.lz4"):
		b = compressWith("lz4", b)
	}
	if in.pick(6) == 0 {
		b = b[:len(b)*int(in.byte())/256]
		bt.intact = false
	}
	ft.tars = append(ft.tars, bt)
	return b
}

// name picks a file name and suffix; pgBackRest's "-SHA1" is filled in
// when the content is known.
func (ft *fuzzTree) name(in *fuzzInput) string {
	return fuzzNames[in.pick(len(fuzzNames))] + fuzzSuffixes[in.pick(len(fuzzSuffixes))]
}

// buildFuzzTree makes an archive below /w from the fuzzer's bytes.
func buildFuzzTree(in *fuzzInput) *fuzzTree {
	ft := &fuzzTree{tree: memTree{}}
	for n := 1 + in.pick(10); n > 0; n-- {
		dir := fuzzDirs[in.pick(len(fuzzDirs))]
		name := ft.name(in)
		p := "/w/" + dir + name
		tars := len(ft.tars)
		data, plain := ft.content(in, p, 0)
		if strings.Contains(name, "-SHA1") {
			sum := sha1.Sum(plain)
			if in.pick(8) == 0 {
				sum[0] ^= 1 // a checksum that does not match
			}
			p = strings.Replace(p, "-SHA1", "-"+hex.EncodeToString(sum[:]), 1)
		}
		if in.pick(16) == 15 {
			// Not a regular file: a named pipe, as mkfifo leaves in pg_wal.
			ft.tree[strings.TrimPrefix(p, "/")] = &fstest.MapFile{Mode: fs.ModeNamedPipe | 0o644}
		} else {
			ft.tree.add(p, data)
		}
		// A path chosen again replaces its file: the tars built for it
		// before are gone, and the one just built (if any, and if no pipe
		// took its place) is under p's final name.
		var built []builtTar
		if ft.tree[strings.TrimPrefix(p, "/")].Mode.IsRegular() {
			built = slices.Clone(ft.tars[tars:])
		}
		for i := range built {
			built[i].path = p
		}
		ft.tars = append(slices.DeleteFunc(ft.tars[:tars], func(bt builtTar) bool { return bt.path == p }), built...)
	}
	return ft
}

// FuzzArchiveLayout builds a directory tree from the names of every layout
// (segment, .partial, .history, .backup files, wal-g's, pgBackRest's and
// Barman's folders and metadata files, compressed suffixes, tar files) with
// contents from the fuzzer (real segments, damaged, compressed or not, tars
// of them, info files and indexes), opens it as the commands do, lists it
// (ls and ls --quick) and reads it (verify-like: every segment's head and
// content, every history, the reader over the whole). Whatever the tree:
// nothing panics or hangs, every error is a documented sentinel (an
// *archive.Error, a positioned *xlog.Error, ErrLayout, a missing file),
// and every regular file of a folder the source reads is read or listed
// by NotRead with a reason; so is every member of a tar file it reads.
func FuzzArchiveLayout(f *testing.F) {
	loadFuzzSegments(f)
	seeds := [][]byte{
		{1, 1, 0, 3, 2, 0, 0, 0, 2},                            // pg_wal/000000010000000000000006
		{3, 0, 0, 0, 1, 0, 1, 0, 0, 0, 12, 0, 0, 0, 0},         // two segments and a README
		{2, 4, 0, 5, 3, 0, 1, 1, 0, 4, 1, 4, 3, 0, 1, 1},       // wal-g, compressed
		{3, 6, 8, 0, 5, 0, 2, 6, 0, 0, 1, 0, 0, 0, 0, 7, 0, 4}, // pgBackRest with archive.info
		{3, 13, 10, 0, 6, 2, 14, 0, 0, 1, 0, 0, 0, 0, 14, 3, 0, 4},
		{1, 0, 14, 12, 7, 3, 1, 0, 1, 1, 0, 0, 0, 1, 5, 0, 1, 1}, // pg_wal.tar.gz
		{2, 19, 3, 3, 2, 1, 0, 1, 0, 0, 0, 18, 3, 0, 1, 0},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLayout(t, data) })
}

// fuzzLayout is one execution of FuzzArchiveLayout.
func fuzzLayout(t testing.TB, data []byte) {
	{
		in := &fuzzInput{b: data}
		mode := in.pick(4)
		ft := buildFuzzTree(in)
		hang := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("FuzzArchiveLayout: input %x still running after 30 s", data)) })
		defer hang.Stop()

		roots := []string{"/w"}
		switch mode {
		case 1: // the first folder chosen, as a user names wals/ or wal_005/
			var first string
			for k := range ft.tree {
				if d := path.Dir("/" + k); first == "" || d < first {
					first = d
				}
			}
			roots = []string{first}
		case 2: // every file named one by one
			roots = roots[:0]
			for k := range ft.tree {
				roots = append(roots, "/"+k)
			}
			slices.Sort(roots)
		}
		src, err := archive.OpenTree(ft.tree, roots...)
		if err != nil {
			checkOpenErr(t, err)
			return
		}
		defer src.Close()
		var facts []archive.FileFact
		for _, quick := range []bool{true, false} {
			facts, err = src.FactsWith(archive.FactsOptions{Quick: quick})
			if err != nil {
				t.Fatalf("facts: %v", err)
			}
			archive.Summarize(facts)
		}
		checkAccounted(t, ft, src, facts, len(roots) > 1)
		readAll(t, src)
	}
}

var knownProblems = map[archive.ProblemKind]bool{
	archive.ProblemDuplicate: true, archive.ProblemOtherSystem: true, archive.ProblemGap: true,
	archive.ProblemEncrypted: true, archive.ProblemUnrecognized: true, archive.ProblemChecksum: true,
	archive.ProblemTooLarge: true, archive.ProblemCorrupt: true, archive.ProblemUnreadable: true,
	archive.ProblemMissing: true, archive.ProblemIndex: true, archive.ProblemTruncated: true,
	archive.ProblemUnknownVersion: true, archive.ProblemPageHeader: true, archive.ProblemRecycled: true,
	archive.ProblemHistory: true,
}

// checkOpenErr: Open fails only with the errors it documents.
func checkOpenErr(t testing.TB, err error) {
	t.Helper()
	if _, ok := errors.AsType[*archive.Error](err); ok {
		return
	}
	if errors.Is(err, archive.ErrLayout) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, xlog.ErrNoSegments) {
		return
	}
	t.Fatalf("Open: error %T %v is none of the documented ones", err, err)
}

// checkAccounted: every regular file directly in a folder the source took
// a file from (or listed one of) is read or listed as not read, and so is
// every member of a tar file it read (or the tar file itself).
func checkAccounted(t testing.TB, ft *fuzzTree, src *archive.Source, facts []archive.FileFact, named bool) {
	t.Helper()
	seen := map[string]bool{}
	tarsRead := map[string]bool{} // tar files whose members the source took or listed
	folders := map[string]bool{}
	for _, f := range facts {
		for _, p := range f.Problems {
			if !knownProblems[p.Kind] || p.Message == "" {
				t.Errorf("%s: problem %q: %q", f.Path, p.Kind, p.Message)
			}
		}
		seen[f.Path] = true
		if f.Member != "" {
			seen[f.Path+":"+f.Member] = true
			tarsRead[f.Path] = true
		}
		folders[path.Dir(f.Path)] = true
	}
	notRead := map[string]string{}
	for _, n := range src.NotRead() {
		if n.Reason == "" {
			t.Errorf("%s: not read, without a reason", n.Path)
		}
		notRead[n.Path] = n.Reason
		if file, _, ok := strings.Cut(n.Path, ":"); ok {
			seen[file], tarsRead[file] = true, true
			continue
		}
		if _, ok := ft.tree[strings.TrimPrefix(n.Path, "/")]; ok {
			// A file listed: its folder is one the source read (a folder
			// listed may be beside the layout's own, in Barman's server
			// directory).
			folders[path.Dir(n.Path)] = true
		}
	}
	layout := src.Layout()
	if named {
		// Files named one by one: each is read, or listed.
		for k := range ft.tree {
			if p := "/" + k; !seen[p] && notRead[p] == "" {
				t.Errorf("%s (named): neither read nor listed as not read", p)
			}
		}
	}
	// The folders inside the folders read: looked into, or listed.
	dirs := map[string]bool{}
	for k := range ft.tree {
		for d := path.Dir("/" + k); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		base := path.Base(d)
		if named || !folders[path.Dir(d)] || notRead[d] != "" || base == "archive_status" || base == "summaries" {
			continue
		}
		if len(base) == 16 && strings.Trim(base, "0123456789ABCDEF") == "" && (layout == archive.LayoutPgBackRest || layout == archive.LayoutBarman) {
			continue
		}
		inside := false
		for p := range seen {
			inside = inside || strings.HasPrefix(p, d+"/")
		}
		if !inside {
			t.Errorf("%s (layout %s): a folder beside WAL files neither looked into nor listed", d, layout)
		}
	}
	for k, mf := range ft.tree {
		p := "/" + k
		if named || !folders[path.Dir(p)] || mf.Mode.IsDir() {
			continue
		}
		base := path.Base(p)
		switch {
		case seen[p] || notRead[p] != "":
		case layout == archive.LayoutPgBackRest && (base == "archive.info" || base == "archive.info.copy"):
		case layout == archive.LayoutBarman && base == "xlog.db":
		default:
			t.Errorf("%s (layout %s): neither read nor listed as not read", p, layout)
		}
	}
	for _, bt := range ft.tars {
		if !tarsRead[bt.path] || !bt.intact {
			continue
		}
		// Its WAL folders: those holding a WAL file, and pg_wal/.
		walDirs := map[string]bool{}
		for _, m := range bt.members {
			if _, ok := archive.ParseName(path.Base(m)); ok {
				walDirs[path.Dir(path.Clean(m))] = true
			}
		}
		for _, m := range bt.members {
			dir := path.Dir(path.Clean(m))
			switch {
			case seen[bt.path+":"+m] || notRead[bt.path+":"+m] != "":
			case walDirs[dir] || path.Base(dir) == "pg_wal":
				t.Errorf("%s:%s: a member of a WAL folder neither read nor listed as not read", bt.path, m)
			case notRead[bt.path] == "":
				t.Errorf("%s:%s: a member neither read nor counted as not read", bt.path, m)
			}
		}
	}
}

// readAll reads the source as verify does: each segment's head and whole
// content, each history, and the reader over every timeline.
func readAll(t testing.TB, src *archive.Source) {
	t.Helper()
	hb := make([]byte, xlog.LongPageHeaderSize)
	buf := make([]byte, 1<<16)
	for _, sf := range src.Segments() {
		if _, err := src.ReadHead(sf, hb); err != nil {
			checkArchiveErr(t, err)
		}
		fh, err := src.Open(sf)
		if err != nil {
			checkArchiveErr(t, err)
			continue
		}
		var n int64
		first := make([]byte, 0, xlog.LongPageHeaderSize)
		for {
			k, err := fh.ReadAt(buf, n)
			if len(first) < cap(first) {
				first = append(first, buf[:min(k, cap(first)-len(first))]...)
			}
			n += int64(k)
			if err != nil || k == 0 {
				break
			}
		}
		fh.Close()
		limit := int64(xlog.MinSegmentSize)
		if h, ok := xlog.ParsePageHeader(first); ok && h.Long() && xlog.ValidSegmentSize(h.SegmentSize) {
			limit = int64(h.SegmentSize)
		}
		if n > max(limit, sf.Size) {
			t.Fatalf("%s: %d bytes of content, more than the segment size %d", sf.Path, n, limit)
		}
	}
	for _, key := range src.Histories() {
		if _, err := src.ReadHistory(key); err != nil {
			checkArchiveErr(t, err)
		}
	}
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		if !errors.Is(err, xlog.ErrSyntax) && !errors.Is(err, xlog.ErrNoSegments) {
			checkArchiveErr(t, err)
		}
		return
	}
	defer r.Close()
	for i := 0; i < 2000; i++ {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				checkArchiveErr(t, err)
			}
			return
		}
	}
}
