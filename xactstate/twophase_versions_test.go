package xactstate_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// twoPhaseMajors are the servers TestTwoPhaseVersions proves against: one of
// each 2PC header layout (10: magic 0x57F94533 and 48 bytes; 11-14: 64
// bytes; 15-17: 72 bytes; 18: file names of 16 hex digits) by default, every
// major from 10 to 18 with WALSCOPE_XACTSTATE_VERSIONS=all.
func twoPhaseMajors() []int {
	if os.Getenv("WALSCOPE_XACTSTATE_VERSIONS") == "all" {
		return []int{10, 11, 12, 13, 14, 15, 16, 17, 18}
	}
	return []int{10, 11, 15, 18}
}

// TestTwoPhaseVersions reads the 2PC state of every version both ways a
// recovery meets it: the pg_twophase files a checkpoint wrote
// (restoreTwoPhaseData) and the PREPARE records after it (PrepareRedoAdd).
// The server is the oracle: pg_prepared_xacts names the prepared
// transactions, and the xmin of the rows each inserted in its savepoints
// names its subtransactions.
//
// Before a checkpoint: "file" is prepared and stays so, "done" is prepared
// and then committed after the checkpoint (COMMIT PREPARED, read from the
// WAL). After it: "wal" is prepared (its PREPARE record alone). A copy of
// pg_twophase is taken right after the checkpoint, and the WAL from the
// checkpoint record on is added to the state built from it.
func TestTwoPhaseVersions(t *testing.T) {
	for _, major := range twoPhaseMajors() {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			bin, client := pgtest.Need(t, major)
			testTwoPhase(t, major, bin, client)
		})
	}
}

// preparedOnServer is what the server says of one prepared transaction.
type preparedOnServer struct {
	gid  string
	top  xlog.XID
	subs []xlog.XID
}

func testTwoPhase(t *testing.T, major int, bin, client string) {
	work := pgtest.WorkDir(t, "xactstate-2pc-", "WALSCOPE_KEEP")
	p := pgtest.New(t, work, "p", major, bin, client)
	p.InitDB(t, "", "max_prepared_transactions = 5\nwal_level = replica\nautovacuum = off\nmax_wal_size = 1GB")
	p.Start(t)
	p.Query(t, "CREATE TABLE t (gid text, n int)")

	// prepare runs one transaction of three inserts, two of them in
	// savepoints (each a subtransaction of its own), and prepares it.
	prepare := func(gid string) preparedOnServer {
		s := p.Session(t, gid)
		s.Exec("BEGIN")
		s.Exec(fmt.Sprintf("INSERT INTO t VALUES ('%s', 0)", gid))
		s.Exec("SAVEPOINT a")
		s.Exec(fmt.Sprintf("INSERT INTO t VALUES ('%s', 1)", gid))
		s.Exec("SAVEPOINT b")
		s.Exec(fmt.Sprintf("INSERT INTO t VALUES ('%s', 2)", gid))
		var x preparedOnServer
		x.gid = gid
		for i, l := range s.Exec(fmt.Sprintf("SELECT xmin FROM t WHERE gid = '%s' ORDER BY n", gid)) {
			v, err := strconv.ParseUint(l, 10, 32)
			if err != nil {
				t.Fatalf("xmin %q: %v", l, err)
			}
			if i == 0 {
				x.top = xlog.XID(v)
			} else {
				x.subs = append(x.subs, xlog.XID(v))
			}
		}
		if len(x.subs) != 2 || x.subs[0] == x.top || x.subs[1] == x.subs[0] {
			t.Fatalf("%s: top %d, subtransactions %v: want two of their own", gid, x.top, x.subs)
		}
		s.Exec(fmt.Sprintf("PREPARE TRANSACTION '%s'", gid))
		return x
	}
	file, done := prepare("file"), prepare("done")
	p.Query(t, "CHECKPOINT")
	redo := p.Query(t, "SELECT checkpoint_lsn FROM pg_control_checkpoint()")[0]
	twophase := filepath.Join(work, "twophase-copy")
	if out, err := runCmd("cp", "-a", filepath.Join(p.Dir, "pg_twophase"), twophase); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	wal := prepare("wal")
	p.Query(t, "COMMIT PREPARED 'done'")
	var onServer []xlog.XID
	for _, l := range p.Query(t, "SELECT transaction FROM pg_prepared_xacts ORDER BY transaction::text::bigint") {
		v, err := strconv.ParseUint(l, 10, 32)
		if err != nil {
			t.Fatalf("pg_prepared_xacts: %q: %v", l, err)
		}
		onServer = append(onServer, xlog.XID(v))
	}
	if !slices.Equal(onServer, []xlog.XID{file.top, wal.top}) {
		t.Fatalf("pg_prepared_xacts: %v, want %d and %d", onServer, file.top, wal.top)
	}
	// Stopped without a checkpoint, which could remove the segment the
	// first checkpoint is in.
	if err := p.Stop("immediate"); err != nil {
		t.Fatal(err)
	}
	v := xlog.Version(major)

	// The files alone: "file" and "done", as the server listed them then.
	names, _ := os.ReadDir(twophase)
	if len(names) != 2 {
		t.Fatalf("pg_twophase after the checkpoint holds %d files, want 2", len(names))
	}
	st, err := xactstate.New(xactstate.FS(os.DirFS(work)), v, 8192)
	if err != nil { // no pg_twophase under work itself: an empty state
		t.Fatal(err)
	}
	if got := st.PreparedXIDs(); len(got) != 0 {
		t.Fatalf("prepared with no pg_twophase: %v", got)
	}
	if err := os.Rename(twophase, filepath.Join(work, "pg_twophase")); err != nil {
		t.Fatal(err)
	}
	st, err = xactstate.New(xactstate.FS(os.DirFS(work)), v, 8192)
	if err != nil {
		t.Fatalf("the pg_twophase files of PostgreSQL %d: %v", major, err)
	}
	compared := 0
	check := func(when string, x preparedOnServer, want xactstate.Status) {
		t.Helper()
		for _, xid := range append([]xlog.XID{x.top}, x.subs...) {
			compared++
			if got := st.Status(xid); got != want {
				t.Errorf("%s: %s's xid %d: %v, want %v", when, x.gid, xid, got, want)
			}
		}
		if want != xactstate.Prepared {
			return
		}
		for _, sub := range x.subs {
			if got := st.Parent(sub); got != x.top {
				t.Errorf("%s: %s's subtransaction %d: parent %d, want %d", when, x.gid, sub, got, x.top)
			}
		}
	}
	if got := st.PreparedXIDs(); !slices.Equal(got, []xlog.XID{file.top, done.top}) {
		t.Errorf("prepared in the files: %v, want %d and %d", got, file.top, done.top)
	}
	check("files", file, xactstate.Prepared)
	check("files", done, xactstate.Prepared)

	// Then the WAL from the checkpoint on: "wal" prepared, "done" committed.
	start, err := xlog.ParseLSN(redo)
	if err != nil {
		t.Fatal(err)
	}
	src, err := xlog.OpenDir(filepath.Join(p.Dir, "pg_wal"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := xlog.NewReader(src, xlog.Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if rd.Version() != v {
		t.Fatalf("the WAL is of %v, the server %d", rd.Version(), major)
	}
	dec := decode.NewDecoder(8192)
	records := 0
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		st.Add(d)
		records++
	}
	if err := st.Err(); err != nil {
		t.Fatalf("the WAL of PostgreSQL %d: %v", major, err)
	}
	if got := st.PreparedXIDs(); !slices.Equal(got, onServer) {
		t.Errorf("prepared after the WAL: %v, pg_prepared_xacts: %v", got, onServer)
	}
	check("WAL", file, xactstate.Prepared)
	check("WAL", wal, xactstate.Prepared)
	check("WAL", done, xactstate.Committed)
	t.Logf("PostgreSQL %d: 2 pg_twophase files and %d records: %d xids of 3 prepared transactions as the server says", major, records, compared)
}
