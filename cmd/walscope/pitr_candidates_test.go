package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/internal/testwal"
)

// smallDelete unpacks fixtures/smalldelete (real PostgreSQL 15 WAL, see its
// generate.sh) and returns its archive and the server's xids by step.
func smallDelete(t *testing.T) (string, map[string]uint32) {
	t.Helper()
	d := filepath.Join(testwal.Root(t), "fixtures", "smalldelete")
	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts []struct {
		Step string `json:"step"`
		XID  uint32 `json:"xid"`
	}
	if err := json.Unmarshal(b, &facts); err != nil {
		t.Fatal(err)
	}
	xids := map[string]uint32{}
	for _, f := range facts {
		xids[f.Step] = f.XID
	}
	return filepath.Join(dir, "archive"), xids
}

// TestPITRSmallTableEmptied: a DELETE that empties a 700-row table (687
// rows, below the default --min-rows of 1000) is found by the plain
// `pitr --relation small --event delete` (issue 28.1); the smaller deletes
// of the same table are listed as the other candidates, largest first, and
// the 5,000-row delete of another table is not among them; the share of the
// table comes from pg_class.reltuples (700) that VACUUM ANALYZE put in the
// WAL; --xid picks another candidate; an explicit --min-rows still applies.
func TestPITRSmallTableEmptied(t *testing.T) {
	archive, xids := smallDelete(t)
	var p format.PITRJSON
	out, stderr, code := walscope(t, "", "pitr", "--format", "json", "--relation", "small", "--event", "delete", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Event.XID == nil || *p.Event.XID != xids["empty"] || p.Event.Rows == nil || *p.Event.Rows != 687 {
		t.Fatalf("chosen xid %v rows %v, want xid %d (the DELETE that emptied the table, 687 rows)", p.Event.XID, p.Event.Rows, xids["empty"])
	}
	var got []uint32
	for _, c := range p.Candidates {
		got = append(got, c.XID)
	}
	want := []uint32{xids["empty"], xids["delete20"], xids["delete10"], xids["delete3"]}
	if len(got) != len(want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("candidates %v, want %v", got, want)
		}
	}
	c := p.Candidates[0]
	if c.TableRows == nil || *c.TableRows != 700 || c.Share == nil || *c.Share < 0.98 || *c.Share > 0.99 {
		t.Errorf("table rows %v share %v, want 700 and 687/700", c.TableRows, c.Share)
	}
	if !strings.Contains(p.Why, "most rows of the 4") {
		t.Errorf("why: %q", p.Why)
	}

	text, _, code := walscope(t, "", "pitr", "--relation", "small", "--event", "delete", archive)
	if code != 0 || !strings.Contains(text, "# chosen: the most rows") || !strings.Contains(text, "# other candidates (3 of 3") {
		t.Errorf("text (exit %d):\n%s", code, text)
	}

	out, stderr, code = walscope(t, "", "pitr", "--format", "json", "--relation", "small", "--event", "delete", "--xid", "729", archive)
	if code != 0 {
		t.Fatalf("--xid: exit %d: %s", code, stderr)
	}
	p = format.PITRJSON{}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Event.XID == nil || *p.Event.XID != xids["delete10"] {
		t.Errorf("--xid %d: chose %v (%v)", xids["delete10"], p.Event.XID, err)
	}

	if _, stderr, code = walscope(t, "", "pitr", "--relation", "small", "--event", "delete", "--min-rows", "1000", archive); code == 0 {
		t.Errorf("--min-rows 1000 given: a 687-row delete is no event, yet exit 0")
	} else if !strings.Contains(stderr, "no committed delete event of relation small") {
		t.Errorf("--min-rows 1000: %s", stderr)
	}

	ev, stderr, code := walscope(t, "", "events", "--relation", "small", archive)
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, stderr)
	}
	for _, step := range []string{"delete3", "delete10", "update5", "empty", "delete20"} {
		if !strings.Contains(ev, " "+itoa(xids[step])+"  commit") {
			t.Errorf("events --relation small lacks xid %d (%s):\n%s", xids[step], step, ev)
		}
	}
	if strings.Contains(ev, " "+itoa(xids["bigdelete"])+"  commit") {
		t.Errorf("events --relation small lists the other table's delete:\n%s", ev)
	}
}

func itoa(x uint32) string { return strconv.FormatUint(uint64(x), 10) }
