package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/internal/testwal"
)

// rowsFact is one incident of fixtures/rows/facts.json.
type rowsFact struct {
	Name         string                    `json:"name"`
	XID          uint32                    `json:"xid"`
	RestorePoint string                    `json:"restore_point"`
	Tables       []string                  `json:"tables"`
	Ops          map[string]map[string]int `json:"ops"`
}

// rowsFixture unpacks fixtures/rows: the backup, the archive directory,
// the primary's expected/ views, and the incidents.
func rowsFixture(t *testing.T, dir string) (base, archive, expected string, facts []rowsFact) {
	t.Helper()
	d := filepath.Join(testwal.Root(t), "fixtures", "rows")
	for _, a := range []string{"archive.tar.zst", "expected.tar.zst"} {
		if err := testwal.UntarZstd(filepath.Join(d, a), dir); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(d, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "base.tar.gz"), filepath.Join(dir, "archive"), filepath.Join(dir, "expected"), facts
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return pgtest.Lines(string(b))
}

// TestRowsAgainstServer: for each incident of fixtures/rows (real
// PostgreSQL 15: DELETE with TOASTed values, UPDATE of every row HOT and
// non-HOT and of a primary key, INSERT and COPY, TRUNCATE after row
// changes, DROP TABLE after an UPDATE; savepoints released and rolled
// back, a second session committing meanwhile), `walscope rows --xid X`
// gives exactly the rows the transaction changed: starting from the
// primary's own rows just before BEGIN (row_to_json, byte for byte), each
// change's old row is there when the change comes and is replaced by its
// new one, and the end is exactly the primary's rows just after COMMIT;
// per table and operation the changes are as many as the server's
// statements changed (facts.json). --relation keeps one table's.
func TestRowsAgainstServer(t *testing.T) {
	base, archive, expected, facts := rowsFixture(t, t.TempDir())
	compared := 0
	for _, f := range facts {
		out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(f.XID), archive)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f.Name, code, stderr)
		}
		state := map[string]map[string]int{} // table -> row_to_json line -> count
		for _, tab := range f.Tables {
			state[tab] = map[string]int{}
			for _, l := range readLines(t, filepath.Join(expected, f.Name, tab+".before.jsonl")) {
				state[tab][l]++
			}
		}
		ops := map[string]map[string]int{}
		for i, line := range pgtest.Lines(out) {
			var c struct {
				Relation string          `json:"relation"`
				Op       string          `json:"op"`
				XID      uint32          `json:"xid"`
				Old      json.RawMessage `json:"old"`
				New      json.RawMessage `json:"new"`
			}
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("%s line %d: %v: %s", f.Name, i+1, err, line)
			}
			tab := strings.TrimPrefix(c.Relation, "public.")
			st := state[tab]
			if st == nil {
				t.Fatalf("%s: a change of %s, which the transaction did not touch: %s", f.Name, c.Relation, line)
			}
			if ops[tab] == nil {
				ops[tab] = map[string]int{}
			}
			ops[tab][c.Op]++
			if old := string(c.Old); old != "null" {
				if st[old] == 0 {
					t.Errorf("%s line %d: the old row is not the table's then: %s", f.Name, i+1, old)
				}
				st[old]--
			}
			if n := string(c.New); n != "null" {
				st[n]++
			}
			compared++
		}
		for _, tab := range f.Tables {
			after := map[string]int{}
			for _, l := range readLines(t, filepath.Join(expected, f.Name, tab+".after.jsonl")) {
				after[l]++
			}
			for row, n := range state[tab] {
				if n != after[row] {
					t.Errorf("%s: %s: row %s: %d after the changes, the primary had %d", f.Name, tab, row, n, after[row])
				}
			}
			for row, n := range after {
				if state[tab][row] == 0 && n != 0 {
					t.Errorf("%s: %s: the primary's row %s is not there after the changes", f.Name, tab, row)
				}
			}
		}
		if g, w := fmt.Sprint(ops), fmt.Sprint(f.Ops); g != w {
			t.Errorf("%s: changes per table and operation: got %s, the server's %s", f.Name, g, w)
		}
	}
	// --relation: only that table's changes, the same ones
	all, _, _ := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(facts[1].XID), archive)
	one, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(facts[1].XID), "--relation", "notes", archive)
	if code != 0 {
		t.Fatalf("--relation notes: exit %d: %s", code, stderr)
	}
	var want []string
	for _, l := range pgtest.Lines(all) {
		if strings.Contains(l, `"relation":"public.notes"`) {
			want = append(want, l)
		}
	}
	if got := pgtest.Lines(one); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("--relation notes: %d lines, the notes lines of all changes: %d", len(got), len(want))
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d changes of %d transactions replayed onto the primary's rows give its rows after each", compared, len(facts))
}

// TestRowsCopyAndErrors: --format copy prints the old rows of one table
// (DROP: every row as of just before, the primary's COPY before the
// incident with the transaction's own UPDATE applied); a table the
// transaction did not change gives nothing; a transaction of several
// tables needs --relation; an xid with no end record, a rolled-back
// subtransaction's and a committed subtransaction's (naming its parent)
// are exit 3.
func TestRowsCopyAndErrors(t *testing.T) {
	base, archive, expected, facts := rowsFixture(t, t.TempDir())
	drop := facts[4]
	out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(drop.XID), "--format", "copy", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	before := readLines(t, filepath.Join(expected, drop.Name, "doomed.before.copy"))
	got := pgtest.Lines(out)
	// the UPDATE's old row (id 1 as before), then the 80 rows just before
	// the DROP: id 1 with the UPDATE's v
	if len(got) != 1+len(before) || got[0] != before[0] {
		t.Fatalf("copy: %d lines, first %q; want %d, first %q", len(got), got[0], 1+len(before), before[0])
	}
	rest := slices.Clone(got[1:])
	want := slices.Clone(before)
	for i, l := range want {
		if strings.HasPrefix(l, "1\t") {
			want[i] = "1\tlast\t\\N"
		}
	}
	slices.Sort(rest)
	slices.Sort(want)
	if !slices.Equal(rest, want) {
		t.Errorf("rows as of just before the DROP differ from the primary's (with the UPDATE): %s", firstDiffLine(strings.Join(rest, "\n"), strings.Join(want, "\n")))
	}
	if _, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(facts[1].XID), "--format", "copy", archive); code != 2 || !strings.Contains(stderr, "--relation") {
		t.Errorf("copy of a transaction of 3 tables: exit %d, %s", code, stderr)
	}
	if _, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", "999999", archive); code != 3 {
		t.Errorf("an xid that never ended: exit %d, %s", code, stderr)
	}
	// the delete incident's subtransactions: the released savepoint's
	// (committed with it) and the rolled-back one's, the next xids
	x := facts[0].XID
	if _, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(x+1), archive); code != 3 || !strings.Contains(stderr, fmt.Sprintf("give --xid %d", x)) {
		t.Errorf("a committed subtransaction's xid: exit %d, %s", code, stderr)
	}
	if _, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(x+2), archive); code != 3 || !strings.Contains(stderr, "did not commit") {
		t.Errorf("a rolled-back subtransaction's xid: exit %d, %s", code, stderr)
	}
	if out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(facts[0].XID), "--relation", "stock", archive); code != 0 || out != "" {
		t.Errorf("--relation of a table it did not change: exit %d, %q %s", code, out, stderr)
	}
	// a .tar.gz cut short: its label is read, the replay starts while the
	// tar is opened (replay.PendingBackup) and the backup's error is the
	// one told, as page tells it (which opens the backup first)
	raw, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(cut, raw[:len(raw)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	_, rowsErr, rowsCode := walscope(t, "", "rows", "--backup", cut, "--xid", fmt.Sprint(drop.XID), archive)
	_, pageErr, pageCode := walscope(t, "", "page", "--backup", cut, "--relation", "doomed", "--target-xid", fmt.Sprint(drop.XID), archive)
	if rowsCode == 0 || rowsCode != pageCode || rowsErr != pageErr || !strings.Contains(rowsErr, "base.tar.gz") {
		t.Errorf("a backup cut short: rows exit %d, %q; page exit %d, %q", rowsCode, rowsErr, pageCode, pageErr)
	}
	// a wrong setting flag is said before the WAL is read
	if _, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(drop.XID), "--intervalstyle", "nonsense", archive); code != 2 || !strings.Contains(stderr, "--intervalstyle") {
		t.Errorf("a wrong --intervalstyle: exit %d, %s", code, stderr)
	}
}

// TestRowsCacheDir: --cache-dir D keeps the index of the backup's
// base.tar.gz in D/gzip-tar-index; the next run on it reads it (the
// file's time of use moves) and prints the same rows, which are those a
// run keeping nothing prints (--cache-dir none, nothing made).
func TestRowsCacheDir(t *testing.T) {
	base, archive, _, facts := rowsFixture(t, t.TempDir())
	x := fmt.Sprint(facts[0].XID)
	none := filepath.Join(t.TempDir(), "none")
	t.Chdir(filepath.Dir(none))
	want, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", x, "--cache-dir", "none", archive)
	if code != 0 || want == "" {
		t.Fatalf("--cache-dir none: exit %d, %d bytes: %s", code, len(want), stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("--cache-dir none made %s: %v", none, err)
	}
	dir := t.TempDir()
	for run := range 2 {
		out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", x, "--cache-dir", dir, archive)
		if code != 0 || out != want {
			t.Fatalf("run %d with --cache-dir: exit %d, output differs: %s %s", run+1, code, firstDiffLine(out, want), stderr)
		}
		files, err := filepath.Glob(filepath.Join(dir, "gzip-tar-index", "*"))
		if err != nil || len(files) != 1 {
			t.Fatalf("run %d: index files %v (%v)", run+1, files, err)
		}
		st, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if run == 1 && time.Since(st.ModTime()) > time.Hour {
			t.Errorf("the second run did not read the index file (last used %s)", st.ModTime())
		}
		long := time.Now().Add(-24 * time.Hour)
		if err := os.Chtimes(files[0], long, long); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRowsUndo: the --format sql script of each incident, run by a real
// PostgreSQL 15 restored from the fixture's backup and archive to just
// after the incident's commit (recovery_target_xid, promoted), leaves each
// table it changed with exactly the rows the primary's COPY printed just
// before the incident (compared sorted: the undo writes rows elsewhere).
func TestRowsUndo(t *testing.T) {
	server, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "walscope-rows-undo-", "WALSCOPE_KEEP")
	base, archive, expected, facts := rowsFixture(t, work)
	bdir := filepath.Join(work, "base")
	if err := os.MkdirAll(bdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", base, "-C", bdir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	pgtest.ChownPG(t, work)
	tables := 0
	for _, f := range facts {
		script, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", fmt.Sprint(f.XID), "--format", "sql", archive)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f.Name, code, stderr)
		}
		s := pgtest.Restore(t, work, "undo-"+f.Name, 15, server, client, bdir, archive,
			fmt.Sprintf("recovery_target_xid = '%d'\nrecovery_target_action = 'promote'", f.XID))
		s.WaitFor(t, "SELECT pg_is_in_recovery()", "f")
		path := filepath.Join(work, f.Name+".sql")
		if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		pgtest.ChownPG(t, path)
		if out, err := pgtest.AsPostgres(s.PsqlLine("postgres") + " -f " + pgtest.Shq(path)).CombinedOutput(); err != nil || bytes.Contains(out, []byte("ERROR")) {
			t.Fatalf("%s: psql -f: %v\n%s", f.Name, err, out)
		}
		for _, tab := range f.Tables {
			got := s.Query(t, "copy "+tab+" to stdout")
			want := readLines(t, filepath.Join(expected, f.Name, tab+".before.copy"))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s after the undo script (%d rows) differs from before the incident (%d rows): %s", f.Name, tab, len(got), len(want),
					firstDiffLine(strings.Join(got, "\n"), strings.Join(want, "\n")))
				continue
			}
			tables++
		}
		s.Stop("immediate")
	}
	if tables == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d tables of %d incidents back to their rows before the incident", tables, len(facts))
}

// TestPITRRowsUndo: pitr names the walscope rows command that undoes the
// event's transaction (issue 27.5); run as printed (WAL... replaced by the
// archive) for the DROP TABLE of fixtures/rows, it is the drop incident's
// transaction and its script creates the table again with every row it
// had just before the DROP.
func TestPITRRowsUndo(t *testing.T) {
	base, archive, _, facts := rowsFixture(t, t.TempDir())
	drop := facts[4]
	out, stderr, code := walscope(t, "", "pitr", "--format", "json", "--relation", "doomed", "--event", "drop", "--backup", base, archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p struct {
		RowsUndo string `json:"rows_undo"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(p.RowsUndo)
	if len(words) < 4 || words[0] != "walscope" || words[1] != "rows" || words[len(words)-1] != "WAL..." ||
		!strings.Contains(p.RowsUndo, "--backup "+base) || !strings.Contains(p.RowsUndo, fmt.Sprintf("--xid %d ", drop.XID)) {
		t.Fatalf("rows_undo %q (the drop's xid is %d)", p.RowsUndo, drop.XID)
	}
	script, stderr, code := walscope(t, "", append(words[1:len(words)-1], archive)...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", p.RowsUndo, code, stderr)
	}
	if n := strings.Count(script, "INSERT INTO public.doomed "); !strings.Contains(script, "CREATE TABLE public.doomed (") || n != drop.Ops["doomed"]["drop"] {
		t.Errorf("%s: %d INSERTs, the table had %d rows before the DROP; CREATE TABLE: %v", p.RowsUndo, n, drop.Ops["doomed"]["drop"], strings.Contains(script, "CREATE TABLE"))
	}
}
