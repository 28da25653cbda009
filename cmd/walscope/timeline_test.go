package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestDirectoryFollowsTimelines: given an archive directory holding two
// timelines, walscope reads timeline 1 up to the switch point, then timeline
// 2, as recovery does: its output is pg_waldump's timeline 1 output, the
// records that cross from the last timeline 1 segment into the switch segment
// (which pg_waldump over timeline 1's range omits), then pg_waldump's timeline
// 2 output. --timeline 1 reads timeline 1 alone, through its .partial file.
func TestDirectoryFollowsTimelines(t *testing.T) {
	checked := 0
	for _, set := range testwal.Sets(t) {
		dir := testwal.Extract(t, set)
		tls := testwal.Timelines(t, dir)
		if len(tls) != 2 {
			continue
		}
		checked++
		t.Run(set.Name, func(t *testing.T) {
			ref1, _ := testwal.ReadRef(dir, "records-"+tls[0].TLI+".txt")
			ref2, _ := testwal.ReadRef(dir, "records-"+tls[1].TLI+".txt")
			got, stderr, code := walscope(t, dir, "dump", "archive")
			if code != 0 || !strings.Contains(stderr, "end of WAL at") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			g := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			w1 := strings.Split(strings.TrimSuffix(ref1, "\n"), "\n")
			w2 := strings.Split(strings.TrimSuffix(ref2, "\n"), "\n")
			if len(g) < len(w1)+len(w2) || len(g) > len(w1)+len(w2)+2 {
				t.Fatalf("%d lines, want %d + %d (+ crossing records)", len(g), len(w1), len(w2))
			}
			for i, l := range w1 {
				if g[i] != l {
					t.Fatalf("timeline 1 line %d:\n got: %s\nwant: %s", i+1, g[i], l)
				}
			}
			off := len(g) - len(w2)
			for i, l := range w2 {
				if g[off+i] != l {
					t.Fatalf("timeline 2 line %d:\n got: %s\nwant: %s", i+1, g[off+i], l)
				}
			}
			// Timeline 1 alone: its own files, the .partial included, up to
			// where the old primary's WAL ends.
			got1, stderr, code := walscope(t, dir, "dump", "--timeline", "1", "archive")
			g1 := strings.Split(strings.TrimSuffix(got1, "\n"), "\n")
			if code != 0 || len(g1) < len(w1) {
				t.Fatalf("--timeline 1: exit %d, %d lines (want at least %d), stderr %q", code, len(g1), len(w1), stderr)
			}
			for i, l := range w1 {
				if g1[i] != l {
					t.Fatalf("--timeline 1 line %d:\n got: %s\nwant: %s", i+1, g1[i], l)
				}
			}
		})
	}
	if checked == 0 {
		t.Fatal("no set with a timeline switch")
	}
}

// TestCorruptSegmentError: a record whose CRC is damaged stops the dump after
// every record before it, with exit code 1 and an error line naming
// PostgreSQL's message, the file, the offset and the LSN.
func TestCorruptSegmentError(t *testing.T) {
	var set testwal.Set
	for _, s := range testwal.Sets(t) {
		if s.Name == "corpora/pg18-8k-mixed" {
			set = s
		}
	}
	dir := testwal.Extract(t, set)
	const seg = "000000010000000000000009"
	data, err := os.ReadFile(filepath.Join(dir, "archive", seg))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Find the 100th record of the segment from pg_waldump's own output.
	ref, _ := testwal.ReadRef(dir, "records-00000001.txt")
	var lsns []string
	for _, l := range strings.Split(ref, "\n") {
		if i := strings.Index(l, "lsn: 0/009"); i >= 0 {
			lsns = append(lsns, l[i+5:i+15])
		}
	}
	if len(lsns) < 101 {
		t.Fatalf("only %d records in segment 9", len(lsns))
	}
	var lsn uint64
	for _, c := range strings.TrimPrefix(lsns[100], "0/") {
		lsn = lsn<<4 | uint64(strings.IndexRune("0123456789ABCDEF", c))
	}
	off := lsn % (1 << 20)
	data[off+21] ^= 0xFF // the record's CRC
	if err := os.WriteFile(filepath.Join(work, seg), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := walscope(t, work, "dump", seg)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
	}
	if n := strings.Count(out, "\n"); n != 100 {
		t.Errorf("%d records printed before the error, want 100", n)
	}
	lsnText := strings.TrimPrefix(lsns[100], "0/")
	lsnText = "0/" + strings.TrimLeft(lsnText, "0")
	for _, want := range []string{
		"incorrect resource manager data checksum in record at " + lsnText,
		"file " + seg, "LSN " + lsnText,
		"error in WAL record at 0/" + strings.TrimLeft(strings.TrimPrefix(lsns[99], "0/"), "0") + ":",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if !strings.Contains(stderr, "offset "+strconv.FormatUint(off, 10)+",") {
		t.Errorf("stderr %q does not name offset %d", stderr, off)
	}
}
