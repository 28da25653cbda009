package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/internal/testwal"
)

// walOnlyFacts is fixtures/rows-walonly/facts.json.
type walOnlyFacts struct {
	XID     uint32              `json:"xid"`
	Start   string              `json:"start"`
	Removed map[string][]string `json:"removed"`
	Made    map[string][]string `json:"made"`
}

// walOnlyFixture unpacks fixtures/rows-walonly: the archive directory, the
// catalog file and the facts.
func walOnlyFixture(t *testing.T) (dir, archive, catalog string, facts walOnlyFacts) {
	t.Helper()
	d := filepath.Join(testwal.Root(t), "fixtures", "rows-walonly")
	dir = t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(d, "catalog.json.zst"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	catalog = filepath.Join(dir, "catalog.json")
	out, err := os.Create(catalog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zr.WriteTo(out); err != nil {
		t.Fatal(err)
	}
	out.Close()
	raw, err := os.ReadFile(filepath.Join(d, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "archive"), catalog, facts
}

// TestRowsWALOnly: `walscope rows` without --backup on fixtures/rows-walonly
// (real PostgreSQL 15, wal_level replica, the WAL read starting after the
// image of t_far's first page): every old and new row it prints is one the
// server says the transaction removed or made (row_to_json, byte for byte),
// each of those is printed or counted missing, the counts on standard error
// are the lines' old_missing/new_missing, and the exit status is 7; the
// undo script lists as NOT UNDONE exactly the changes with a version
// missing. Usage errors exit 2 with what is needed.
func TestRowsWALOnly(t *testing.T) {
	dir, archive, catalog, facts := walOnlyFixture(t)
	xid := strconv.Itoa(int(facts.XID))
	stdout, stderr, code := walscope(t, dir, "rows", "--xid", xid, "--catalog", catalog, "--start-lsn", facts.Start, archive)
	if code != exitNotInWAL {
		t.Fatalf("exit %d, want %d: %s", code, exitNotInWAL, stderr)
	}
	removed, made := map[string]map[string]int{}, map[string]map[string]int{}
	for tb, rs := range facts.Removed {
		removed[tb] = map[string]int{}
		for _, r := range rs {
			removed[tb][r]++
		}
	}
	for tb, rs := range facts.Made {
		made[tb] = map[string]int{}
		for _, r := range rs {
			made[tb][r]++
		}
	}
	missing, withMissing, given := 0, 0, 0
	for _, line := range pgtest.Lines(stdout) {
		var ch struct {
			Relation   string          `json:"relation"`
			Op         string          `json:"op"`
			Old        json.RawMessage `json:"old"`
			New        json.RawMessage `json:"new"`
			OldMissing string          `json:"old_missing"`
			NewMissing string          `json:"new_missing"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		tb := strings.TrimPrefix(ch.Relation, "public.")
		if ch.OldMissing != "" || ch.NewMissing != "" {
			withMissing++
		}
		for _, side := range []struct {
			raw     json.RawMessage
			missing string
			set     map[string]int
			want    bool
		}{{ch.Old, ch.OldMissing, removed[tb], ch.Op != "insert"}, {ch.New, ch.NewMissing, made[tb], ch.Op != "delete"}} {
			if !side.want {
				continue
			}
			if side.missing != "" {
				missing++
				continue
			}
			if side.set[string(side.raw)] == 0 {
				t.Errorf("%s of %s: %s is not a row the server says the transaction changed", ch.Op, tb, side.raw)
				continue
			}
			side.set[string(side.raw)]--
			given++
		}
	}
	left := 0
	for _, m := range []map[string]map[string]int{removed, made} {
		for _, rs := range m {
			for _, n := range rs {
				left += n
			}
		}
	}
	if left != missing || given == 0 || missing == 0 {
		t.Errorf("%d row versions given, %d counted missing, %d of the server's not given", given, missing, left)
	}
	counted := 0
	for _, m := range regexp.MustCompile(`: (\d+) \w+ rows without their`).FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		counted += n
	}
	if counted != missing {
		t.Errorf("standard error counts %d missing, the lines %d:\n%s", counted, missing, stderr)
	}
	t.Logf("%d row versions given, identical to the server's; %d not in the WAL, counted", given, missing)

	script, stderr, code := walscope(t, dir, "rows", "--xid", xid, "--catalog", catalog, "--start-lsn", facts.Start, "--format", "sql", archive)
	notUndone := strings.Count(script, "\n-- NOT UNDONE:") / 2
	if code != exitNotInWAL || notUndone != withMissing || !strings.HasSuffix(script, "COMMIT;\n") || !strings.Contains(stderr, "cannot be undone") {
		t.Errorf("sql: exit %d, %d changes NOT UNDONE, want %d:\n%s", code, notUndone, withMissing, stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rows", "--xid", xid, "--start-lsn", facts.Start, archive}, "the WAL read does not hold the catalog: "},
		{[]string{"rows", "--xid", xid, "--catalog", filepath.Join(dir, "archive", "nothing"), archive}, "--catalog"},
		{[]string{"rows", "--xid", xid, "--catalog", catalog, "--format", "parquet", archive}, "needs --backup"},
		{[]string{"rows", "--xid", xid, "--catalog", catalog, "--block-size", "1000", archive}, "--block-size"},
	} {
		_, stderr, code := walscope(t, dir, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, stderr)
		}
	}
	// the whole WAL (the tables made in it): the catalog from its pages
	// gives what the catalog file does
	fromWAL, stderr, code := walscope(t, dir, "rows", "--xid", xid, archive)
	fromFile, _, code2 := walscope(t, dir, "rows", "--xid", xid, "--catalog", catalog, archive)
	if code != 0 || code2 != 0 || fromWAL != fromFile || len(pgtest.Lines(fromWAL)) < 100 {
		t.Errorf("catalog from the WAL: exit %d, %d lines; from the file: exit %d, %d lines; identical %v: %s", code, len(pgtest.Lines(fromWAL)), code2, len(pgtest.Lines(fromFile)), fromWAL == fromFile, stderr)
	}
	q, _, code := walscope(t, dir, "rows", "--catalog-query")
	if code != 0 || !strings.HasPrefix(q, "SELECT json_build_object(") {
		t.Errorf("--catalog-query: exit %d: %s", code, q)
	}
}
