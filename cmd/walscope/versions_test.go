package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/testwal"
)

// versionFixtures are the fixtures fixtures/versions.sh makes: real WAL of a
// real server of each PostgreSQL major walscope reads (8 kB pages, as every
// packaged build has), and builds from source with other page sizes (VARIANT).
var versionFixtures = []struct {
	major   int
	variant string // "" or the page sizes of a build from source, e.g. "32k"
}{{10, ""}, {11, ""}, {12, ""}, {13, ""}, {14, ""}, {15, ""}, {16, ""}, {17, ""}, {18, ""}, {13, "32k"}, {13, "4k"}}

// TestVersionsMatchTheirOracle compares walscope with the oracle stored beside
// each fixtures/versions/pgN (see fixtures/README.md): `dump`, `dump -b`,
// `stats --by record` and `stats` with pg_waldump N's outputs over every
// timeline, line by line, and from 15 on every record the server's own
// pg_get_wal_records_info() listed. 11, which has no pg_waldump here, is
// compared with its closest oracle up to each record's type name. It logs equal lines / total per output and
// fails on any difference.
func TestVersionsMatchTheirOracle(t *testing.T) {
	root := testwal.Root(t)
	for _, f := range versionFixtures {
		v := f.major
		name := fmt.Sprintf("pg%d", v)
		if f.variant != "" {
			name += "-" + f.variant
		}
		t.Run(name, func(t *testing.T) {
			d := filepath.Join(root, "fixtures", "versions", name)
			if _, err := os.Stat(filepath.Join(d, "archive.tar.zst")); err != nil {
				t.Fatalf("fixture missing (make it with fixtures/versions/%s/generate.sh): %v", name, err)
			}
			dir := testwal.Extract(t, testwal.Set{Name: "fixtures/versions/" + name, Dir: d})
			settings, err := testwal.ReadRef(dir, "settings.txt")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(settings, fmt.Sprintf("version=postgres (PostgreSQL) %d.", v)) {
				t.Fatalf("settings.txt is not PostgreSQL %d's:\n%s", v, settings)
			}
			if want := map[string]string{"32k": "xlog_blcksz=32768", "4k": "xlog_blcksz=4096"}[f.variant]; want != "" && !strings.Contains(settings, want) {
				t.Fatalf("settings.txt is not a %s build's (%s):\n%s", f.variant, want, settings)
			}
			// The WAL does not record BLCKSZ (pg_waldump has it compiled in):
			// a build with other data pages is read with --blcksz, as its
			// users must (images' hole lengths depend on it).
			var pageSize []string
			if m := regexp.MustCompile(`(?m)^blcksz=(\d+)$`).FindStringSubmatch(settings); m != nil {
				pageSize = []string{"--blcksz", m[1]}
			}
			compared := 0
			for _, tl := range oracleTimelines(t, dir) {
				for _, c := range []struct {
					ref  string
					args []string
				}{
					{"records-", []string{"dump"}},
					{"bkp-", []string{"dump", "-b"}},
					{"stats-", []string{"stats", "--by", "record"}},
					{"stats-rmgr-", []string{"stats"}},
				} {
					want, err := testwal.ReadRef(dir, c.ref+tl.TLI+".txt")
					if err != nil {
						t.Fatal(err)
					}
					got, stderr, code := walscope(t, dir, append(append(c.args, pageSize...), "-p", "archive", tl.First, tl.Last)...)
					refErr, _ := testwal.ReadRef(dir, "records-"+tl.TLI+".err")
					if m := refError.FindStringSubmatch(refErr); m != nil {
						if !strings.Contains(stderr, m[1]) {
							t.Errorf("%s%s: pg_waldump ended with %q; walscope's stderr is %q", c.ref, tl.TLI, m[1], stderr)
						}
					} else if code != 0 {
						t.Errorf("%s%s: exit %d: %s", c.ref, tl.TLI, code, stderr)
					}
					countEqualLines(t, c.ref+tl.TLI, got, want)
					compared++
				}
			}
			for _, tl := range closestTimelines(t, dir) {
				for _, c := range []struct {
					ref  string
					args []string
				}{
					{"closest12-records-", []string{"dump"}},
					{"closest12-bkp-", []string{"dump", "-b"}},
				} {
					want, err := testwal.ReadRef(dir, c.ref+tl.TLI+".txt")
					if err != nil {
						t.Fatal(err)
					}
					got, stderr, code := walscope(t, dir, append(append(c.args, pageSize...), "-p", "archive", tl.First, tl.Last)...)
					if code != 0 {
						t.Errorf("%s%s: exit %d: %s", c.ref, tl.TLI, code, stderr)
					}
					g, w := upToRecordType(got), upToRecordType(want)
					w, n := removedIn12(g, w)
					t.Logf("%s%s: %d CREATE_INDEX records of Gin, Gist and SPGist, which 12 no longer knows", c.ref, tl.TLI, n)
					countEqualLines(t, c.ref+tl.TLI, g, w)
					compared++
				}
			}
			if _, err := testwal.ReadRef(dir, "walinspect-records.csv"); err == nil {
				compareWalinspect(t, dir)
				compared++
			}
			if compared == 0 {
				t.Fatalf("%s has no oracle output", name)
			}
		})
	}
}

// oracleTimelines lists the timelines of dir that have pg_waldump's output;
// none when the fixture's oracle is not pg_waldump.
func oracleTimelines(t *testing.T, dir string) []testwal.Timeline {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, "ref", "records-*.txt")); len(m) == 0 {
		return nil
	}
	return testwal.Timelines(t, dir)
}

// closestTimelines lists the timelines of dir that have the closest oracle's
// output (11: pg_waldump 12 over 12's page magic, see fixtures/versions.sh).
func closestTimelines(t *testing.T, dir string) []testwal.Timeline {
	t.Helper()
	refs, _ := filepath.Glob(filepath.Join(dir, "ref", "closest12-records-*.txt"))
	segs, err := os.ReadDir(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	var out []testwal.Timeline
	for _, ref := range refs {
		tli := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ref), "closest12-records-"), ".txt")
		var tl testwal.Timeline
		for _, e := range segs { // ReadDir sorts by name
			if n := e.Name(); len(n) == 24 && strings.HasPrefix(n, tli) {
				if tl.First == "" {
					tl.First = n
				}
				tl.Last = n
			}
		}
		if tl.First == "" {
			t.Fatalf("%s: no segment of timeline %s", ref, tli)
		}
		tl.TLI = tli
		out = append(out, tl)
	}
	return out
}

// upToRecordType keeps what pg_waldump 12 prints the same for 11's WAL: each
// record line up to and including its record type name (the description that
// follows is 12's reading), and block reference lines whole.
func upToRecordType(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "desc: "); j >= 0 && strings.HasPrefix(l, "rmgr: ") {
			k := strings.IndexByte(l[j+len("desc: "):], ' ')
			if k >= 0 {
				lines[i] = l[:j+len("desc: ")+k]
			}
		}
	}
	return strings.Join(lines, "\n")
}

// removedIn12 is the one justified difference between 11's records and
// pg_waldump 12's reading of them: 11's Gin, Gist and SPGist indexes log a
// CREATE_INDEX record (pg_waldump 10 names it so), which 12 removed and prints
// as UNKNOWN. It returns want with those lines taken from got, and how many.
func removedIn12(got, want string) (string, int) {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	n := 0
	for i := range min(len(g), len(w)) {
		if g[i] == w[i] || !strings.HasSuffix(g[i], "desc: CREATE_INDEX") || !strings.HasSuffix(w[i], "desc: UNKNOWN") {
			continue
		}
		if strings.TrimSuffix(g[i], "CREATE_INDEX") != strings.TrimSuffix(w[i], "UNKNOWN") {
			continue
		}
		for _, rm := range []string{"rmgr: Gin ", "rmgr: Gist ", "rmgr: SPGist "} {
			if strings.HasPrefix(g[i], rm) {
				w[i] = g[i]
				n++
			}
		}
	}
	return strings.Join(w, "\n"), n
}

// countEqualLines compares got with want line by line, logs how many are
// equal and reports the first few that are not.
func countEqualLines(t *testing.T, name, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	equal, shown := 0, 0
	for i := range max(len(g), len(w)) {
		if i < len(g) && i < len(w) && g[i] == w[i] {
			equal++
			continue
		}
		if shown < 5 {
			var gl, wl string
			if i < len(g) {
				gl = g[i]
			}
			if i < len(w) {
				wl = w[i]
			}
			t.Errorf("%s: line %d differs:\n got: %s\nwant: %s", name, i+1, gl, wl)
			shown++
		}
	}
	t.Logf("%s: %d/%d lines equal", name, equal, len(w))
	if len(g) != len(w) {
		t.Errorf("%s: %d lines, the oracle has %d", name, len(g), len(w))
	}
}

var (
	// dumpLineRE splits a `walscope dump` line (pg_waldump's format) into
	// rmgr, total length, xid, LSN, prev LSN and the text after "desc: ".
	dumpLineRE = regexp.MustCompile(`^rmgr: (\S+)\s+len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*(\d+), lsn: ([0-9A-F]+/[0-9A-F]+), prev ([0-9A-F]+/[0-9A-F]+), desc: (.*)$`)
	// timestampRE finds a timestamp as pg_waldump prints it ("... UTC") and as
	// the server prints it with DateStyle ISO ("...+00").
	timestampRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?( [A-Z]+|[+-]\d\d(:\d\d)?)`)
)

// compareWalinspect checks every row of ref/walinspect-records.csv (the
// server's pg_get_wal_records_info() over timeline 1) against walscope's dump
// of the record at the same LSN: resource manager, record type, total length,
// xid, previous LSN, and the description, where timestamps are compared by
// value because the server prints them with its DateStyle. The counts per
// record type of ref/walinspect-stats.csv (pg_get_wal_stats() over the same
// range) must equal those of the rows.
func compareWalinspect(t *testing.T, dir string) {
	t.Helper()
	tl := testwal.Timelines(t, dir)[0]
	out, stderr, code := walscope(t, dir, "dump", "-p", "archive", tl.First, tl.Last)
	if code != 0 {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	type rec struct{ rmgr, tot, xid, prev, desc string }
	byLSN := map[uint64]rec{}
	for _, l := range strings.Split(out, "\n") {
		m := dumpLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		byLSN[parseLSN(t, m[4])] = rec{m[1], m[2], m[3], m[5], m[6]}
	}
	rows := readCSV(t, filepath.Join(dir, "ref", "walinspect-records.csv"))
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	perType := map[string]int{}
	equal, shown := 0, 0
	for _, r := range rows[1:] {
		f := func(name string) string { return r[col[name]] }
		perType[f("resource_manager")+"/"+f("record_type")]++
		got, ok := byLSN[parseLSN(t, f("start_lsn"))]
		// pg_waldump prints "desc: TYPE DESCRIPTION"; trailing blanks of
		// both are dropped (pg_waldump's separator, some rm_desc's own).
		want := f("record_type")
		if d := f("description"); d != "" {
			want += " " + d
		}
		var diff string
		switch {
		case !ok:
			diff = "no record at this LSN"
		case got.rmgr != f("resource_manager"):
			diff = "rmgr " + got.rmgr
		case got.tot != f("record_length"):
			diff = "length " + got.tot
		case got.xid != f("xid"):
			diff = "xid " + got.xid
		case parseLSN(t, got.prev) != parseLSN(t, f("prev_lsn")):
			diff = "prev " + got.prev
		case normalizeTimes(t, descOnly(got.desc)) != normalizeTimes(t, strings.TrimRight(want, " ")):
			diff = "desc: " + got.desc
		}
		if diff == "" {
			equal++
			continue
		}
		if shown < 5 {
			t.Errorf("walinspect %s: %s\nserver: %s %s %s", f("start_lsn"), diff, f("resource_manager"), f("record_length"), want)
			shown++
		}
	}
	t.Logf("walinspect-records: %d/%d records equal", equal, len(rows)-1)
	for _, r := range readCSV(t, filepath.Join(dir, "ref", "walinspect-stats.csv"))[1:] {
		if n, _ := strconv.Atoi(r[1]); n != perType[r[0]] {
			t.Errorf("walinspect-stats: %s has %d records, pg_get_wal_records_info %d", r[0], n, perType[r[0]])
		}
	}
}

// descOnly drops the block references pg_waldump appends to a dump line
// without -b (pg_walinspect has them in a column of their own).
func descOnly(s string) string {
	if i := strings.Index(s, ", blkref #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}

// normalizeTimes rewrites every timestamp of s in one form, so that the same
// instant printed as "2026-12-01 17:02:33.833306 UTC" or "...33.833306+00"
// compares equal.
func normalizeTimes(t *testing.T, s string) string {
	return timestampRE.ReplaceAllStringFunc(s, func(ts string) string {
		var when time.Time
		var err error
		if strings.HasSuffix(ts, " UTC") {
			when, err = time.Parse("2006-01-02 15:04:05.999999999 MST", ts)
		} else {
			when, err = time.Parse("2006-01-02 15:04:05.999999999-07", ts)
			if err != nil {
				when, err = time.Parse("2006-01-02 15:04:05.999999999-07:00", ts)
			}
		}
		if err != nil {
			t.Errorf("timestamp %q: %v", ts, err)
			return ts
		}
		return when.UTC().Format(time.RFC3339Nano)
	})
}

func parseLSN(t *testing.T, s string) uint64 {
	t.Helper()
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad LSN %q", s)
	}
	return h<<32 | l
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %d rows, %v", path, len(rows), err)
	}
	return rows
}
