//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// pgWaldump15 returns the real pg_waldump of PostgreSQL 15 (the sample's
// version), failing when CI says PostgreSQL is installed.
func pgWaldump15(t *testing.T) string {
	const bin = "/usr/lib/postgresql/15/bin/pg_waldump"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
			t.Fatalf("pg_waldump 15: %v", err)
		}
		t.Skip("no pg_waldump 15")
	}
	return bin
}

// TestMisnamedSegment: a segment copied under another name (page addresses
// that are not the name's) where reading starts is no WAL: pg_waldump 15
// fails with "could not find a valid record after", and so does every
// command, with the same class and exit code (stats printed nothing, exit 0,
// and verify found no problem). Zeroed space there is the same.
func TestMisnamedSegment(t *testing.T) {
	waldump := pgWaldump15(t)
	sample := sampleWAL(t)
	b, err := os.ReadFile(filepath.Join(sample, "000000010000000000000007"))
	if err != nil {
		t.Fatal(err)
	}
	zeroed := append([]byte(nil), b...)
	clear(zeroed[8192:16384])
	for _, tc := range []struct {
		name, file, start, class string
		content                  []byte
	}{
		{"copied under another name", "000000010000000000000009", "0/900000", "stale-recycled-segment", b},
		{"zeroed page at the start", "000000010000000000000007", "0/702000", "zeroed-or-torn-tail", zeroed},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, tc.file), tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		want := "could not find a valid record after " + tc.start
		cmd := exec.Command(waldump, "-s", tc.start, tc.file)
		cmd.Dir = dir
		ref, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(ref), want) {
			t.Fatalf("%s: pg_waldump 15: %v: %s", tc.name, err, ref)
		}
		report := filepath.Join(t.TempDir(), "r.html")
		for _, args := range [][]string{{"stats", tc.file}, {"dump", tc.file}, {"verify", tc.file}, {"whatif", tc.file}, {"stats", "."}, {"verify", "."},
			{"report", "--out", report, tc.file}, {"report", "--out", report, "."}} {
			args = append([]string{args[0], "-s", tc.start}, args[1:]...)
			out, stderr, code := walscope(t, dir, args...)
			if code != exitProblem || !strings.Contains(out+stderr, want) || !strings.Contains(out+stderr, tc.class) {
				t.Errorf("%s: %v: exit %d, stdout %q, stderr %q", tc.name, args, code, out, stderr)
			}
		}
	}
}

// TestInvalidHistory: a history file that cannot be followed (switch points
// out of order) fails every command with the same class and exit code; one
// the reading does not follow but that contradicts its parent's history is
// a verify finding (verify followed a loop and checked one segment of
// eleven, "no problems").
func TestInvalidHistory(t *testing.T) {
	root := testwal.Root(t)
	src := filepath.Join(testwal.Extract(t, testwal.Set{Name: "fixtures/pg15-replica-pglz-k-tl", Dir: filepath.Join(root, "fixtures", "pg15-replica-pglz-k-tl")}), "archive")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	if out, _, code := walscope(t, "", "verify", dir); code != 0 || !strings.Contains(out, "no problems found") {
		t.Fatalf("the fixture: exit %d: %s", code, out)
	}
	h3 := filepath.Join(dir, "00000003.history")
	os.WriteFile(h3, []byte("1\t0/11000A0\tx\n2\t0/1000000\ty\n"), 0o644)
	for _, cmd := range []string{"verify", "stats", "dump", "whatif"} {
		_, stderr, code := walscope(t, "", cmd, dir)
		if code != exitProblem || !strings.Contains(stderr, "00000003.history") || !strings.Contains(stderr, "invalid-history") {
			t.Errorf("%s, switch points out of order: exit %d: %s", cmd, code, stderr)
		}
	}
	// Timeline 3's history contradicts timeline 2's.
	os.WriteFile(h3, []byte("1\t0/9000000\tx\n2\t0/12000000\ty\n"), 0o644)
	out, _, code := walscope(t, "", "verify", dir)
	if code != exitProblem || !strings.Contains(out, "invalid-history: file "+h3) {
		t.Errorf("contradicting histories: exit %d: %s", code, out)
	}
}

// TestVerifyJobsAgree: the number of workers changes no finding, here on
// many empty segment files (spans starting in them met each twice).
func TestVerifyJobsAgree(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(sampleWAL(t), n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	for i := 8; i <= 200; i++ { // more than one 64 MB span of 1 MB segments
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("0000000100000000%08X", i)), nil, 0o644)
	}
	var first string
	for _, j := range []string{"1", "2", "4"} {
		out, stderr, code := walscope(t, "", "verify", "-j", j, dir)
		if code != exitProblem || !strings.Contains(out, "193 problems: truncated-segment 193") {
			t.Errorf("-j %s: exit %d: %s %s", j, code, lastLine(out), stderr)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("-j %s finds otherwise than -j 1", j)
		}
	}
}

// TestSameClassAcrossCommands: one bad input, one class and exit code from
// every command (16 MB of zeros was a usage error, exit 2, for verify and
// exit 1 for the others).
func TestSameClassAcrossCommands(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "000000010000000000000001"), make([]byte, 16<<20), 0o644)
	out := t.TempDir()
	for _, args := range [][]string{
		{"stats", dir}, {"stats", "--by", "xid", dir}, {"dump", dir}, {"verify", dir}, {"whatif", dir}, {"events", dir},
		{"report", "--out", filepath.Join(out, "r.html"), dir}, {"export", "--out", filepath.Join(out, "x"), dir},
	} {
		stdout, stderr, code := walscope(t, "", args...)
		if code != exitProblem || !strings.Contains(stdout+stderr, "[unknown-version: file ") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestVerifyListsFilesNotRead: every segment file the reading did not cover
// is listed with the reason.
func TestVerifyListsFilesNotRead(t *testing.T) {
	root := testwal.Root(t)
	arch := filepath.Join(testwal.Extract(t, testwal.Set{Name: "fixtures/pg15-replica-pglz-k-tl", Dir: filepath.Join(root, "fixtures", "pg15-replica-pglz-k-tl")}), "archive")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"verify", arch}, []string{"not read: 000000010000000000000011.partial: timeline 1 ends in it (at 0/11000A0): the history followed reads this segment on timeline 2"}},
		{[]string{"verify", "-t", "1", arch}, []string{"not read: 000000020000000000000011: timeline 2 is not on the history followed (timelines 1)"}},
		{[]string{"verify", "-s", "0/A00000", arch}, []string{"not read: 2 files, 000000010000000000000008 to 000000010000000000000009: before the start 0/A00000",
			"not read: 000000010000000000000011.partial: timeline 1 ends in it (at 0/11000A0): the history followed reads this segment on timeline 2"}},
		{[]string{"verify", sampleWAL(t)}, nil},
	} {
		out, stderr, code := walscope(t, "", tc.args...)
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "not read: ") {
				got = append(got, l)
			}
		}
		if code != 0 || strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%v: exit %d %s\n got %q\nwant %q", tc.args, code, stderr, got, tc.want)
		}
	}
	// A start past every file: pg_waldump cannot open its segment (walscope
	// read nothing and said "no problems").
	for _, c := range []string{"verify", "stats", "dump"} {
		_, stderr, code := walscope(t, "", c, "-s", "0/A000000", arch)
		if code != exitProblem || !strings.Contains(stderr, `could not find file "0000000200000000000000A0"`) || !strings.Contains(stderr, "missing-segment") {
			t.Errorf("%s -s past the files: exit %d: %s", c, code, stderr)
		}
	}
	out, _, _ := walscope(t, "", "verify", "--format", "json", "-t", "1", arch)
	if !strings.Contains(out, `"not_read": [`) || !strings.Contains(out, `"reason": "timeline 2 is not on the history followed (timelines 1)"`) {
		t.Errorf("json: %s", out)
	}
}

// TestVerifyMisnamedInBackupArchive: a segment stored under the next
// segment's name at the end of a backup tool's archive is a problem (in a
// plain directory, maybe a live pg_wal, it is the usual recycled segment:
// the end of WAL).
func TestVerifyMisnamedInBackupArchive(t *testing.T) {
	src := t.TempDir()
	b, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "000000010000000000000006"), b, 0o644)
	b7, _ := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000007"))
	os.WriteFile(filepath.Join(src, "000000010000000000000007"), b7, 0o644)
	os.WriteFile(filepath.Join(src, "000000010000000000000008"), b, 0o644) // 06 under 08's name
	if out, _, code := walscope(t, "", "verify", src); code != 0 || !strings.Contains(out, "end of WAL at 0/800000: unexpected pageaddr 0/600000") {
		t.Errorf("plain directory: exit %d: %s", code, out)
	}
	for _, l := range layouts {
		if l.name != "wal-g" && l.name != "pgbackrest" && l.name != "barman" {
			continue
		}
		p := l.build(t, src, t.TempDir())
		out, _, code := walscope(t, "", "verify", p)
		if code != exitProblem || !strings.Contains(out, "stale-recycled-segment: file ") || !strings.Contains(out, "holds no recycled segments") {
			t.Errorf("%s: exit %d: %s", l.name, code, out)
		}
	}
}

// TestBadInputOneClassEveryForm: each bad input gets one class and exit code
// from every command, whether its directory is named or the file itself
// (pg_waldump's STARTSEG form). Named, 8 kB of zeros was "invalid WAL segment
// size" with no class, an empty file "read 0 of 40 (EOF)", random bytes and
// a cut gzip file usage errors (exit 2, with the hint), where the directory
// gave unknown-version, truncated-segment, encrypted-or-unrecognised and
// corrupt-archive-file, exit 1. ls gives the file the same class where it
// checks what it holds (not records; zero-filled segments are pg_wal's next
// ones; a segment under another name is found by its page address).
func TestBadInputOneClassEveryForm(t *testing.T) {
	seg, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	seg7, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000007"))
	if err != nil {
		t.Fatal(err)
	}
	patch := func(off int, v uint32, size int) []byte {
		b := slices.Clone(seg)
		for i := 0; i < size; i++ {
			b[off+i] = byte(v >> (8 * i))
		}
		return b
	}
	remagic := slices.Clone(seg)
	for off := 0; off < len(remagic); off += 8192 {
		remagic[off], remagic[off+1] = 0x00, 0xD2 // magic D200: no release wrote it
	}
	random := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{1}).Read(random)
	gzipped := func(b []byte) []byte {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(b)
		zw.Close()
		return gz.Bytes()
	}
	const name = "000000010000000000000006"
	for _, tc := range []struct {
		name    string
		content []byte
		class   string // "" for a clean end of WAL, exit 0
		lsFinds bool   // ls calls the file a problem, of the readers' class (else no problem, exit 0)
	}{
		{"empty", nil, "truncated-segment", true},
		{"8 kB of zeros", make([]byte, 8192), "unknown-version", false},
		{"16 MB of zeros", make([]byte, 16<<20), "unknown-version", false},
		{"16 MB of zeros, gzip", gzipped(make([]byte, 16<<20)), "unknown-version", false},
		{"random bytes", random, "encrypted-or-unrecognised", true},
		{"truncated", seg[:500000], "truncated-segment", true},
		{"one valid page, then zeros", append(slices.Clone(seg[:8192]), make([]byte, len(seg)-8192)...), "", false},
		{"gzip cut short", gzipped(seg)[:30000], "corrupt-archive-file", true},
		{"unknown page magic", remagic, "unknown-version", true},
		{"invalid segment size", patch(32, 3<<20, 4), "invalid-page-header", true},
		{"invalid XLOG_BLCKSZ", patch(36, 1234, 4), "invalid-page-header", true},
		{"the next segment under this name", seg7, "invalid-page-header", true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		for _, p := range []string{dir, filepath.Join(dir, name)} {
			for _, args := range [][]string{
				{"stats", p}, {"dump", p}, {"verify", p}, {"whatif", p}, {"events", p}, {"advise", p},
				{"report", "--out", filepath.Join(out, "r.html"), p}, {"export", "--out", filepath.Join(out, "x"), p},
			} {
				stdout, stderr, code := walscope(t, "", args...)
				os.RemoveAll(filepath.Join(out, "x"))
				switch {
				case tc.class == "" && code != 0:
					t.Errorf("%s: %v: exit %d, want 0: %s", tc.name, args, code, stderr)
				case tc.class != "" && (code != exitProblem || !strings.Contains(stdout+stderr, tc.class)):
					t.Errorf("%s: %v: exit %d, want %d with [%s]: %s", tc.name, args, code, exitProblem, tc.class, lastLine(stdout+stderr))
				}
			}
			for _, quick := range []bool{false, true} {
				args := []string{"ls", p}
				if quick {
					args = []string{"ls", "--quick", p}
				}
				stdout, stderr, code := walscope(t, "", args...)
				want, says := exitProblem, "    "+tc.class+": "
				if !tc.lsFinds {
					want, says = 0, "\nno problems\n"
				}
				if code != want || !strings.Contains(stdout, says) {
					t.Errorf("%s: %v: exit %d, want %d with %q: %s%s", tc.name, args, code, want, says, stdout, stderr)
				}
			}
		}
	}
}

// TestLsMisnamedEveryLayout: ls and ls --quick check each segment's long
// header page address against the start its name gives (pg_waldump's
// "unexpected pageaddr"), in every layout and compression, and give the
// readers' class: a newer segment's pages under an older name are
// invalid-page-header everywhere; an older segment's (a recycled segment)
// are stale-recycled-segment in a backup tool's archive and no problem
// where the files may be a live pg_wal. ls said "no problems" for both.
func TestLsMisnamedEveryLayout(t *testing.T) {
	seg6, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	seg7, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000007"))
	if err != nil {
		t.Fatal(err)
	}
	newer := t.TempDir() // 07's pages under 06's name
	os.WriteFile(filepath.Join(newer, "000000010000000000000006"), seg7, 0o644)
	older := t.TempDir() // 06's pages under 08's name, after 06 and 07
	os.WriteFile(filepath.Join(older, "000000010000000000000006"), seg6, 0o644)
	os.WriteFile(filepath.Join(older, "000000010000000000000007"), seg7, 0o644)
	os.WriteFile(filepath.Join(older, "000000010000000000000008"), seg6, 0o644)
	backupTool := func(layout string) bool {
		return strings.HasPrefix(layout, "wal-g") || strings.HasPrefix(layout, "pgbackrest") || strings.HasPrefix(layout, "barman")
	}
	for _, tc := range []struct {
		name, src, says string
		kind            func(layout string) string // "" for no problem
	}{
		{"newer pages", newer, "file 000000010000000000000006: unexpected pageaddr 0/700000 in the long header, where the name says the segment starts at 0/600000 (1048576-byte segments)",
			func(string) string { return "invalid-page-header" }},
		{"older pages", older, "file 000000010000000000000008: unexpected pageaddr 0/600000 in the long header, where the name says the segment starts at 0/800000 (1048576-byte segments)",
			func(l string) string {
				if backupTool(l) {
					return "stale-recycled-segment"
				}
				return ""
			}},
	} {
		builds := append([]struct {
			name  string
			build func(t *testing.T, src, root string) string
		}{{"directory", func(t *testing.T, src, root string) string { return src }}}, layouts...)
		for _, l := range builds {
			p := l.build(t, tc.src, t.TempDir())
			for _, args := range [][]string{{"ls", p}, {"ls", "--quick", p}} {
				stdout, stderr, code := walscope(t, "", args...)
				kind := tc.kind(l.name)
				switch {
				case kind == "" && (code != 0 || !strings.Contains(stdout, "\nno problems\n")):
					t.Errorf("%s, %s: %v: exit %d, want 0 with no problems: %s%s", tc.name, l.name, args[:len(args)-1], code, stdout, stderr)
				case kind != "" && (code != exitProblem || !strings.Contains(stdout, "    "+kind+": "+tc.says)):
					t.Errorf("%s, %s: %v: exit %d, want %d with %s: %s%s", tc.name, l.name, args[:len(args)-1], code, exitProblem, kind, stdout, stderr)
				}
			}
		}
	}
}

// TestHistoryOnlyNothingToRead: timeline history files with no segment file
// are nothing to read, exit 2 from every command, ls included (it lists them
// first), whatever they hold: ls exited 0 (1 for a damaged history file)
// where the other commands exited 2.
func TestHistoryOnlyNothingToRead(t *testing.T) {
	const name = "00000002.history"
	for _, tc := range []struct {
		name    string
		content string
	}{
		{"a valid history", "1\t0/3000000\tno recovery target specified\n"},
		{"switch points out of order", "1\t0/11000A0\tx\n2\t0/1000000\ty\n"},
		{"binary garbage", "garbage\x00\x01 zz\n"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		for _, p := range []string{dir, filepath.Join(dir, name)} {
			for _, args := range [][]string{
				{"ls", p}, {"ls", "--quick", p}, {"stats", p}, {"dump", p}, {"verify", p}, {"whatif", p}, {"events", p}, {"advise", p},
				{"report", "--out", filepath.Join(out, "r.html"), p}, {"report", "--compare", "--out", filepath.Join(out, "r.html"), p, p},
				{"export", "--out", filepath.Join(out, "x"), p}, {"stats", "-p", dir},
			} {
				stdout, stderr, code := walscope(t, "", args...)
				if code != exitUsage || !strings.Contains(stderr, "could not find any WAL segment file in ") || !strings.Contains(stderr, "only timeline history files ("+name+")") {
					t.Errorf("%s: %v: exit %d, want %d: %s", tc.name, args, code, exitUsage, lastLine(stdout+stderr))
				}
				if args[0] == "ls" && !strings.Contains(stdout, name) {
					t.Errorf("%s: %v lists no file: %s", tc.name, args, stdout)
				}
			}
		}
	}
}
