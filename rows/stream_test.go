package rows_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// changeText is one change as the comparisons below see it: all of it.
func changeText(c *rows.Change) string {
	return fmt.Sprintf("%s %d %s %s %s %s %v", c.LSN, c.XID, c.Op, c.Rel.Name(), rowText(c.Old), rowText(c.New), c.Err)
}

// undoOrder is the changes last to first, the rows of one TRUNCATE or DROP
// in their order (Result.Backward's order).
func undoOrder(all []rows.Change) []string {
	var out []string
	for i := len(all) - 1; i >= 0; i-- {
		j := i
		if op := all[i].Op; op == rows.Truncate || op == rows.Drop {
			for j > 0 && all[j-1].Op == op && all[j-1].LSN == all[i].LSN && all[j-1].Rel == all[i].Rel {
				j--
			}
		}
		for k := j; k <= i; k++ {
			out = append(out, changeText(&all[k]))
		}
		i = j
	}
	return out
}

// TestOpenSpilled: for each incident of fixtures/rows (deletes, updates,
// inserts, a TRUNCATE after changes of the same table, a DROP TABLE,
// rolled-back savepoints), Open with a change budget of one byte (the
// replay writes every change to its file, and they are read back from
// it) gives through All exactly the changes Changes holds in memory, in
// the same order; Backward gives them in reverse (a TRUNCATE's or DROP's
// rows, read from the pages, in their physical order); the undo script and the
// JSON lines written from the stream are byte-identical to those written
// from the changes in memory; a second All gives them again.
func TestOpenSpilled(t *testing.T) {
	b, wal, facts := fixture(t)
	compared, spilled := 0, int64(0)
	for _, f := range facts {
		cfg := rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID), TempDir: t.TempDir()}
		whole, err := rows.Changes(cfg)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		var want []string
		for i := range whole.Changes {
			want = append(want, changeText(&whole.Changes[i]))
		}
		cfg.ChangeMemoryBytes = 1
		res, err := rows.Open(cfg)
		if err != nil {
			t.Fatalf("%s: Open: %v", f.Name, err)
		}
		if res.Changes != nil {
			t.Errorf("%s: Open holds the changes in memory", f.Name)
		}
		total, onDisk := res.Replay().ChangeBytes()
		if total == 0 || onDisk != total {
			t.Errorf("%s: %d bytes of changes, %d of them in the file: not all spilled", f.Name, total, onDisk)
		}
		spilled += onDisk
		for pass := range 2 {
			var got []string
			for c, err := range res.All() {
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				got = append(got, changeText(c))
			}
			if len(got) == 0 || !slices.Equal(got, want) || res.Len() != len(want) {
				t.Fatalf("%s (pass %d): %d changes streamed (Len %d), %d in memory, or they differ", f.Name, pass, len(got), res.Len(), len(want))
			}
		}
		var back []string
		for c, err := range res.Backward() {
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			back = append(back, changeText(c))
		}
		if wantBack := undoOrder(whole.Changes); !slices.Equal(back, wantBack) {
			t.Errorf("%s: Backward is not All reversed, one TRUNCATE's or DROP's rows in their order (%d changes, want %d)", f.Name, len(back), len(wantBack))
		}
		var undoWhole, undoStream, jsonWhole, jsonStream bytes.Buffer
		if err := hexFormat().WriteUndo(&undoWhole, whole); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if err := hexFormat().WriteUndo(&undoStream, res); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !bytes.Equal(undoWhole.Bytes(), undoStream.Bytes()) {
			t.Errorf("%s: the undo script from the stream differs from the one from memory:\n%s\n----\n%s", f.Name, undoStream.String(), undoWhole.String())
		}
		for _, out := range []struct {
			res *rows.Result
			buf *bytes.Buffer
		}{{whole, &jsonWhole}, {res, &jsonStream}} {
			for c, err := range out.res.All() {
				if err != nil {
					t.Fatal(err)
				}
				line, err := hexFormat().AppendJSON(nil, c)
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				out.buf.Write(append(line, '\n'))
			}
		}
		if jsonWhole.Len() == 0 || !bytes.Equal(jsonWhole.Bytes(), jsonStream.Bytes()) {
			t.Errorf("%s: the JSON lines from the stream differ from those from memory", f.Name)
		}
		compared += len(want)
		whole.Close()
		res.Close()
	}
	t.Logf("%d changes of %d transactions identical read back from the file (%d bytes spilled), forward, backward, as undo script and JSON", compared, len(facts), spilled)
}

// TestLargeDeleteBoundedMemory: a real PostgreSQL 15 transaction deletes
// 150,000 rows of a narrow table and inserts 100 with INSERT ... ON
// CONFLICT DO NOTHING (beside a concurrent session's inserts and its own
// rolled-back savepoint updating the other rows), read with the
// replay watching every xid from it on (HoldAll: no prescan, so the
// concurrent and rolled-back changes are kept and must be left out on
// reading). Open with a change budget of 256 KiB spills the changes to its
// file; All gives exactly the server's deleted rows (ctid, id, v, in
// physical order, as the DELETE's scan took them) then its inserted ones;
// and the heap sampled
// while they are read grows by less than a quarter of what Changes holds
// to give the same rows in memory.
func TestLargeDeleteBoundedMemory(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "rows-large-", "WALSCOPE_KEEP")
	p := pgtest.New(t, work, "p", 15, bin, client)
	p.InitDB(t, "", "wal_keep_size = '1GB'\nmax_wal_size = '1GB'\ncheckpoint_timeout = '1h'\nautovacuum = off")
	p.Start(t)
	const n, deleted = 200000, 150000
	p.Query(t, fmt.Sprintf("CREATE TABLE narrow (id int PRIMARY KEY, v int); INSERT INTO narrow SELECT g, g %% 1000 FROM generate_series(1, %d) g; CREATE TABLE other (id int)", n))
	base := filepath.Join(work, "base")
	p.BaseBackup(t, base)
	want := p.Query(t, "SELECT ctid, id, v FROM narrow WHERE id % 4 <> 0 ORDER BY ctid")
	if len(want) != deleted {
		t.Fatalf("%d rows to delete", len(want))
	}
	a, other := p.Session(t, "a"), p.Session(t, "other")
	a.Exec("BEGIN")
	xid, _ := strconv.ParseUint(a.One("SELECT txid_current()"), 10, 32)
	a.Exec("DELETE FROM narrow WHERE id % 4 <> 0")
	other.Exec("INSERT INTO other SELECT g FROM generate_series(1, 1000) g")
	// speculative insertions, each confirmed (XLOG_HEAP_CONFIRM): inserts
	a.Exec(fmt.Sprintf("INSERT INTO narrow SELECT g, 7 FROM generate_series(%d, %d) g ON CONFLICT DO NOTHING", n+1, n+100))
	a.Exec("SAVEPOINT s")
	a.Exec("UPDATE narrow SET v = -1 WHERE id % 4 = 0")
	a.Exec("ROLLBACK TO s")
	a.Exec("COMMIT")
	for _, l := range p.Query(t, fmt.Sprintf("SELECT ctid, id, v FROM narrow WHERE id > %d ORDER BY id", n)) {
		want = append(want, "insert "+l)
	}
	if len(want) != deleted+100 {
		t.Fatalf("%d rows inserted", len(want)-deleted)
	}
	walDir := filepath.Join(work, "wal")
	if out, err := exec.Command("cp", "-a", filepath.Join(p.Dir, "pg_wal"), walDir).CombinedOutput(); err != nil {
		t.Fatalf("cp pg_wal: %v\n%s", err, out)
	}
	wal, err := archive.Open(walDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backup.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(xid),
		HoldAll: true, MemoryBytes: 4 << 20, ChangeMemoryBytes: 256 << 10, TempDir: work}
	heap := func(gc bool) uint64 {
		if gc {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}

	// all in memory, for the scale
	h0 := heap(true)
	whole, err := rows.Changes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inMemory := int64(heap(true)) - int64(h0)
	if len(whole.Changes) != len(want) {
		t.Fatalf("Changes: %d changes, want %d", len(whole.Changes), len(want))
	}
	whole.Close()
	whole = nil

	h0 = heap(true)
	res, err := rows.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	opened := int64(heap(true)) - int64(h0)
	total, spilled := res.Replay().ChangeBytes()
	if spilled == 0 || spilled < total-256<<10 {
		t.Errorf("%d bytes of changes, %d spilled", total, spilled)
	}
	peak, i := uint64(0), 0
	for c, err := range res.All() {
		if err != nil {
			t.Fatal(err)
		}
		if i%25000 == 12500 {
			peak = max(peak, heap(true)) // what is kept: the garbage is the collector's pace
		}
		row, prefix := c.Old, ""
		if c.Op == rows.Insert {
			row, prefix = c.New, "insert "
		}
		if i >= len(want) || c.Op != rows.Delete && c.Op != rows.Insert || row == nil || c.Err != nil {
			t.Fatalf("change %d: %s %v, want %s", i, c.Op, c.Err, want[min(i, len(want)-1)])
		}
		got := fmt.Sprintf("%s(%d,%d)|%d|%d", prefix, row.Block, row.Offset, int32(binary.LittleEndian.Uint32(row.Values[0])), int32(binary.LittleEndian.Uint32(row.Values[1])))
		if got != want[i] {
			t.Fatalf("change %d: %s, the server deleted %s", i, got, want[i])
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d changes streamed, want %d", i, len(want))
	}
	streamed := int64(peak) - int64(h0)
	t.Logf("%d deleted rows and 100 inserted (confirmed speculative insertions) identical to the server's; %d bytes of changes, %d spilled; live heap: +%d kB with every change in memory (Changes); +%d kB after Open, at most +%d kB sampled while All reads them",
		deleted, total, spilled, inMemory>>10, opened>>10, streamed>>10)
	if inMemory <= 0 || streamed*4 > inMemory {
		t.Errorf("streaming grew the live heap by %d kB, holding every change by %d kB: not bounded", streamed>>10, inMemory>>10)
	}
}
