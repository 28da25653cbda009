//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/xlog"
)

// TestLsLivePgWalZeroFilledSegment: a real pg_wal at the default 16 MB
// segment size holds the next segment zero-filled (a checkpoint past 75% of
// the current one preallocates it: PreallocXlogFiles, XLogFileInit with
// wal_init_zero), and ls must call it no problem, as the README says. ls
// called it "too-large", "larger than the segment size of 1048576 bytes that
// its long page header gives" (its first page is zeros: no header gives a
// size), exit 1.
func TestLsLivePgWalZeroFilledSegment(t *testing.T) {
	const bin = "/usr/lib/postgresql/15/bin"
	for _, b := range []string{"initdb", "pg_ctl", "psql", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
				t.Fatalf("PostgreSQL 15: %v", err)
			}
			t.Skip("no PostgreSQL 15")
		}
	}
	asServer := func(line string) *exec.Cmd {
		if os.Getuid() == 0 {
			return exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
		}
		return exec.Command("bash", "-c", line)
	}
	root, err := os.MkdirTemp("", "wspgwal-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Fatal("running as root and there is no postgres user to run the server as")
		}
		if out, err := exec.Command("chown", "postgres", root).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	data, sock := filepath.Join(root, "data"), root
	run := func(line string) string {
		t.Helper()
		out, err := asServer(line).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(fmt.Sprintf("%s/initdb -D %s -A trust --no-sync --wal-segsize=16 >/dev/null", bin, data))
	run(fmt.Sprintf("%s/pg_ctl -D %s -o \"-p 5432 -k %s -c listen_addresses='' -c fsync=off\" -l %s/log -w start >/dev/null", bin, data, sock, root))
	t.Cleanup(func() { asServer(fmt.Sprintf("%s/pg_ctl -D %s -m immediate -w stop", bin, data)).Run() })
	psql := func(sql string) string {
		return run(fmt.Sprintf("%s/psql -h %s -p 5432 -d postgres -qAt -c %q", bin, sock, sql))
	}
	psql("create table t(g int)")
	const segSize = 16 << 20
	for i := 0; ; i++ {
		lsn, err := xlog.ParseLSN(psql("insert into t select generate_series(1, 20000); select pg_current_wal_lsn()"))
		if err != nil {
			t.Fatal(err)
		}
		if uint64(lsn)%segSize >= segSize*3/4 {
			break
		}
		if i > 100 {
			t.Fatalf("WAL at %s after %d inserts", lsn, i)
		}
	}
	psql("checkpoint")
	run(fmt.Sprintf("%s/pg_ctl -D %s -m fast -w stop >/dev/null", bin, data))
	pgwal := filepath.Join(data, "pg_wal")
	ents, err := os.ReadDir(pgwal)
	if err != nil {
		t.Fatal(err)
	}
	zeroFilled := ""
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(pgwal, e.Name()))
		if err == nil && bytes.Equal(b, make([]byte, segSize)) {
			zeroFilled = e.Name()
		}
	}
	if zeroFilled == "" {
		t.Fatalf("PostgreSQL preallocated no zero-filled segment in pg_wal (%d files)", len(ents))
	}
	for _, args := range [][]string{{"ls", pgwal}, {"ls", "--quick", pgwal}} {
		stdout, stderr, code := walscope(t, "", args...)
		if code != 0 || !strings.Contains(stdout, zeroFilled) || !strings.Contains(stdout, "\nno problems\n") {
			t.Errorf("%v: exit %d, want 0 with no problems for %s: %s%s", args, code, zeroFilled, stdout, stderr)
		}
	}
}
