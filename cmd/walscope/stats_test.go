package main

import (
	"encoding/csv"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/internal/testwal"
)

// TestStatsMatchPgWaldump compares `walscope stats` and `stats --by record`
// with pg_waldump --stats and --stats=record, byte for byte, on every fixture
// and corpus timeline; the JSON and CSV forms must carry the same numbers.
func TestStatsMatchPgWaldump(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := testwal.Extract(t, set)
			for _, tl := range testwal.Timelines(t, dir) {
				for _, c := range []struct{ by, ref string }{{"record", "stats-"}, {"rmgr", "stats-rmgr-"}} {
					want, err := testwal.ReadRef(dir, c.ref+tl.TLI+".txt")
					if err != nil {
						continue
					}
					got, stderr, code := walscope(t, dir, "stats", "--by", c.by, "-p", "archive", tl.First, tl.Last)
					if code != 0 {
						t.Fatalf("%s: exit %d: %s", c.ref+tl.TLI, code, stderr)
					}
					if got != want {
						g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
						for i := range min(len(g), len(w)) {
							if g[i] != w[i] {
								t.Fatalf("%s: line %d differs:\n got: %q\nwant: %q", c.ref+tl.TLI, i+1, g[i], w[i])
							}
						}
						t.Fatalf("%s: %d lines, want %d", c.ref+tl.TLI, len(g), len(w))
					}
					checkMachineStats(t, dir, c.by, tl, want)
				}
			}
		})
	}
}

var (
	statsRowRE   = regexp.MustCompile(`^(\S+)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) `)
	statsTotalRE = regexp.MustCompile(`^Total\s+(\d+)\s+(\d+) `)
)

// checkMachineStats checks that the JSON and CSV forms hold the numbers of
// the text table: every row's count and record size, and the total.
func checkMachineStats(t *testing.T, dir, by string, tl testwal.Timeline, table string) {
	t.Helper()
	counts := map[string]string{}
	for _, l := range strings.Split(table, "\n") {
		if m := statsTotalRE.FindStringSubmatch(l); m != nil {
			counts["Total"] = m[1] + " " + m[2]
		} else if m := statsRowRE.FindStringSubmatch(l); m != nil {
			counts[m[1]] = m[2] + " " + m[3]
		}
	}
	out, _, code := walscope(t, dir, "stats", "--by", by, "--format", "json", "-p", "archive", tl.First, tl.Last)
	var doc format.StatsDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v", code, err)
	}
	for _, r := range append(doc.Rows, doc.Total) {
		got := strconv.FormatUint(r.Count, 10) + " " + strconv.FormatUint(r.RecordSize, 10)
		if counts[r.Type] != got {
			t.Errorf("json row %s: %s, table %q", r.Type, got, counts[r.Type])
		}
	}
	if len(doc.Rows)+1 != len(counts) {
		t.Errorf("json has %d rows and a total, table %d", len(doc.Rows), len(counts))
	}
	out, _, _ = walscope(t, dir, "stats", "--by", by, "--format", "csv", "-p", "archive", tl.First, tl.Last)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != len(counts)+1 {
		t.Fatalf("csv: %d records (%v), want %d", len(recs), err, len(counts)+1)
	}
	for _, r := range recs[1:] {
		if want := counts[r[0]]; want != r[3]+" "+r[5] {
			t.Errorf("csv row %s: %s %s, table %q", r[0], r[3], r[5], want)
		}
	}
}

// TestStopIsNotEndOfWAL: a reading ended by -n or -e says so; it said
// "end of WAL at 0/600208 (end of the available files)" after `dump -n 2`,
// which, read during an incident, places the end of WAL where it is not.
// In pg_waldump's form nothing is said, as pg_waldump says nothing.
func TestStopIsNotEndOfWAL(t *testing.T) {
	wal := sampleWAL(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"dump", "-n", "2", wal}, "walscope: stopped at 0/600208 (-n 2: 2 records shown), not the end of WAL\n"},
		{[]string{"dump", "-e", "0/600300", wal}, "walscope: stopped at 0/6002C0 (-e 0/600300), not the end of WAL\n"},
		{[]string{"stats", "-e", "0/600300", wal}, "walscope: stopped at 0/6002C0 (-e 0/600300), not the end of WAL\n"},
		{[]string{"events", "-e", "0/600300", wal}, "walscope: stopped at 0/6002C0 (-e 0/600300), not the end of WAL\n"},
		{[]string{"whatif", "-e", "0/600300", wal}, "walscope: stopped at 0/6002C0 (-e 0/600300), not the end of WAL\n"},
		{[]string{"dump", "-n", "99999999", wal}, "walscope: end of WAL at 0/7FFFF0 (end of the available files)\n"},
		{[]string{"stats", "-e", "0/900000", wal}, "walscope: end of WAL at 0/7FFFF0 (end of the available files)\n"},
		{[]string{"dump", "-n", "2", "-p", wal, "000000010000000000000006"}, ""},
	} {
		_, stderr, code := walscope(t, "", tc.args...)
		if code != 0 || stderr != tc.says {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.says)
		}
	}
}
