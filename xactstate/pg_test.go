package xactstate_test

// Helpers that run a real PostgreSQL 15 for the oracle test: a private
// cluster in a temporary directory, run as the postgres user when the test
// runs as root (as internal/restoretest does), psql one-shot queries and
// long-lived psql sessions for concurrent transactions.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// findPG15 returns the bin directory of PostgreSQL 15 (WALSCOPE_PG15_BIN if
// set, else Debian's path), or "".
func findPG15() string {
	cands := []string{"/usr/lib/postgresql/15/bin"}
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		cands = []string{d}
	}
	for _, d := range cands {
		ok := true
		for _, b := range []string{"postgres", "initdb", "pg_ctl", "pg_basebackup", "psql"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				ok = false
			}
		}
		if !ok {
			continue
		}
		if out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output(); err == nil &&
			strings.Contains(string(out), "PostgreSQL) 15.") {
			return d
		}
	}
	return ""
}

// needPG returns PostgreSQL 15's bin directory, or skips the test (fails it
// with WALSCOPE_REQUIRE_PG=1).
func needPG(t *testing.T) string {
	t.Helper()
	why := ""
	bin := findPG15()
	if bin == "" {
		why = "PostgreSQL 15 binaries not found (WALSCOPE_PG15_BIN or /usr/lib/postgresql/15/bin): apt-get install postgresql-15"
	} else if os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			why = "running as root and there is no postgres user to run the server as"
		}
	}
	if why != "" {
		if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
			t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", why)
		}
		t.Skip(why)
	}
	return bin
}

var (
	portMu   sync.Mutex
	nextPort = 56431
)

func port() int {
	portMu.Lock()
	defer portMu.Unlock()
	p := nextPort
	nextPort++
	return p
}

// asPostgres runs a shell command line as the server's user.
func asPostgres(line string) *exec.Cmd {
	if os.Getuid() == 0 {
		return exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
	}
	return exec.Command("bash", "-c", line)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// chownPG gives paths to the postgres user when running as root.
func chownPG(t *testing.T, paths ...string) {
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

// server is one running cluster.
type server struct {
	bin, dir, sock, log string // bin: the server's initdb, pg_ctl, postgres
	client              string // psql's directory (PostgreSQL 15's, for every server)
	port                int
}

func (s *server) pgctl(t *testing.T, args string) error {
	t.Helper()
	out, err := asPostgres(fmt.Sprintf("%s -D %s -l %s %s", filepath.Join(s.bin, "pg_ctl"), shq(s.dir), shq(s.log), args)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s\nserver log:\n%s", args, err, out, s.logTail())
	}
	return nil
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func (s *server) start(t *testing.T) {
	t.Helper()
	if err := s.pgctl(t, "-w -t 120 start"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop(t, "immediate") })
}

func (s *server) stop(t *testing.T, mode string) {
	if _, err := os.Stat(filepath.Join(s.dir, "postmaster.pid")); err == nil {
		s.pgctl(t, "-m "+mode+" -w -t 60 stop")
	}
}

func (s *server) psqlLine() string {
	return fmt.Sprintf("%s -h %s -p %d -U postgres -d postgres -X -q -A -t -F '|' -v ON_ERROR_STOP=1",
		filepath.Join(s.client, "psql"), shq(s.sock), s.port)
}

// query runs SQL in its own psql and returns its output lines.
func (s *server) query(t *testing.T, sql string) []string {
	t.Helper()
	out, err := asPostgres(s.psqlLine() + " -c " + shq(sql)).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return lines(string(out))
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitFor polls a one-value query until it returns want.
func (s *server) waitFor(t *testing.T, sql, want string) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		out, err := asPostgres(s.psqlLine() + " -c " + shq(sql)).CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never returned %q (last %q, %v)\nserver log:\n%s", sql, want, out, err, s.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// session is a long-lived psql: one connection, one transaction at a time,
// for workloads where several transactions are open together.
type session struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	n    int
}

func (s *server) session(t *testing.T, name string) *session {
	t.Helper()
	cmd := asPostgres("exec stdbuf -oL -eL " + strings.Replace(s.psqlLine(), "-v ON_ERROR_STOP=1", "", 1) + " 2>&1")
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
	ss := &session{t: t, name: name, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return ss
}

// exec runs SQL in the session and returns its output lines; any error
// fails the test.
func (ss *session) exec(sql string) []string {
	ss.t.Helper()
	ss.n++
	marker := fmt.Sprintf("__xactstate_%s_%d__", ss.name, ss.n)
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

// one runs SQL returning one value.
func (ss *session) one(sql string) string {
	ss.t.Helper()
	out := ss.exec(sql)
	if len(out) != 1 {
		ss.t.Fatalf("session %s: %q returned %q, want one line", ss.name, sql, out)
	}
	return out[0]
}
