package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEventsRowsBack: `walscope events` on fixtures/rows (real PostgreSQL
// 15) prints, for each committed delete, update, truncate and drop of a
// table, the commands that give its rows back (issue 27.5), and they work
// as printed (BACKUP and WAL... replaced by the fixture's backup and
// archive): the table command gives exactly the primary's COPY of the
// table just before the transaction (the other session touched another
// table); the rows command names the server's own xid of the incident and
// writes an undo script for that table alone. Events of indexes, TOAST
// tables and catalogs, and rolled-back events, have no commands; the text
// output lists each transaction and table once.
func TestEventsRowsBack(t *testing.T) {
	dir := t.TempDir()
	base, archive, expected, facts := rowsFixture(t, dir)
	out, stderr, code := walscope(t, "", "events", "--min-rows", "1", "--format", "json", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var evs []struct {
		Kind         string  `json:"kind"`
		RelationName *string `json:"relation_name"`
		XID          *uint32 `json:"xid"`
		Outcome      *string `json:"outcome"`
		RowsBack     *string `json:"rows_back"`
		RowsUndo     *string `json:"rows_undo"`
	}
	if err := json.Unmarshal([]byte(out), &evs); err != nil {
		t.Fatal(err)
	}
	byXID := map[uint32]rowsFact{}
	for _, f := range facts {
		byXID[f.XID] = f
	}
	run := func(cmd string) string {
		t.Helper()
		words := strings.Fields(cmd)
		if len(words) < 4 || words[0] != "walscope" || words[len(words)-1] != "WAL..." {
			t.Fatalf("command %q", cmd)
		}
		args := append([]string(nil), words[1:len(words)-1]...)
		for i, w := range args {
			if w == "BACKUP" {
				args[i] = base
			}
		}
		got, stderr, code := walscope(t, "", append(args, archive)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, code, stderr)
		}
		return got
	}
	compared, undone := 0, 0
	covered := map[string]bool{} // fact/table given back
	for _, ev := range evs {
		name := ""
		if ev.RelationName != nil {
			name = *ev.RelationName
		}
		system := strings.HasPrefix(name, "pg_") || strings.HasSuffix(name, "_pkey") || strings.HasSuffix(name, "_seq")
		committed := ev.Outcome != nil && *ev.Outcome == "commit"
		wantCmds := committed && !system && name != "" && ev.XID != nil &&
			(ev.Kind == "delete" || ev.Kind == "update" || ev.Kind == "truncate" || ev.Kind == "drop")
		if !wantCmds {
			if ev.RowsBack != nil || ev.RowsUndo != nil {
				t.Errorf("%s %s (xid %v, %v): commands %v %v, want none", ev.Kind, name, ev.XID, ev.Outcome, ev.RowsBack, ev.RowsUndo)
			}
			continue
		}
		if ev.RowsBack == nil || ev.RowsUndo == nil {
			t.Errorf("%s %s xid %d: no commands", ev.Kind, name, *ev.XID)
			continue
		}
		f, ok := byXID[*ev.XID]
		if !ok {
			continue // not one of the incidents (the load before them)
		}
		tab := strings.TrimPrefix(name, "public.")
		if !strings.Contains(*ev.RowsUndo, "--xid "+strconv.FormatUint(uint64(f.XID), 10)+" ") {
			t.Errorf("rows_undo %q: not the incident's xid %d", *ev.RowsUndo, f.XID)
		}
		key := f.Name + "/" + tab
		if covered[key] {
			continue
		}
		covered[key] = true
		want, err := os.ReadFile(filepath.Join(expected, f.Name, tab+".before.copy"))
		if err != nil {
			t.Fatal(err)
		}
		if got := run(*ev.RowsBack); got != string(want) || got == "" {
			t.Errorf("%s: %d bytes, the primary's COPY before %s %d", *ev.RowsBack, len(got), f.Name, len(want))
		} else {
			compared += strings.Count(got, "\n")
		}
		script := run(*ev.RowsUndo)
		if !strings.Contains(script, "COMMIT") || !strings.Contains(script, tab) {
			t.Errorf("%s: no undo of %s in:\n%s", *ev.RowsUndo, tab, script)
		}
		for _, other := range f.Tables {
			if other != tab && strings.Contains(script, "public."+other+" ") {
				t.Errorf("%s: the script touches %s too", *ev.RowsUndo, other)
			}
		}
		undone++
	}
	// every table of every incident that deleted, updated, truncated or dropped rows
	want := 0
	for _, f := range facts {
		for _, tab := range f.Tables {
			for op := range f.Ops[tab] {
				if op != "insert" {
					want++
					break
				}
			}
		}
	}
	if len(covered) != want {
		t.Errorf("commands checked for %d incident tables %v, want %d", len(covered), covered, want)
	}
	t.Logf("%d tables given back (%d rows identical to the primary's COPY), %d undo scripts", len(covered), compared, undone)

	text, stderr, code := walscope(t, "", "events", "--min-rows", "1", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, section, ok := strings.Cut(text, "\nRows back (")
	if !ok {
		t.Fatalf("no rows back section in:\n%s", text)
	}
	if n := strings.Count(section, "walscope table "); n != len(covered)+1 { // + xid 744, before the incidents
		t.Errorf("text: %d table commands, want one per transaction and table (%d):\n%s", n, len(covered)+1, section)
	}
}

// TestReportRowsBack: the report's timeline carries the same commands in
// its "rows back" column, as text (escaped), one per line.
func TestReportRowsBack(t *testing.T) {
	dir := t.TempDir()
	_, archive, _, _ := rowsFixture(t, dir)
	page := filepath.Join(dir, "r.html")
	if _, stderr, code := walscope(t, "", "report", "-q", "--out", page, archive); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	for _, want := range []string{
		"<th>rows back</th>",
		`<td class="code">walscope table --backup BACKUP --relation public.doomed --database 5 --target-lsn 0/84A360 --target-inclusive=false WAL...` + "\n" +
			`walscope rows --backup BACKUP --xid 812 --relation public.doomed --database 5 --format sql WAL...</td>`,
		`<td class="code">walscope table --backup BACKUP --relation public.hist --database 5 --target-lsn 0/840B70 --target-inclusive=false WAL...`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
