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
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
)

// server is a running cluster of one major version (a pgtest.Server) and the
// test using it.
type server struct {
	*pgtest.Server
	t     *testing.T
	major int
	root  string // the temporary directory: the cluster, its socket and log, spc/
}

func shq(s string) string { return pgtest.Shq(s) }

// run runs a command line as the server's user.
func (s *server) run(line string) ([]byte, error) { return pgtest.AsPostgres(line).CombinedOutput() }

// startServer initdbs (no sync) and starts a cluster of major version
// major, or skips (pgtest.Need).
func startServer(t *testing.T, major int) *server {
	t.Helper()
	bin, client := pgtest.Need(t, major)
	root := pgtest.WorkDir(t, "wscat-", "WALSCOPE_KEEP")
	p := pgtest.New(t, root, "data", major, bin, client)
	p.InitDB(t, "", "")
	p.Start(t)
	return &server{Server: p, t: t, major: major, root: root}
}

// psqlCmd runs SQL through psql on database postgres with the session's
// time zone UTC (PGTZ) and returns its standard output; the error holds
// its standard error.
func (s *server) psqlCmd(sql string) ([]byte, error) {
	cmd := pgtest.AsPostgres("PGTZ=UTC PGCLIENTENCODING=UTF8 " + s.PsqlLine("postgres") + " -c " + shq(sql))
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
	if _, err := s.psqlCmd(sql); err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, sql, err)
	}
}

// value runs a query of one value.
func (s *server) value(sql string) string {
	s.t.Helper()
	out, err := s.psqlCmd(sql)
	if err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, sql, err)
	}
	return strings.TrimRight(string(out), "\n")
}

// rows runs COPY (query) TO STDOUT and returns its fields, unescaped; a
// NULL is nil.
func (s *server) rows(query string) [][]*string {
	s.t.Helper()
	out, err := s.psqlCmd("COPY (" + query + ") TO STDOUT")
	if err != nil {
		s.t.Fatalf("PostgreSQL %d: %s\n%v", s.major, query, err)
	}
	var rows [][]*string
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		rows = append(rows, pgtest.CopyFields(line))
	}
	return rows
}

// relationFile reads a relation's main fork whole (every 1 GB segment) from
// its path under the data directory.
func (s *server) relationFile(rel string) []byte {
	s.t.Helper()
	var all []byte
	for seg := 0; ; seg++ {
		p := filepath.Join(s.Dir, rel)
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
