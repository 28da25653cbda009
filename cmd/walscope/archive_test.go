package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// archiveSet extracts a fixture set and returns its plain archive directory.
func archiveSet(t *testing.T, name string) string {
	t.Helper()
	for _, s := range testwal.Sets(t) {
		if s.Name == name {
			return filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	t.Fatalf("fixture %s not found", name)
	return ""
}

// layouts builds every layout from the plain segments in src; each returns
// the path to give walscope.
var layouts = []struct {
	name  string
	build func(t *testing.T, src, root string) string
}{
	{"wal-g", func(t *testing.T, src, root string) string { archivetest.WALG(t, src, root); return root }},
	{"wal-g/wal_005", func(t *testing.T, src, root string) string {
		archivetest.WALG(t, src, root)
		return filepath.Join(root, "wal_005")
	}},
	{"pgbackrest", func(t *testing.T, src, root string) string {
		archivetest.PgBackRest(t, src, root, "main", "15")
		return root
	}},
	{"pgbackrest/archive/main", func(t *testing.T, src, root string) string {
		archivetest.PgBackRest(t, src, root, "main", "15")
		return filepath.Join(root, "archive", "main")
	}},
	{"barman", func(t *testing.T, src, root string) string { archivetest.Barman(t, src, root); return root }},
	{"barman-without-xlog.db", func(t *testing.T, src, root string) string {
		archivetest.Barman(t, src, root)
		os.Remove(filepath.Join(root, "wals", "xlog.db"))
		return filepath.Join(root, "wals")
	}},
	{"pg_receivewal", func(t *testing.T, src, root string) string { archivetest.Receivewal(t, src, root); return root }},
	{"tar", func(t *testing.T, src, root string) string {
		p := filepath.Join(root, "base.tar")
		archivetest.Tar(t, src, p, false, "")
		return p
	}},
	{"tar.gz", func(t *testing.T, src, root string) string {
		p := filepath.Join(root, "base.tar.gz")
		archivetest.Tar(t, src, p, false, "gzip")
		return p
	}},
	{"tar.zst", func(t *testing.T, src, root string) string {
		p := filepath.Join(root, "base.tar.zst")
		archivetest.Tar(t, src, p, false, "zstd")
		return p
	}},
	{"tar.lz4", func(t *testing.T, src, root string) string {
		p := filepath.Join(root, "base.tar.lz4")
		archivetest.Tar(t, src, p, false, "lz4")
		return p
	}},
	{"pg_wal.tar-bare", func(t *testing.T, src, root string) string {
		p := filepath.Join(root, "pg_wal.tar")
		archivetest.Tar(t, src, p, true, "")
		return p
	}},
	{"directory-of-tars", func(t *testing.T, src, root string) string {
		archivetest.Tar(t, src, filepath.Join(root, "pg_wal.tar.gz"), true, "gzip")
		return root
	}},
}

// TestArchiveLayoutsDump builds each layout from real fixture segments,
// compressed by the real tools, and checks that dump over it prints exactly
// what dump over the plain segments prints.
func TestArchiveLayoutsDump(t *testing.T) {
	for _, set := range []string{"fixtures/pg15-replica-pglz-k-tl", "fixtures/pg15-replica-lz4"} {
		plain := archiveSet(t, set)
		wantOut, wantErr, wantCode := walscope(t, "", "dump", plain)
		if wantCode != 0 || len(wantOut) == 0 {
			t.Fatalf("%s: dump over the plain segments: exit %d: %s", set, wantCode, wantErr)
		}
		wantStats, _, _ := walscope(t, "", "stats", plain)
		wantVerify, _, _ := walscope(t, "", "verify", plain)
		wantVerify = withoutArchiveSummary(wantVerify)
		for _, l := range layouts {
			t.Run(strings.TrimPrefix(set, "fixtures/")+"/"+l.name, func(t *testing.T) {
				p := l.build(t, plain, t.TempDir())
				out, errOut, code := walscope(t, "", "dump", p)
				if code != wantCode || errOut != wantErr {
					t.Fatalf("exit %d, stderr %q; want exit %d, stderr %q", code, errOut, wantCode, wantErr)
				}
				if out != wantOut {
					t.Fatalf("dump output differs from the plain segments' (%d bytes, want %d)", len(out), len(wantOut))
				}
				if got, _, _ := walscope(t, "", "stats", p); got != wantStats {
					t.Fatalf("stats differs:\n%s\nwant\n%s", got, wantStats)
				}
				if got, _, _ := walscope(t, "", "verify", p); withoutArchiveSummary(got) != wantVerify {
					t.Fatalf("verify differs:\n%s\nwant\n%s", got, wantVerify)
				}
				lsOut, lsErr, lsCode := walscope(t, "", "ls", "--format", "json", p)
				if lsCode != 0 {
					t.Fatalf("ls: exit %d: %s%s", lsCode, lsErr, lsOut)
				}
				var rep lsReport
				if err := json.Unmarshal([]byte(lsOut), &rep); err != nil {
					t.Fatal(err)
				}
				if want := len(archivetest.WALFiles(t, plain)); len(rep.Files) != want {
					t.Fatalf("ls lists %d files, want %d", len(rep.Files), want)
				}
				for _, f := range rep.Files {
					if f.Size <= 0 || f.SHA256 == "" || f.Compression == "" {
						t.Errorf("ls: %+v", f)
					}
				}
			})
		}
	}
}

// TestArchivePgWaldumpForms checks pg_waldump's STARTSEG ENDSEG and -p forms
// over a directory of compressed segments.
func TestArchivePgWaldumpForms(t *testing.T) {
	plain := archiveSet(t, "fixtures/pg15-replica-lz4")
	dir := t.TempDir()
	archivetest.Receivewal(t, plain, dir)
	const first, last = "000000010000000000000007", "00000001000000000000000A"
	want, wantErr, wantCode := walscope(t, "", "dump", "-p", plain, first, last)
	if wantCode != 0 {
		t.Fatalf("plain: exit %d: %s", wantCode, wantErr)
	}
	got, gotErr, code := walscope(t, "", "dump", "-p", dir, first, last)
	if code != wantCode || got != want || gotErr != wantErr {
		t.Fatalf("-p over compressed segments: exit %d, stderr %q, %d bytes; want %d bytes", code, gotErr, len(got), len(want))
	}
	// STARTSEG and ENDSEG as compressed file paths.
	ents, _ := filepath.Glob(filepath.Join(dir, first+".*"))
	ende, _ := filepath.Glob(filepath.Join(dir, last+".*"))
	if len(ents) != 1 || len(ende) != 1 {
		t.Fatalf("compressed files: %v %v", ents, ende)
	}
	got, gotErr, code = walscope(t, "", "dump", ents[0], ende[0])
	if code != wantCode || got != want {
		t.Fatalf("STARTSEG ENDSEG over compressed files: exit %d, stderr %q", code, gotErr)
	}
}

// TestArchivePgBackRestChecksum alters one segment of a pgBackRest
// repository: its SHA-1 catches it, and the error names the file.
func TestArchivePgBackRestChecksum(t *testing.T) {
	plain := archiveSet(t, "fixtures/pg15-replica-lz4")
	root := t.TempDir()
	paths := archivetest.PgBackRest(t, plain, root, "main", "15")
	const victim = "00000001000000000000000A"
	data, err := os.ReadFile(filepath.Join(plain, victim))
	if err != nil {
		t.Fatal(err)
	}
	data[300000] ^= 0x55
	p := paths[victim]
	method := map[string]string{".gz": "gzip", ".lz4": "lz4", ".zst": "zstd", ".bz2": "bzip2"}[filepath.Ext(p)]
	if method != "" {
		data = archivetest.Compress(t, method, data)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := walscope(t, "", "dump", root)
	if code == 0 || !strings.Contains(stderr, p) || !strings.Contains(stderr, "SHA-1") {
		t.Fatalf("dump: exit %d, stderr %q: want an error naming %s and its SHA-1", code, stderr, p)
	}
	out, _, code := walscope(t, "", "ls", root)
	if code != 1 || !strings.Contains(out, "archive-checksum-mismatch: SHA-1") {
		t.Fatalf("ls: exit %d:\n%s", code, out)
	}
}

// encrypt returns data as openssl enc writes it (pgBackRest's
// repo-cipher-type aes-256-cbc envelope), with the openssl tool if installed.
func encrypt(t *testing.T, data []byte) []byte {
	if _, err := exec.LookPath("openssl"); err == nil {
		cmd := exec.Command("openssl", "enc", "-aes-256-cbc", "-pbkdf2", "-pass", "pass:walscope")
		cmd.Stdin = bytes.NewReader(data)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err == nil {
			return out.Bytes()
		}
	}
	t.Log("openssl is not installed: writing its envelope's header by hand")
	out := append([]byte("Salted__"), 1, 2, 3, 4, 5, 6, 7, 8)
	for i := range data {
		out = append(out, byte(i*131+7)^data[i])
	}
	return out
}

// TestArchiveEncrypted: an encrypted file is reported as encrypted, never as
// WAL corruption.
func TestArchiveEncrypted(t *testing.T) {
	plain := archiveSet(t, "fixtures/pg15-replica-lz4")
	root := t.TempDir()
	archivetest.Plain(t, plain, root)
	const victim = "000000010000000000000009"
	data, _ := os.ReadFile(filepath.Join(root, victim))
	os.Remove(filepath.Join(root, victim))
	os.WriteFile(filepath.Join(root, victim+".gz"), encrypt(t, archivetest.Compress(t, "gzip", data)), 0o644)

	_, stderr, code := walscope(t, "", "dump", root)
	if code == 0 || !strings.Contains(stderr, "encrypted") || !strings.Contains(stderr, victim+".gz") {
		t.Fatalf("dump: exit %d, stderr %q", code, stderr)
	}
	out, _, code := walscope(t, "", "ls", root)
	if code != 1 || !strings.Contains(out, "encrypted-or-unrecognised: encrypted file") {
		t.Fatalf("ls: exit %d:\n%s", code, out)
	}
	// Encrypted first: no reading can start; still bad WAL input with its
	// class (exit 1), as an encrypted file further on, not a usage error.
	first := archivetest.WALFiles(t, root)[0]
	data, _ = os.ReadFile(filepath.Join(root, first))
	os.WriteFile(filepath.Join(root, first), encrypt(t, data), 0o644)
	_, stderr, code = walscope(t, "", "dump", root)
	if code != exitProblem || !strings.Contains(stderr, "encrypted") || !strings.Contains(stderr, "[encrypted-or-unrecognised]") {
		t.Fatalf("dump, first file encrypted: exit %d, stderr %q", code, stderr)
	}
}

// TestArchiveLsProblems: ls lists a segment duplicated with different content
// (not one duplicated identically), a file from another system, and a gap.
func TestArchiveLsProblems(t *testing.T) {
	plain := archiveSet(t, "fixtures/pg15-replica-lz4")
	root := t.TempDir()
	archivetest.Plain(t, plain, root)
	read := func(n string) []byte {
		b, err := os.ReadFile(filepath.Join(plain, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sub := filepath.Join(root, "more")
	os.Mkdir(sub, 0o755)
	// A duplicate with different content, and an identical one.
	dup := read("000000010000000000000009")
	dup[500000] ^= 1
	os.WriteFile(filepath.Join(sub, "000000010000000000000009.zst"), archivetest.Compress(t, "zstd", dup), 0o644)
	os.WriteFile(filepath.Join(sub, "00000001000000000000000A.gz"), archivetest.Compress(t, "gzip", read("00000001000000000000000A")), 0o644)
	// Another system.
	other := read("00000001000000000000000C")
	other[24] ^= 0xff
	os.WriteFile(filepath.Join(root, "00000001000000000000000C"), other, 0o644)
	// A gap.
	os.Remove(filepath.Join(root, "00000001000000000000000E"))

	out, stderr, code := walscope(t, "", "ls", "--format", "json", root, sub)
	if code != 1 {
		t.Fatalf("ls: exit %d, %s", code, stderr)
	}
	var rep lsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range rep.Files {
		for _, p := range f.Problems {
			got[string(p.Kind)] = append(got[string(p.Kind)], filepath.Base(f.Path))
		}
	}
	want := map[string][]string{
		"duplicate":    {"000000010000000000000009", "000000010000000000000009.zst"},
		"other-system": {"00000001000000000000000C"},
		"gap":          {"00000001000000000000000F"},
	}
	for k, w := range want {
		if strings.Join(got[k], " ") != strings.Join(w, " ") {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want only %v", got, want)
	}
	text, _, _ := walscope(t, "", "ls", root, sub)
	for _, s := range []string{"duplicate-segment: duplicate with different content", "other-system: from another system", "missing-segment: gap: segment 00000001000000000000000E is missing"} {
		if !strings.Contains(text, s) {
			t.Errorf("ls text lacks %q:\n%s", s, text)
		}
	}
}

// TestArchiveUnreadableInputs: exit 2 and a message for inputs that cannot
// be read.
func TestArchiveUnreadableInputs(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.bin")
	os.WriteFile(junk, []byte("not a tar file"), 0o644)
	for _, args := range [][]string{
		{"dump", filepath.Join(dir, "missing")},
		{"dump", junk},
		{"ls", filepath.Join(dir, "missing")},
		{"ls", dir},
		{"ls", "--format", "yaml", dir},
	} {
		_, stderr, code := walscope(t, "", args...)
		if code != exitUsage || !strings.Contains(stderr, "walscope: error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// withoutArchiveSummary drops verify's description of the files (layout,
// stored sizes), which differs between layouts by design.
func withoutArchiveSummary(s string) string {
	var out []string
	skip := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "archive (") {
			skip = true
			continue
		}
		if skip && strings.HasPrefix(l, "  ") {
			continue
		}
		skip = false
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
