package backup

// The real tools as the oracle: testdata/scenario.sh makes one PostgreSQL 15
// cluster's backups in every layout (pg_basebackup -Fp and -Ft with each
// compression, pgBackRest full/diff/incr sets in gz, lz4 (bundled), zst, bz2
// and none, a Barman backup) with each tool's own extraction or restore
// beside it (tar, pgbackrest restore, barman recover); the tests read every
// file and every block through this package and compare them with those.
//
// The tests skip when PostgreSQL 15's binaries are missing, unless
// WALSCOPE_REQUIRE_PG=1 (CI), which makes that a failure; the pgBackRest and
// Barman parts skip likewise without pgbackrest or barman in PATH.
// WALSCOPE_BACKUPTEST_KEEP=1 keeps the work directory and prints it;
// WALSCOPE_BACKUPTEST_DIR=DIR uses the scenario made in DIR before.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	scenarioOnce sync.Once
	scenarioDir  string // the scenario's work directory
	scenarioSkip string
	scenarioErr  error
	scenarioRoot string // removed by removeScenario
	facts        map[string]string
)

func pg15Bin() string {
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		return d
	}
	return "/usr/lib/postgresql/15/bin"
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
		t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", why)
	}
	t.Skip(why)
}

// scenario runs testdata/scenario.sh once per test binary and returns its
// work directory.
func scenario(t *testing.T) string {
	t.Helper()
	scenarioOnce.Do(func() {
		if d := os.Getenv("WALSCOPE_BACKUPTEST_DIR"); d != "" {
			// a scenario made before (development): used as it is
			scenarioDir = d
			scenarioErr = readFacts()
			return
		}
		for _, b := range []string{"postgres", "initdb", "pg_ctl", "pg_basebackup", "psql", "pg_controldata"} {
			if _, err := os.Stat(filepath.Join(pg15Bin(), b)); err != nil {
				scenarioSkip = "PostgreSQL 15 binaries not found in " + pg15Bin() + " (apt-get install postgresql-15, or WALSCOPE_PG15_BIN)"
				return
			}
		}
		for _, tool := range []string{"pgbackrest", "barman", "lz4", "zstd"} {
			if _, err := exec.LookPath(tool); err != nil {
				scenarioSkip = tool + " not in PATH (apt-get install pgbackrest barman lz4 zstd)"
				return
			}
		}
		if os.Getuid() == 0 {
			if _, err := user.Lookup("postgres"); err != nil {
				scenarioSkip = "running as root and there is no postgres user to run the server as"
				return
			}
		}
		root, err := os.MkdirTemp("", "wsbk-")
		if err != nil {
			scenarioErr = err
			return
		}
		scenarioRoot = root
		if err := os.Chmod(root, 0o755); err != nil {
			scenarioErr = err
			return
		}
		scenarioDir = filepath.Join(root, "s")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("bash", filepath.Join(filepath.Dir(file), "testdata", "scenario.sh"), scenarioDir)
		cmd.Env = append(os.Environ(), "PGBIN="+pg15Bin(), "PORT=55611")
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			serverLog, _ := os.ReadFile(filepath.Join(scenarioDir, "server.log"))
			scenarioErr = fmt.Errorf("scenario.sh: %v\n%s\nserver.log:\n%s", err, log.String(), serverLog)
			return
		}
		scenarioErr = readFacts()
	})
	if scenarioSkip != "" {
		skipOrFail(t, scenarioSkip)
	}
	if scenarioErr != nil {
		t.Fatal(scenarioErr)
	}
	return scenarioDir
}

func readFacts() error {
	facts = map[string]string{}
	b, err := os.ReadFile(filepath.Join(scenarioDir, "facts.env"))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			facts[k] = v
		}
	}
	return nil
}

// cleanups run at the end of the test binary (work directories).
var cleanups []func()

func removeScenario() {
	if os.Getenv("WALSCOPE_BACKUPTEST_KEEP") != "1" {
		for _, f := range cleanups {
			f()
		}
	}
	if scenarioRoot == "" {
		return
	}
	if os.Getenv("WALSCOPE_BACKUPTEST_KEEP") == "1" {
		fmt.Fprintln(os.Stderr, "backup tests: kept", scenarioRoot)
		return
	}
	os.RemoveAll(scenarioRoot)
}

// controldata runs pg_controldata on a data directory: its lines as a map.
func controldata(t *testing.T, dir string) map[string]string {
	t.Helper()
	line := shq(filepath.Join(pg15Bin(), "pg_controldata")) + " " + shq(dir)
	var cmd *exec.Cmd
	if os.Getuid() == 0 {
		cmd = exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
	} else {
		cmd = exec.Command("bash", "-c", line)
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_controldata %s: %v", dir, err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
