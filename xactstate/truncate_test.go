package xactstate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// newPrimary makes a cluster that archives its WAL, in a new work
// directory (removed at the end unless WALSCOPE_XACTSTATE_KEEP=1), runs
// beforeStart on its data directory, starts it and creates oracleSchema.
func newPrimary(t *testing.T, cfg oracleConfig, beforeStart func(data string)) (work, archive string, p *pgtest.Server) {
	t.Helper()
	work = pgtest.WorkDir(t, "xactstate-", "WALSCOPE_XACTSTATE_KEEP")
	archive = filepath.Join(work, "archive")
	if err := os.MkdirAll(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, archive)
	p = pgtest.New(t, work, "primary", int(cfg.version), cfg.server, cfg.client)
	p.InitDB(t, "", fmt.Sprintf("wal_level = replica\narchive_mode = on\narchive_command = 'cp %%p %s/%%f'\n"+
		"max_prepared_transactions = 10\ntrack_commit_timestamp = on\nautovacuum = off\nmax_wal_senders = 4", archive))
	if beforeStart != nil {
		beforeStart(p.Dir)
	}
	p.Start(t)
	p.Query(t, oracleSchema(cfg.version))
	return work, archive, p
}

// TestCLOGTruncation: VACUUM FREEZE of every database after the backup
// lets PostgreSQL remove pg_xact's first segment (a CLOG TRUNCATE record):
// the transactions of the segments kept must keep their statuses. The
// cluster starts at xid 0x200000 (pg_resetwal -x), so that the segment
// removed (0000, xids below 0x100000) is not the one in use.
func TestCLOGTruncation(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	cfg := oracleConfig{version: xlog.V15, server: bin, client: client, baseBackup: true, waldump: true}
	work, archive, p := newPrimary(t, cfg, func(data string) {
		if out, err := pgtest.AsPostgres(fmt.Sprintf("%s -x 0x200000 -D %s", filepath.Join(bin, "pg_resetwal"), pgtest.Shq(data))).CombinedOutput(); err != nil {
			t.Fatalf("pg_resetwal: %v\n%s", err, out)
		}
	})
	base := filepath.Join(work, "base")
	w := &workload{t: t, cfg: cfg}
	a, b := p.Session(t, "a"), p.Session(t, "b")
	p.Query(t, "ALTER DATABASE template0 ALLOW_CONNECTIONS true")
	for i := range 3 {
		w.xactWithRow(a, fmt.Sprintf("pre/commit%d", i), "COMMIT")
		w.xactWithRow(a, fmt.Sprintf("pre/abort%d", i), "ROLLBACK")
	}
	b.Exec("BEGIN")
	w.note("pre/open", b.One("INSERT INTO u VALUES (1, 1) RETURNING xmin"))
	w.baseBackup(p, base)
	b.Exec("COMMIT")
	for i := range 3 {
		w.xactWithRow(a, fmt.Sprintf("s1/commit%d", i), "COMMIT")
		w.xactWithRow(a, fmt.Sprintf("s1/abort%d", i), "ROLLBACK")
	}
	// What the primary says before the truncation: afterwards, the
	// servers answer NULL (too old) for these.
	before := statuses(t, p, w.xids)
	if out, err := pgtest.AsPostgres(fmt.Sprintf("%s -a -F -q -h %s -p %d -U postgres", filepath.Join(bin, "vacuumdb"), pgtest.Shq(p.Sock), p.Port)).CombinedOutput(); err != nil {
		t.Fatalf("vacuumdb: %v\n%s", err, out)
	}
	for i := range 3 {
		w.xactWithRow(a, fmt.Sprintf("s2/commit%d", i), "COMMIT")
		w.xactWithRow(a, fmt.Sprintf("s2/abort%d", i), "ROLLBACK")
	}
	b.Exec("BEGIN")
	w.note("s2/open", b.One("INSERT INTO u VALUES (1, 2) RETURNING xmin"))
	w.restorePoint(p, "rpT")
	seg := p.Query(t, "SELECT pg_walfile_name(pg_current_wal_lsn())")[0]
	p.Query(t, "SELECT pg_switch_wal()")
	p.WaitFor(t, fmt.Sprintf("SELECT last_archived_wal >= '%s' FROM pg_stat_archiver", seg), "t")

	out, _ := runCmd(filepath.Join(bin, "pg_waldump"), "-p", archive, "-s", backupStart(t, base).String(), "-r", "CLOG")
	if !strings.Contains(string(out), "desc: TRUNCATE") {
		t.Fatalf("no CLOG TRUNCATE after the backup:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(base, "pg_xact", "0000")); err != nil {
		t.Fatalf("the backup has no pg_xact/0000 for the truncation to remove: %v", err)
	}

	ans := restore(t, cfg, work, base, archive, w.xids, "rpT")
	st := replay(t, base, archive, "rpT", cfg.version)
	oldest, ok := st.OldestClogXID()
	if !ok {
		t.Fatal("no OldestClogXID after a checkpoint and a CLOG TRUNCATE")
	}
	// agrees compares one answer: "null" (too old) must be an xid before
	// OldestClogXID, whose Status is then what the primary said before the
	// truncation; other answers as in the oracle.
	agree, tooOld := 0, 0
	agrees := func(x recorded, answer string, got xactstate.Status, same func(string, xactstate.Status) bool) bool {
		if answer != "null" {
			return same(answer, got) && !xidBefore(x.xid, uint32(oldest))
		}
		tooOld++
		return xidBefore(x.xid, uint32(oldest)) && same(before[x.xid], got)
	}
	for _, x := range w.xids {
		if x.xid < 0x200000 {
			t.Fatalf("%s: xid %d below pg_resetwal's 0x200000", x.name, x.xid)
		}
		if got := st.Status(xlog.XID(x.xid)); agrees(x, ans.paused[x.xid], got, standbyAgrees) {
			agree++
		} else {
			t.Errorf("%s (xid %d): paused standby says %q, primary before the truncation %q; Status %v, OldestClogXID %d", x.name, x.xid, ans.paused[x.xid], before[x.xid], got, oldest)
		}
	}
	st.Finish()
	for _, x := range w.xids {
		if got := st.Status(xlog.XID(x.xid)); agrees(x, ans.promoted[x.xid], got, promotedAgrees) {
			agree++
		} else {
			t.Errorf("%s (xid %d): promoted server says %q, primary before the truncation %q; Status after Finish %v, OldestClogXID %d", x.name, x.xid, ans.promoted[x.xid], before[x.xid], got, oldest)
		}
	}
	if tooOld == 0 {
		t.Error("no xid was too old: the truncation moved nothing")
	}
	// The bootstrap-era xids of the segment removed: recovery removed their
	// status; reading it gives zeros (in progress, so aborted after Finish).
	if got := st.Status(600); got != xactstate.Aborted {
		t.Errorf("xid 600, in the removed segment: %v", got)
	}
	t.Logf("after a CLOG TRUNCATE (OldestClogXID %d): %d/%d statuses agree (paused and ended; %d answers NULL as too old, checked against the primary before the truncation)", oldest, agree, 2*len(w.xids), tooOld)
}

func xidBefore(a, b uint32) bool { return int32(a-b) < 0 }
