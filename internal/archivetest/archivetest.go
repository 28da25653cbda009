// Package archivetest builds the WAL archive layouts that xlog/archive reads
// (wal-g, pgBackRest, Barman, pg_receivewal, tar files) from a directory of
// real segment files, at test time, compressing with the real tools: gzip,
// zstd, lz4, bzip2, xz (also for .lzma), brotli and tar, run through os/exec.
// .ci/run installs them.
//
// Where a tool is missing on a developer's machine, the Go encoder of the
// same format is used instead (and the test logs it), except for bzip2, which
// has no Go encoder here: those tests skip. The Go encoders write the same
// formats (the decoders cannot tell), but only the tools prove that what the
// backup programs, which call the same C libraries, write is read.
package archivetest

import (
	"archive/tar"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// Methods are the compression methods Compress knows.
var Methods = []string{"gzip", "zstd", "lz4", "bzip2", "xz", "lzma", "brotli"}

// toolArgs are the command lines that compress stdin to stdout.
var toolArgs = map[string][]string{
	"gzip":   {"gzip", "-c", "-6"},
	"zstd":   {"zstd", "-q", "-c", "-3"},
	"lz4":    {"lz4", "-q", "-c"},
	"bzip2":  {"bzip2", "-c", "-9"},
	"xz":     {"xz", "-c", "-6"},
	"lzma":   {"xz", "--format=lzma", "-c", "-6"},
	"brotli": {"brotli", "-c", "-q", "6"},
}

// HaveTool reports whether the tool for method is installed.
func HaveTool(method string) bool {
	_, err := exec.LookPath(toolArgs[method][0])
	return err == nil
}

// Compress compresses data with the tool for method, or its Go fallback.
func Compress(tb testing.TB, method string, data []byte) []byte {
	tb.Helper()
	args, ok := toolArgs[method]
	if !ok {
		tb.Fatalf("unknown compression method %q", method)
	}
	if HaveTool(method) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin = bytes.NewReader(data)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.Bytes()
	}
	tb.Logf("%s is not installed: using the Go encoder of the same format", args[0])
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch method {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	case "lz4":
		w = lz4.NewWriter(&buf)
	case "xz":
		w, err = xz.NewWriter(&buf)
	case "lzma":
		w, err = lzma.NewWriter(&buf)
	case "brotli":
		w = brotli.NewWriterLevel(&buf, 6)
	default:
		tb.Skipf("%s is not installed and has no Go encoder", args[0])
	}
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// WALFiles lists the segment, partial and history files of a plain
// directory, by name.
func WALFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		base := strings.TrimSuffix(n, ".partial")
		if len(base) == 24 && !strings.Contains(base, ".") || strings.HasSuffix(n, ".history") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func read(tb testing.TB, p string) []byte {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func write(tb testing.TB, p string, b []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func isHistory(n string) bool { return strings.HasSuffix(n, ".history") }

// SystemID returns the system identifier from the long header of a segment.
func SystemID(seg []byte) uint64 { return binary.LittleEndian.Uint64(seg[24:32]) }

// WALG builds dst/wal_005/ as wal-g stores WAL: each segment compressed in
// turn with lz4, brotli, zstd, lzma (wal-g's lzma method writes .lzma), or
// stored as is under a name ending in a dot; history files with lz4.
func WALG(tb testing.TB, src, dst string) {
	tb.Helper()
	methods := []struct{ method, ext string }{{"lz4", "lz4"}, {"brotli", "br"}, {"zstd", "zst"}, {"lzma", "lzma"}, {"", ""}}
	for i, n := range WALFiles(tb, src) {
		data := read(tb, filepath.Join(src, n))
		m := methods[i%len(methods)]
		if isHistory(n) {
			m = methods[0]
		}
		if m.method == "" {
			write(tb, filepath.Join(dst, "wal_005", n+"."), data)
			continue
		}
		write(tb, filepath.Join(dst, "wal_005", n+"."+m.ext), Compress(tb, m.method, data))
	}
}

// PgBackRest builds dst/archive/<stanza>/ as pgBackRest stores WAL:
// archive.info, and <version>-1/<16 hex>/<segment>-<sha1 of the content>
// compressed in turn with gzip, lz4, zstd, bzip2 or not at all; history files
// plain in <version>-1/. It returns the path of each segment file by name.
func PgBackRest(tb testing.TB, src, dst, stanza, version string) map[string]string {
	tb.Helper()
	methods := []struct{ method, ext string }{{"gzip", ".gz"}, {"lz4", ".lz4"}, {"zstd", ".zst"}, {"bzip2", ".bz2"}, {"", ""}}
	idDir := filepath.Join(dst, "archive", stanza, version+"-1")
	paths := map[string]string{}
	var sysID uint64
	for i, n := range WALFiles(tb, src) {
		data := read(tb, filepath.Join(src, n))
		if isHistory(n) {
			write(tb, filepath.Join(idDir, n), data)
			continue
		}
		if sysID == 0 {
			sysID = SystemID(data)
		}
		sum := sha1.Sum(data)
		m := methods[i%len(methods)]
		p := filepath.Join(idDir, n[:16], n+"-"+hex.EncodeToString(sum[:])+m.ext)
		if m.method != "" {
			data = Compress(tb, m.method, data)
		}
		write(tb, p, data)
		paths[n] = p
	}
	info := fmt.Sprintf("[backrest]\nbackrest-checksum=\"0000000000000000000000000000000000000000\"\nbackrest-format=5\nbackrest-version=\"2.54.2\"\n\n"+
		"[db]\ndb-id=1\ndb-system-id=%d\ndb-version=\"%s\"\n\n[db:history]\n1={\"db-id\":%d,\"db-version\":\"%s\"}\n", sysID, version, sysID, version)
	write(tb, filepath.Join(dst, "archive", stanza, "archive.info"), []byte(info))
	write(tb, filepath.Join(dst, "archive", stanza, "archive.info.copy"), []byte(info))
	return paths
}

// Barman builds dst/wals/ as Barman stores WAL: <16 hex>/<segment> compressed
// in turn with gzip, bzip2, xz, zstd, lz4 or not at all, under the plain
// segment name; history files in wals/; and xlog.db.
func Barman(tb testing.TB, src, dst string) {
	tb.Helper()
	methods := []string{"gzip", "bzip2", "xz", "zstd", "lz4", ""}
	var db strings.Builder
	for i, n := range WALFiles(tb, src) {
		data := read(tb, filepath.Join(src, n))
		p := filepath.Join(dst, "wals", n)
		m := ""
		if !isHistory(n) {
			p = filepath.Join(dst, "wals", n[:16], n)
			m = methods[i%len(methods)]
		}
		if m != "" {
			data = Compress(tb, m, data)
		}
		write(tb, p, data)
		comp := m
		if comp == "" {
			comp = "None"
		}
		fmt.Fprintf(&db, "%s\t%d\t1732900000.0\t%s\tNone\n", n, len(data), comp)
	}
	write(tb, filepath.Join(dst, "wals", "xlog.db"), []byte(db.String()))
}

// Receivewal builds a directory as pg_receivewal --compress writes it:
// segments .gz and .lz4 in turn, partial segments .gz.partial, history files
// plain.
func Receivewal(tb testing.TB, src, dst string) {
	tb.Helper()
	for i, n := range WALFiles(tb, src) {
		data := read(tb, filepath.Join(src, n))
		switch {
		case isHistory(n):
			write(tb, filepath.Join(dst, n), data)
		case strings.HasSuffix(n, ".partial"):
			write(tb, filepath.Join(dst, strings.TrimSuffix(n, ".partial")+".gz.partial"), Compress(tb, "gzip", data))
		case i%2 == 0:
			write(tb, filepath.Join(dst, n+".gz"), Compress(tb, "gzip", data))
		default:
			write(tb, filepath.Join(dst, n+".lz4"), Compress(tb, "lz4", data))
		}
	}
}

// Tar writes a tar file at dst holding the WAL files of src: under pg_wal/
// beside a few other files of a base backup, or bare (as pg_basebackup's
// pg_wal.tar); compressed with method ("" for none). It uses the tar tool if
// installed, archive/tar otherwise.
func Tar(tb testing.TB, src, dst string, bare bool, method string) {
	tb.Helper()
	stage := tb.TempDir()
	walDir := stage
	if !bare {
		walDir = filepath.Join(stage, "pg_wal")
		write(tb, filepath.Join(stage, "PG_VERSION"), []byte("15\n"))
		write(tb, filepath.Join(stage, "backup_label"), []byte("START WAL LOCATION: 0/8000028 (file 000000010000000000000008)\n"))
		write(tb, filepath.Join(stage, "base", "1", "1259"), bytes.Repeat([]byte{1}, 8192))
		write(tb, filepath.Join(stage, "pg_wal", "archive_status", "000000010000000000000008.done"), nil)
	}
	for _, n := range WALFiles(tb, src) {
		write(tb, filepath.Join(walDir, n), read(tb, filepath.Join(src, n)))
	}
	var tarball []byte
	if _, err := exec.LookPath("tar"); err == nil {
		cmd := exec.Command("tar", "-cf", "-", "-C", stage, ".")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			tb.Fatalf("tar: %v: %s", err, errb.String())
		}
		tarball = out.Bytes()
	} else {
		tb.Log("tar is not installed: using archive/tar")
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.AddFS(os.DirFS(stage)); err != nil {
			tb.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			tb.Fatal(err)
		}
		tarball = buf.Bytes()
	}
	if method != "" {
		tarball = Compress(tb, method, tarball)
	}
	write(tb, dst, tarball)
}

// Plain copies the WAL files of src to dst.
func Plain(tb testing.TB, src, dst string) {
	tb.Helper()
	for _, n := range WALFiles(tb, src) {
		write(tb, filepath.Join(dst, n), read(tb, filepath.Join(src, n)))
	}
}
