// Package restoretest proves `walscope pitr` right with a real PostgreSQL 15:
// scenario.sh writes WAL (a base backup, work after it, a timeline switch,
// then a DROP TABLE, a TRUNCATE and a DELETE of every row in a subtransaction
// while another session commits around them), and for each incident and each
// target kind the test asks `walscope pitr` for the recovery settings, restores
// the base backup with them (restore_command from the archive, recovery.signal,
// recovery_target_action = 'promote') and counts the table's rows: every row
// committed before the incident must be back, and the incident not applied.
//
// The tests skip when PostgreSQL 15's binaries are absent, unless
// WALSCOPE_REQUIRE_PG=1 (CI sets it), which makes that a failure. Run as root,
// the servers run as the postgres user (su), as in fixtures/generate.sh.
// WALSCOPE_PG15_BIN names the bin directory to use; WALSCOPE_RESTORETEST_KEEP=1
// keeps the work directory and prints its path.
package restoretest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	workRoot string // removed by TestMain unless WALSCOPE_RESTORETEST_KEEP=1

	setupOnce   sync.Once
	setupSkip   string // why the tests skip (or fail with WALSCOPE_REQUIRE_PG=1)
	setupErr    error
	pgBin       string
	walscopeBin string
	work        string            // the scenario's directory: archive/, base/, facts.env
	facts       map[string]string // facts.env
	nextPort    = 55432
	portMu      sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workRoot != "" {
		if os.Getenv("WALSCOPE_RESTORETEST_KEEP") == "1" {
			fmt.Fprintln(os.Stderr, "restoretest: kept", workRoot)
		} else {
			os.RemoveAll(workRoot)
		}
	}
	os.Exit(code)
}

// findPG15 returns the bin directory of PostgreSQL 15 (WALSCOPE_PG15_BIN if
// set, else Debian's path, then pg_config's), or "".
func findPG15() string {
	cands := []string{"/usr/lib/postgresql/15/bin"}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		cands = append(cands, strings.TrimSpace(string(out)))
	}
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		cands = []string{d}
	}
	for _, d := range cands {
		for _, b := range []string{"postgres", "initdb", "pg_ctl", "pg_basebackup", "psql"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				goto next
			}
		}
		if out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output(); err == nil &&
			strings.Contains(string(out), "PostgreSQL) 15.") {
			return d
		}
	next:
	}
	return ""
}

// setup runs once per test binary: finds PostgreSQL 15, builds walscope,
// runs scenario.sh. Every test calls it first.
func setup(t *testing.T) {
	t.Helper()
	setupOnce.Do(func() {
		if pgBin = findPG15(); pgBin == "" {
			setupSkip = "PostgreSQL 15 binaries not found (WALSCOPE_PG15_BIN, /usr/lib/postgresql/15/bin or pg_config --bindir): apt-get install postgresql-15"
			return
		}
		if os.Getuid() == 0 {
			if _, err := user.Lookup("postgres"); err != nil {
				setupSkip = "running as root and there is no postgres user to run the server as"
				return
			}
		}
		var err error
		if workRoot, err = os.MkdirTemp("", "wsrt-"); err != nil {
			setupErr = err
			return
		}
		// the server (postgres user) must reach the directories under it
		if err = os.Chmod(workRoot, 0o755); err != nil {
			setupErr = err
			return
		}
		walscopeBin = filepath.Join(workRoot, "walscope")
		_, file, _, _ := runtime.Caller(0)
		here := filepath.Dir(file)
		build := exec.Command("go", "build", "-o", walscopeBin, "./cmd/walscope")
		build.Dir = filepath.Join(here, "..", "..")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			setupErr = fmt.Errorf("building walscope: %v\n%s", err, out)
			return
		}
		work = filepath.Join(workRoot, "s")
		if err = os.Mkdir(work, 0o755); err != nil {
			setupErr = err
			return
		}
		start := time.Now()
		cmd := exec.Command("bash", filepath.Join(here, "scenario.sh"), work)
		cmd.Env = append(os.Environ(), "PGBIN="+pgBin, "PORT=55431")
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			serverLog, _ := os.ReadFile(filepath.Join(work, "server.log"))
			setupErr = fmt.Errorf("scenario.sh: %v\n%s\nserver.log (tail):\n%s", err, log.String(), tail(string(serverLog), 40))
			return
		}
		if facts, err = readFacts(filepath.Join(work, "facts.env")); err != nil {
			setupErr = err
			return
		}
		facts["scenario_seconds"] = fmt.Sprintf("%.1f", time.Since(start).Seconds())
	})
	if setupSkip != "" {
		if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
			t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", setupSkip)
		}
		t.Skip(setupSkip)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func readFacts(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func factInt(t *testing.T, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(facts[key], 10, 64)
	if err != nil {
		t.Fatalf("facts.env %s=%q: %v", key, facts[key], err)
	}
	return v
}

// ---------------------------------------------------------------- walscope pitr

// pitrAnswer is `walscope pitr --format json`'s output (the fields checked).
type pitrAnswer struct {
	Event struct {
		Kind        string          `json:"kind"`
		Relation    string          `json:"relation"`
		Relfilenode json.RawMessage `json:"relfilenode"`
		Xid         json.RawMessage `json:"xid"`
		LSN         string          `json:"lsn"`
		CommitLSN   string          `json:"commit_lsn"`
		CommitTime  string          `json:"commit_time"`
	} `json:"event"`
	Target    map[string]json.RawMessage `json:"target"`
	Reachable *bool                      `json:"reachable"` // null without --backup
	Missing   json.RawMessage            `json:"missing"`
	WALNeeded json.RawMessage            `json:"wal_needed"`
	Window    json.RawMessage            `json:"window"`
}

// walscope runs the built binary; it returns stdout, stderr and the error.
func walscope(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(walscopeBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "TZ=UTC")
	err := cmd.Run()
	return out.String(), errb.String(), err
}

var (
	pitrOnce    sync.Once
	pitrPresent bool
)

// usePitr says whether `walscope pitr` exists. Without it the tests fail,
// unless WALSCOPE_RESTORETEST_STANDIN=1 (the harness's own development aid):
// then the settings come from a stand-in computed from `walscope events`.
func usePitr(t *testing.T) bool {
	t.Helper()
	pitrOnce.Do(func() {
		_, _, err := walscope("pitr", "--help")
		pitrPresent = err == nil
	})
	if pitrPresent {
		return true
	}
	if os.Getenv("WALSCOPE_RESTORETEST_STANDIN") == "1" {
		t.Log("walscope pitr is missing: WALSCOPE_RESTORETEST_STANDIN=1, using the stand-in from walscope events")
		return false
	}
	t.Fatal("walscope pitr is missing (walscope pitr --help fails); WALSCOPE_RESTORETEST_STANDIN=1 runs the harness on a stand-in")
	return false
}

// pitr runs `walscope pitr ARGS --format json ARCHIVE` and, when text is set,
// the same with --format text, returning the answer and the text output.
func pitr(t *testing.T, archive string, text bool, args ...string) (pitrAnswer, string) {
	t.Helper()
	var a pitrAnswer
	if !usePitr(t) {
		return standIn(t, archive, args...)
	}
	jargs := append(append([]string{"pitr"}, args...), "--format", "json", archive)
	out, errs, err := walscope(jargs...)
	if err != nil && !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("walscope %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(jargs, " "), err, out, errs)
	}
	if jerr := json.Unmarshal([]byte(out), &a); jerr != nil {
		t.Fatalf("walscope %s: output is not the JSON of the contract: %v\n%s\nstderr:\n%s", strings.Join(jargs, " "), jerr, out, errs)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("walscope %s (exit %v):\n%s", strings.Join(jargs, " "), err, out)
		}
	})
	var txt string
	if text {
		targs := append(append([]string{"pitr"}, args...), "--format", "text", archive)
		out, errs, err := walscope(targs...)
		if err != nil {
			t.Fatalf("walscope %s: %v\n%s\n%s", strings.Join(targs, " "), err, out, errs)
		}
		t.Logf("walscope %s:\n%s", strings.Join(targs, " "), out)
		txt = out
	}
	return a, txt
}

// standIn computes what pitr should answer from `walscope events`: the last
// committed event of the kind on the relation, a target just before its
// commit. Only for developing the harness while pitr does not exist.
func standIn(t *testing.T, archive string, args ...string) (pitrAnswer, string) {
	t.Helper()
	var rel, kind, target string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--relation":
			rel = args[i+1]
		case "--event":
			kind = args[i+1]
		case "--target":
			target = args[i+1]
		}
	}
	out, errs, err := walscope("events", "--kind", kind, "--relation", rel, "--format", "json", archive)
	if err != nil {
		t.Fatalf("walscope events: %v\n%s", err, errs)
	}
	var evs []struct {
		Kind, Relation, RelationName, Outcome, FirstLSN, LSN, Time string
		Xid                                                        int64
		Timeline                                                   int
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		s := func(k string) string { v, _ := r[k].(string); return v }
		n := func(k string) float64 { v, _ := r[k].(float64); return v }
		evs = append(evs, struct {
			Kind, Relation, RelationName, Outcome, FirstLSN, LSN, Time string
			Xid                                                        int64
			Timeline                                                   int
		}{s("kind"), s("relation"), s("relation_name"), s("outcome"), s("first_lsn"), s("lsn"), s("time"), int64(n("xid")), int(n("timeline"))})
	}
	var a pitrAnswer
	found := false
	for _, e := range evs {
		if e.Outcome == "commit" && e.Kind == kind {
			a.Event.Kind, a.Event.Relation, a.Event.LSN, a.Event.CommitLSN, a.Event.CommitTime = e.Kind, e.RelationName, e.FirstLSN, e.LSN, e.Time
			a.Event.Xid = json.RawMessage(strconv.FormatInt(e.Xid, 10))
			a.Target = map[string]json.RawMessage{
				"recovery_target_inclusive": json.RawMessage("false"),
				"recovery_target_timeline":  json.RawMessage(strconv.Quote(strconv.Itoa(e.Timeline))),
			}
			switch target {
			case "lsn":
				a.Target["recovery_target_lsn"] = json.RawMessage(strconv.Quote(e.LSN))
			case "xid":
				a.Target["recovery_target_xid"] = json.RawMessage(strconv.Quote(strconv.FormatInt(e.Xid, 10)))
			case "time":
				// PostgreSQL reads recovery_target_time before time zone
				// abbreviations are loaded: "Z" is refused, "+00" is not
				tm, err := time.Parse(time.RFC3339Nano, e.Time)
				if err != nil {
					t.Fatal(err)
				}
				a.Target["recovery_target_time"] = json.RawMessage(strconv.Quote(tm.Format("2006-01-02 15:04:05.999999-07")))
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("stand-in: no committed %s event on %s:\n%s", kind, rel, out)
	}
	yes := true
	a.Reachable = &yes
	var txt strings.Builder
	keys := make([]string, 0, len(a.Target))
	for k := range a.Target {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&txt, "%s = '%s'\n", k, strings.Trim(string(a.Target[k]), `"`))
	}
	return a, txt.String()
}

// confLine is one `name = 'value'` line of pitr's text output.
var confLine = regexp.MustCompile(`^\s*(recovery_target\w*)\s*=\s*(?:'((?:[^']|'')*)'|([^\s#']+))\s*(?:#.*)?$`)

// targetSettings parses the postgresql.conf lines pitr printed.
func targetSettings(t *testing.T, txt string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(txt, "\n") {
		if g := confLine.FindStringSubmatch(l); g != nil {
			v := g[3]
			if g[3] == "" {
				v = strings.ReplaceAll(g[2], "''", "'")
			}
			m[g[1]] = v
		}
	}
	return m
}

// jsonString gives a JSON value as the text postgresql.conf would hold
// ("" for null or absent).
func jsonString(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r) // a number or a boolean
}

// ---------------------------------------------------------------- a restore

func port() int {
	portMu.Lock()
	defer portMu.Unlock()
	p := nextPort
	nextPort++
	return p
}

// asPostgres runs a command line as the server's user.
func asPostgres(line string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
	}
	return exec.Command("bash", "-c", line)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// restored is what a restore found.
type restored struct {
	exists   bool
	rows     int64
	timeline string
	stopLine string // the server's "recovery stopping before ..." line
	seconds  float64
}

// restore copies the base backup to a fresh data directory, writes the
// restore settings (restore_command from archive, the target settings given,
// recovery_target_action = 'promote'), touches recovery.signal, starts the
// server, waits for recovery to end and counts the table's rows. An error
// says the server did not come out of recovery (with its log).
func restore(t *testing.T, name, archive string, settings map[string]string, table string) (restored, error) {
	t.Helper()
	start := time.Now()
	dir := filepath.Join(workRoot, "r-"+name)
	sock := filepath.Join(workRoot, "k-"+name)
	logf := dir + ".log"
	for _, d := range []string{dir, sock} {
		os.RemoveAll(d)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(work, "base"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the base backup: %v\n%s", err, out)
	}
	if err := os.Mkdir(sock, 0o755); err != nil {
		t.Fatal(err)
	}
	p := port()
	var conf strings.Builder
	fmt.Fprintf(&conf, "\n# restoretest\nport = %d\nlisten_addresses = ''\nunix_socket_directories = '%s'\n", p, sock)
	conf.WriteString("archive_mode = off\n") // the restored server must not write into the scenario's archive
	fmt.Fprintf(&conf, "restore_command = 'cp %s/%%f %%p'\n", archive)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&conf, "%s = '%s'\n", k, strings.ReplaceAll(settings[k], "'", "''"))
	}
	conf.WriteString("recovery_target_action = 'promote'\n")
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf.String())
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "recovery.signal"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		for _, d := range []string{dir, sock} {
			if out, err := exec.Command("chown", "-R", "postgres", d).CombinedOutput(); err != nil {
				t.Fatalf("chown: %v\n%s", err, out)
			}
		}
		// the log file, in workRoot, is written by pg_ctl as postgres
		if out, err := exec.Command("bash", "-c", "touch "+shq(logf)+" && chown postgres "+shq(logf)).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	pgctl := filepath.Join(pgBin, "pg_ctl")
	stop := func(mode string) {
		if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err == nil {
			asPostgres(fmt.Sprintf("%s -D %s -m %s -w -t 60 stop", pgctl, shq(dir), mode)).Run()
		}
	}
	t.Cleanup(func() { stop("immediate") })
	serverLog := func() string { b, _ := os.ReadFile(logf); return tail(string(b), 40) }
	t.Logf("restore %s: settings appended to postgresql.conf:%s", name, conf.String())
	if out, err := asPostgres(fmt.Sprintf("%s -D %s -l %s -w -t 120 start", pgctl, shq(dir), shq(logf))).CombinedOutput(); err != nil {
		return restored{}, fmt.Errorf("restore %s: pg_ctl start: %v\n%s\nserver log:\n%s", name, err, out, serverLog())
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
			return restored{}, fmt.Errorf("restore %s: recovery did not end in 90 s (last: %q, %v)\nserver log:\n%s", name, out, err, serverLog())
		}
		if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err != nil {
			return restored{}, fmt.Errorf("restore %s: the server stopped during recovery\nserver log:\n%s", name, serverLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var r restored
	out, err := psql(fmt.Sprintf("select to_regclass('public.%s') is not null", table))
	if err != nil {
		t.Fatalf("restore %s: %v: %s", name, err, out)
	}
	r.exists = out == "t"
	if r.exists {
		out, err = psql("select count(*) from public." + table)
		if err != nil {
			t.Fatalf("restore %s: counting %s: %v: %s", name, table, err, out)
		}
		r.rows, _ = strconv.ParseInt(out, 10, 64)
	}
	r.timeline, _ = psql("select timeline_id from pg_control_checkpoint()")
	stop("fast")
	b, _ := os.ReadFile(logf)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "recovery stopping") {
			r.stopLine = l[strings.Index(l, "recovery stopping"):]
		}
	}
	r.seconds = time.Since(start).Seconds()
	if os.Getenv("WALSCOPE_RESTORETEST_KEEP") != "1" {
		os.RemoveAll(dir)
		os.RemoveAll(sock)
	}
	return r, nil
}

// ---------------------------------------------------------------- the tests

type incident struct {
	name, table, event string
}

var incidents = []incident{
	{"drop", "t_drop", "drop"},
	{"truncate", "t_trunc", "truncate"},
	{"delete", "t_del", "delete"},
}

// TestRestore: for each incident and each target kind, pitr's settings
// restore every row committed before the incident, without the incident.
func TestRestore(t *testing.T) {
	setup(t)
	start := time.Now()
	archive := filepath.Join(work, "archive")
	t.Logf("scenario: %s s; timeline of the incidents %s; %s archive files; base backup %s", facts["scenario_seconds"], facts["timeline"], facts["segments"], filepath.Join(work, "base"))
	type result struct {
		incident, target string
		restored, expect int64
		ok, ran          bool
	}
	var results []result
	for _, inc := range incidents {
		for _, target := range []string{"lsn", "xid", "time"} {
			inc, target := inc, target
			name := inc.name + "-" + target
			expect := factInt(t, "rows_"+inc.name)
			res := result{incident: inc.name, target: target, expect: expect, restored: -1}
			t.Run(name, func(t *testing.T) {
				res.ran = true
				a, txt := pitr(t, archive, true, "--relation", inc.table, "--event", inc.event, "--target", target)
				if a.Reachable != nil && !*a.Reachable {
					t.Errorf("pitr says unreachable (missing %s) with the whole archive", a.Missing)
				}
				checkEvent(t, a, inc)
				settings := targetSettings(t, txt)
				checkSettings(t, a, settings, target)
				r, err := restore(t, name, archive, settings, inc.table)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(r.stopLine, "recovery stopping before") {
					t.Errorf("the server log has no \"recovery stopping before\" line: the target was not what stopped recovery")
				}
				res.restored = r.rows
				if !r.exists {
					res.restored = -1
				}
				t.Logf("%-8s %-4s rows_restored=%d rows_expected=%d exists=%v (%.1f s; %s; promoted to timeline %s)",
					inc.name, target, r.rows, expect, r.exists, r.seconds, r.stopLine, r.timeline)
				if !r.exists {
					t.Errorf("table %s does not exist after the restore: the %s was applied", inc.table, inc.name)
				} else if r.rows != expect {
					t.Errorf("table %s has %d rows after the restore, want %d (the rows committed before the %s)", inc.table, r.rows, expect, inc.name)
				}
				res.ok = !t.Failed()
			})
			if res.ran {
				results = append(results, res)
			}
		}
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "%-8s %-6s %13s %13s %s\n", "incident", "target", "rows_restored", "rows_expected", "result")
	for _, r := range results {
		ok := "FAIL"
		if r.ok {
			ok = "ok"
		}
		fmt.Fprintf(&tab, "%-8s %-6s %13d %13d %s\n", r.incident, r.target, r.restored, r.expect, ok)
	}
	t.Logf("results (rows_restored -1: table absent or not restored), %.1f s:\n%s", time.Since(start).Seconds(), tab.String())
}

// checkEvent compares the event pitr found with what the server said.
func checkEvent(t *testing.T, a pitrAnswer, inc incident) {
	t.Helper()
	if a.Event.Kind != inc.event {
		t.Errorf("event kind %q, want %q", a.Event.Kind, inc.event)
	}
	if !strings.HasSuffix(a.Event.Relation, inc.table) {
		t.Errorf("event relation %q, want %s", a.Event.Relation, inc.table)
	}
	if xid := jsonString(a.Event.Xid); xid != facts["xid_"+inc.name] {
		t.Errorf("event xid %s, want %s (the server's txid of the incident)", xid, facts["xid_"+inc.name])
	}
	before, after := parseLSN(facts["lsn_before_"+inc.name]), parseLSN(facts["lsn_after_"+inc.name])
	if c := parseLSN(a.Event.CommitLSN); c <= before || c >= after {
		t.Errorf("event commit_lsn %s outside the incident's transaction (%s, %s)", a.Event.CommitLSN, facts["lsn_before_"+inc.name], facts["lsn_after_"+inc.name])
	}
	want, err1 := parsePGTime(facts["commit_time_"+inc.name])
	got, err2 := parsePGTime(a.Event.CommitTime)
	if err1 != nil || err2 != nil || !got.Equal(want) {
		t.Errorf("event commit_time %q, want %q (pg_xact_commit_timestamp)", a.Event.CommitTime, facts["commit_time_"+inc.name])
	}
}

// checkSettings checks that the text lines and the JSON target agree and that
// the target is of the kind asked for, not inclusive.
func checkSettings(t *testing.T, a pitrAnswer, settings map[string]string, target string) {
	t.Helper()
	key := "recovery_target_" + target
	if settings[key] == "" {
		t.Fatalf("the text output has no %s line: %v", key, settings)
	}
	for k, v := range settings {
		if j := jsonString(a.Target[k]); j != v {
			t.Errorf("%s: text %q, json %q", k, v, j)
		}
	}
	for _, other := range []string{"lsn", "xid", "time", "name"} {
		if k := "recovery_target_" + other; other != target && settings[k] != "" {
			t.Errorf("%s set beside %s: PostgreSQL refuses more than one target", k, key)
		}
	}
	if settings["recovery_target_inclusive"] != "false" && settings["recovery_target_inclusive"] != "off" {
		t.Errorf("recovery_target_inclusive = %q, want false", settings["recovery_target_inclusive"])
	}
	if settings["recovery_target_timeline"] != facts["timeline"] {
		t.Errorf("recovery_target_timeline = %q, want %s (the incidents' timeline)", settings["recovery_target_timeline"], facts["timeline"])
	}
}

// parsePGTime reads PostgreSQL's timestamptz output (or RFC 3339).
func parsePGTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", time.RFC3339Nano} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", s)
}

func parseLSN(s string) uint64 {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0
	}
	return h<<32 | l
}

// TestUnreachable: with --backup, the whole archive is reachable; without one
// segment it needs, the answer is unreachable and names the segment.
func TestUnreachable(t *testing.T) {
	setup(t)
	if !usePitr(t) {
		t.Skip("the stand-in does not compute reachability")
	}
	archive := filepath.Join(work, "archive")
	base := filepath.Join(work, "base")
	args := []string{"--relation", "t_del", "--event", "delete", "--target", "lsn", "--backup", base}

	a, _ := pitr(t, archive, false, args...)
	if a.Reachable == nil || !*a.Reachable || jsonLen(a.Missing) != 0 {
		t.Errorf("whole archive with --backup: reachable %v, missing %s; want reachable, nothing missing", a.Reachable, a.Missing)
	}

	// a segment the restore needs: the first of timeline 1 after the backup's
	// start segment (the rows committed after the backup are in it)
	label, err := os.ReadFile(filepath.Join(base, "backup_label"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`START WAL LOCATION: \S+ \(file ([0-9A-F]{24})\)`).FindSubmatch(label)
	if m == nil {
		t.Fatalf("backup_label without START WAL LOCATION:\n%s", label)
	}
	startSeg := string(m[1])
	removed := startSeg[:16] + fmt.Sprintf("%08X", mustHex(t, startSeg[16:])+1)
	if _, err := os.Stat(filepath.Join(archive, removed)); err != nil {
		t.Fatalf("segment %s (after the backup's start %s) not in the archive: %v", removed, startSeg, err)
	}
	holed := filepath.Join(workRoot, "archive-without-"+removed)
	os.RemoveAll(holed)
	if out, err := exec.Command("cp", "-a", archive, holed).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(holed, removed)); err != nil {
		t.Fatal(err)
	}
	a, _ = pitr(t, holed, false, args...)
	var missing bytes.Buffer
	json.Compact(&missing, a.Missing)
	t.Logf("segment %s removed: reachable=%s missing=%s", removed, fmtBool(a.Reachable), missing.String())
	if a.Reachable == nil || *a.Reachable {
		t.Errorf("segment %s removed from the archive: pitr still says reachable", removed)
	}
	if !strings.Contains(string(a.Missing), removed) {
		t.Errorf("missing %s does not name the removed segment %s", a.Missing, removed)
	}

	// and PostgreSQL agrees: the restore from that archive never reaches the target
	_, txt := pitr(t, archive, true, args...)
	settings := targetSettings(t, txt)
	r, err := restore(t, "holed", holed, settings, "t_del")
	if err == nil {
		t.Errorf("restore without %s ended recovery (%d rows of t_del, %s): pitr's unreachable is not what PostgreSQL does", removed, r.rows, r.stopLine)
	} else {
		msg := err.Error()
		if i := strings.Index(msg, "FATAL:"); i >= 0 {
			msg = strings.SplitN(msg[i:], "\n", 2)[0]
		}
		t.Logf("restore without %s fails as pitr said: %s", removed, msg)
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return strconv.FormatBool(*b)
}

func jsonLen(r json.RawMessage) int {
	var v []json.RawMessage
	if json.Unmarshal(r, &v) != nil {
		return 0
	}
	return len(v)
}

func mustHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
