package restoretest

// TestBackupTools: `walscope pitr --backup` given a backup in a real
// pgBackRest repository and a real Barman server (tools.sh: one PostgreSQL 15
// server archiving into both, a full pgBackRest backup, a Barman backup with
// backup_method = postgres, rows committed after them, then DROP TABLE
// t_tool), and each backup restored by its own tool (pgbackrest restore
// --type=lsn --target-exclusive, barman recover --target-lsn --exclusive) to
// the LSN pitr printed: every row committed before the drop must be back.
// Skips without pgbackrest or barman in PATH, unless WALSCOPE_REQUIRE_PG=1.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// toolAnswer is the part of pitr's JSON this test checks beyond pitrAnswer.
type toolAnswer struct {
	pitrAnswer
	Reasons   []string `json:"reasons"`
	WALNeeded struct {
		First string `json:"first"`
		Last  string `json:"last"`
	} `json:"wal_needed"`
	Window struct {
		Earliest struct {
			LSN string `json:"lsn"`
		} `json:"earliest"`
	} `json:"window"`
	Backup *struct {
		Path     string  `json:"path"`
		StartLSN string  `json:"start_lsn"`
		StopLSN  *string `json:"stop_lsn"`
		Label    string  `json:"label"`
		Tool     string  `json:"tool"`
		Timeline int     `json:"start_timeline"`
	} `json:"backup"`
}

func toolPitr(t *testing.T, backup, archive string) toolAnswer {
	t.Helper()
	args := []string{"pitr", "--relation", "t_tool", "--event", "drop", "--backup", backup, "--format", "json", archive}
	out, errs, err := walscope(args...)
	if err != nil {
		t.Fatalf("walscope %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errs)
	}
	var a toolAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("walscope %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	targs := append(append([]string{}, args[:len(args)-3]...), "--format", "text", archive)
	txt, _, _ := walscope(targs...)
	t.Logf("walscope %s:\n%s", strings.Join(targs, " "), txt)
	return a
}

// startCount starts the prepared data directory dir (its own port and
// socket, archive_mode off), waits for recovery to end and counts table's
// rows (-1: the table does not exist); it returns the server's "recovery
// stopping" line too.
func startCount(t *testing.T, dir, table string) (int64, string) {
	t.Helper()
	sock := dir + ".sock"
	logf := dir + ".log"
	p := port()
	if err := os.MkdirAll(sock, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n# restoretest\nport = %d\nlisten_addresses = ''\nunix_socket_directories = '%s'\narchive_mode = off\n", p, sock)
	f.Close()
	if os.Getuid() == 0 {
		if out, err := exec.Command("bash", "-c", "touch "+shq(logf)+" && chown -R postgres "+shq(sock)+" "+shq(logf)+" "+shq(dir)).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	pgctl := filepath.Join(pgBin, "pg_ctl")
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err == nil {
			asPostgres(fmt.Sprintf("%s -D %s -m immediate -w -t 60 stop", pgctl, shq(dir))).Run()
		}
	})
	serverLog := func() string { b, _ := os.ReadFile(logf); return tail(string(b), 40) }
	if out, err := asPostgres(fmt.Sprintf("%s -D %s -l %s -w -t 120 start", pgctl, shq(dir), shq(logf))).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl start %s: %v\n%s\nserver log:\n%s", dir, err, out, serverLog())
	}
	psql := func(q string) (string, error) {
		out, err := asPostgres(fmt.Sprintf("%s -h %s -p %d -U postgres -d postgres -X -qAt -v ON_ERROR_STOP=1 -c %s",
			filepath.Join(pgBin, "psql"), shq(sock), p, shq(q))).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := psql("select pg_is_in_recovery()")
		if err == nil && out == "f" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: recovery did not end in 90 s (%q, %v)\nserver log:\n%s", dir, out, err, serverLog())
		}
		if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err != nil {
			t.Fatalf("%s: the server stopped during recovery\nserver log:\n%s", dir, serverLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
	rows := int64(-1)
	if out, err := psql(fmt.Sprintf("select to_regclass('public.%s') is not null", table)); err != nil {
		t.Fatalf("%v: %s", err, out)
	} else if out == "t" {
		out, err := psql("select count(*) from public." + table)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		rows, _ = strconv.ParseInt(out, 10, 64)
	}
	asPostgres(fmt.Sprintf("%s -D %s -m fast -w -t 60 stop", pgctl, shq(dir))).Run()
	stopLine := ""
	b, _ := os.ReadFile(logf)
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "recovery stopping"); i >= 0 {
			stopLine = l[i:]
		}
	}
	return rows, stopLine
}

func TestBackupTools(t *testing.T) {
	setup(t)
	var missing []string
	for _, tool := range []string{"pgbackrest", "barman"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := strings.Join(missing, " and ") + " not in PATH: apt-get install pgbackrest barman"
		if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
			t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", msg)
		}
		t.Skip(msg)
	}
	start := time.Now()
	w := filepath.Join(workRoot, "tools")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("bash", filepath.Join(filepath.Dir(file), "tools.sh"), w)
	cmd.Env = append(os.Environ(), "PGBIN="+pgBin, "PORT="+strconv.Itoa(port()), "BARMAN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		serverLog, _ := os.ReadFile(filepath.Join(w, "server.log"))
		t.Fatalf("tools.sh: %v\n%s\nserver.log (tail):\n%s", err, out, tail(string(serverLog), 40))
	}
	tf, err := readFacts(filepath.Join(w, "facts.env"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools.sh: %.1f s; facts %v", time.Since(start).Seconds(), tf)
	rows, _ := strconv.ParseInt(tf["rows_tool"], 10, 64)
	before, after := parseLSN(tf["lsn_before_tool"]), parseLSN(tf["lsn_after_tool"])
	checkAnswer := func(t *testing.T, a toolAnswer, tool, label, firstSeg string) string {
		t.Helper()
		if a.Reachable == nil || !*a.Reachable {
			t.Errorf("reachable %s, want true (reasons %v)", fmtBool(a.Reachable), a.Reasons)
		}
		if a.Backup == nil || a.Backup.Tool != tool || a.Backup.Label != label {
			t.Errorf("backup %+v, want tool %s label %s", a.Backup, tool, label)
		} else if a.Backup.StopLSN == nil || a.Window.Earliest.LSN != *a.Backup.StopLSN {
			t.Errorf("earliest %s, want the backup's stop LSN %v", a.Window.Earliest.LSN, a.Backup.StopLSN)
		}
		if a.WALNeeded.First != firstSeg {
			t.Errorf("wal_needed.first %s, want the backup's first segment %s", a.WALNeeded.First, firstSeg)
		}
		if a.Event.Kind != "drop" || a.Event.Relation != "public.t_tool" || string(a.Event.Xid) != tf["xid_tool"] {
			t.Errorf("event %+v, want the drop of public.t_tool by xid %s", a.Event, tf["xid_tool"])
		}
		lsn := jsonString(a.Target["recovery_target_lsn"])
		if l := parseLSN(lsn); l <= before || l >= after {
			t.Errorf("recovery_target_lsn %s not inside the drop's transaction (%s .. %s)", lsn, tf["lsn_before_tool"], tf["lsn_after_tool"])
		}
		return lsn
	}

	t.Run("pgbackrest", func(t *testing.T) {
		label := tf["pgbr_label"]
		stanza := filepath.Join(w, "pgbr", "backup", "demo")
		manifest, err := os.ReadFile(filepath.Join(stanza, label, "backup.manifest"))
		if err != nil {
			t.Fatal(err)
		}
		firstSeg := ""
		for _, l := range strings.Split(string(manifest), "\n") {
			if v, ok := strings.CutPrefix(l, "backup-archive-start="); ok {
				firstSeg = strings.Trim(v, `"`)
			}
		}
		archive := filepath.Join(w, "pgbr", "archive", "demo")
		var lsn, tli string
		// the backup, the stanza (its latest backup), the repository (one stanza)
		for _, b := range []string{filepath.Join(stanza, label), stanza, filepath.Join(w, "pgbr")} {
			a := toolPitr(t, b, archive)
			lsn = checkAnswer(t, a, "pgBackRest", label, firstSeg)
			tli = jsonString(a.Target["recovery_target_timeline"])
		}
		if t.Failed() {
			return
		}
		dir := filepath.Join(w, "r-pgbackrest")
		line := fmt.Sprintf("pgbackrest --config=%s --stanza=demo --pg1-path=%s --set=%s --type=lsn --target=%s --target-exclusive --target-timeline=%s --target-action=promote restore",
			shq(filepath.Join(w, "pgbackrest.conf")), shq(dir), label, lsn, tli)
		t.Log(line)
		if out, err := asPostgres(line).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got, stop := startCount(t, dir, "t_tool")
		t.Logf("pgbackrest restore to %s: %d rows of t_tool (want %d); %s", lsn, got, rows, stop)
		if got != rows {
			t.Errorf("restored %d rows of t_tool, want %d (the rows committed before the drop)", got, rows)
		}
		if want := fmt.Sprintf("recovery stopping before WAL location (LSN) %q", lsn); stop != want {
			t.Errorf("the server stopped with %q, want %q", stop, want)
		}
	})

	t.Run("barman", func(t *testing.T) {
		id := tf["barman_id"]
		server := filepath.Join(w, "barman", "pg")
		info, err := readFacts(filepath.Join(server, "base", id, "backup.info"))
		if err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(server, "wals")
		var lsn, tli string
		// the backup, the server (its latest backup)
		for _, b := range []string{filepath.Join(server, "base", id), server} {
			a := toolPitr(t, b, archive)
			lsn = checkAnswer(t, a, "Barman", id, info["begin_wal"])
			tli = jsonString(a.Target["recovery_target_timeline"])
		}
		if t.Failed() {
			return
		}
		dir := filepath.Join(w, "r-barman")
		line := fmt.Sprintf("barman -c %s recover pg %s %s --target-lsn %s --exclusive --target-tli %s --target-action promote",
			shq(filepath.Join(w, "barman.conf")), id, shq(dir), lsn, tli)
		t.Log(line)
		if out, err := asPostgres(line).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got, stop := startCount(t, dir, "t_tool")
		t.Logf("barman recover to %s: %d rows of t_tool (want %d); %s", lsn, got, rows, stop)
		if got != rows {
			t.Errorf("restored %d rows of t_tool, want %d (the rows committed before the drop)", got, rows)
		}
		if want := fmt.Sprintf("recovery stopping before WAL location (LSN) %q", lsn); stop != want {
			t.Errorf("the server stopped with %q, want %q", stop, want)
		}
	})
	t.Logf("TestBackupTools: %.1f s", time.Since(start).Seconds())
}
