package backup

// A real PostgreSQL 17 incremental chain as the oracle: testdata/incremental.sh
// makes a full backup and two incremental ones with pg_basebackup 17 and
// combines them with pg_combinebackup 17; the chain opened here must read,
// file by file and block by block, as pg_combinebackup's output.
//
// PostgreSQL 17's binaries come from scripts/pg17-debian.sh
// (WALSCOPE_PG17_BIN, else /opt/walscope/pg17-debian/bin or
// ~/.cache/walscope/pg17-debian/bin). Without them the test skips, even with
// WALSCOPE_REQUIRE_PG=1 (CI does not install them yet), unless
// WALSCOPE_REQUIRE_PG17=1.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	incrOnce sync.Once
	incrDir  string
	incrSkip string
	incrErr  error
)

func pg17Bin() (string, string) {
	var cands []string
	if d := os.Getenv("WALSCOPE_PG17_BIN"); d != "" {
		cands = []string{d}
	} else {
		cands = []string{"/opt/walscope/pg17-debian/bin"}
		if home, err := os.UserHomeDir(); err == nil {
			cands = append(cands, filepath.Join(home, ".cache", "walscope", "pg17-debian", "bin"))
		}
	}
	for _, d := range cands {
		out, err := exec.Command(filepath.Join(d, "pg_combinebackup"), "--version").Output()
		if err == nil && strings.Contains(string(out), "PostgreSQL) 17.") {
			if _, err := os.Stat(filepath.Join(d, "pg_basebackup")); err == nil {
				return d, ""
			}
		}
	}
	return "", "PostgreSQL 17's pg_basebackup and pg_combinebackup not found in " + strings.Join(cands, ", ") + ": run scripts/pg17-debian.sh"
}

func incrementalScenario(t *testing.T) string {
	t.Helper()
	incrOnce.Do(func() {
		if d := os.Getenv("WALSCOPE_BACKUPTEST_INCR_DIR"); d != "" {
			incrDir = d
			return
		}
		bin, why := pg17Bin()
		if bin == "" {
			incrSkip = why
			return
		}
		if _, err := os.Stat(filepath.Join(pg15Bin(), "psql")); err != nil {
			incrSkip = "psql of PostgreSQL 15 not found in " + pg15Bin()
			return
		}
		root, err := os.MkdirTemp("", "wsbki-")
		if err != nil {
			incrErr = err
			return
		}
		os.Chmod(root, 0o755)
		incrDir = filepath.Join(root, "i")
		cleanups = append(cleanups, func() { os.RemoveAll(root) })
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("bash", filepath.Join(filepath.Dir(file), "testdata", "incremental.sh"), incrDir)
		cmd.Env = append(os.Environ(), "PG17BIN="+bin, "PSQL15="+filepath.Join(pg15Bin(), "psql"))
		if out, err := cmd.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(incrDir, "server.log"))
			incrErr = fmt.Errorf("incremental.sh: %v\n%s\nserver.log:\n%s", err, out, log)
		}
	})
	if incrSkip != "" {
		if os.Getenv("WALSCOPE_REQUIRE_PG17") == "1" {
			t.Fatalf("WALSCOPE_REQUIRE_PG17=1: %s", incrSkip)
		}
		t.Skip(incrSkip)
	}
	if incrErr != nil {
		t.Fatal(incrErr)
	}
	return incrDir
}

// TestIncrementalChain: full+incr1 and full+incr1+incr2 read as
// pg_combinebackup's combined1/ and combined2/, every file and block.
func TestIncrementalChain(t *testing.T) {
	w := incrementalScenario(t)
	for _, tc := range []struct {
		name    string
		chain   []string
		oracle  string
		minIncr int
	}{
		{"full+incr1", []string{"full", "incr1"}, "combined1", 100},
		{"full+incr1+incr2", []string{"full", "incr1", "incr2"}, "combined2", 100},
		{"full+incr1t (tar, zstd)", []string{"full", "incr1t"}, "combined1t", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			for _, p := range tc.chain {
				paths = append(paths, filepath.Join(w, p))
			}
			b := openT(t, paths...)
			if b.Layout() != LayoutIncremental {
				t.Errorf("Layout %s", b.Layout())
			}
			c := compareTree(t, b, filepath.Join(w, tc.oracle), func(name string) bool {
				// pg_combinebackup writes its own manifest, and the label
				// without INCREMENTAL FROM
				// (and the tar backup's pg_wal.tar, not extracted: its
				// segments, and the archive_status/*.done pg_basebackup
				// writes there for a segment completed while it
				// streamed, which only happens when the backup crosses a
				// segment boundary)
				return name == "backup_manifest" || name == "backup_label" || name == "tablespace_map" ||
					strings.HasPrefix(name, "pg_wal/0") || strings.HasPrefix(name, "pg_wal/archive_status/")
			})
			incr := countIncremental(b.chain[len(b.chain)-1].st, ".")
			t.Logf("%s: %d files (%d INCREMENTAL in the newest backup's directory), %d relation forks, %d blocks identical to pg_combinebackup's",
				tc.name, c.files, incr, c.relations, c.blocks)
			if incr < tc.minIncr {
				t.Errorf("only %d INCREMENTAL files in the newest backup: the chain proves little", incr)
			}
			if b.Label().StartLSN != b.chain[len(b.chain)-1].Label().StartLSN {
				t.Errorf("the chain's label is not the newest backup's")
			}
		})
	}
}

// TestIncrementalChainErrors: what is not a chain.
func TestIncrementalChainErrors(t *testing.T) {
	w := incrementalScenario(t)
	p := func(n string) string { return filepath.Join(w, n) }
	for _, tc := range []struct {
		what  string
		paths []string
		says  string
	}{
		{"an incremental backup alone", []string{p("incr1")}, "give the backups it depends on first"},
		{"a backup skipped", []string{p("full"), p("incr2")}, "the backup before it"},
		{"the full backup missing", []string{p("incr1"), p("incr2")}, "must be a full backup"},
		{"in the wrong order", []string{p("full"), p("incr2"), p("incr1")}, "the backup before it"},
	} {
		_, err := Open(tc.paths...)
		wantErr(t, tc.what, err, ErrChain, tc.says)
	}
	// an INCREMENTAL file with its header changed
	dir := copyDir(t, p("incr1"))
	var victim string
	filepath.WalkDir(dir, func(q string, d os.DirEntry, err error) error {
		if err == nil && victim == "" && strings.HasPrefix(d.Name(), incrementalPrefix) && strings.Contains(q, "/base/") {
			if st, _ := d.Info(); st != nil && st.Size() > 8192 {
				victim = q
			}
		}
		return nil
	})
	if victim == "" {
		t.Fatal("no INCREMENTAL file with blocks in incr1")
	}
	raw, _ := os.ReadFile(victim)
	raw[4]++ // the block count
	os.WriteFile(victim, raw, 0o600)
	b := openT(t, p("full"), dir)
	rel, _ := filepath.Rel(dir, victim)
	name := strings.Replace(filepath.ToSlash(rel), incrementalPrefix, "", 1)
	_, err := b.ReadFile(name)
	wantErr(t, "ReadFile of a file whose INCREMENTAL header is wrong", err, ErrDamaged, "INCREMENTAL")
}

// countIncremental counts the INCREMENTAL files under dir of a backup's store.
func countIncremental(st store, dir string) int {
	names, err := st.list(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		p := name
		if dir != "." {
			p = dir + "/" + name
		}
		if strings.HasPrefix(name, incrementalPrefix) {
			n++
		} else if _, err := st.stat(p); err != nil {
			n += countIncremental(st, p)
		}
	}
	return n
}
