package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

func TestMain(m *testing.M) {
	// the index files of gzip tars (--cache-dir's default) go to a
	// directory of the tests, not the user's cache: the commands run after
	// the first on a fixture's base.tar.gz read its index file, so their
	// comparisons with the server hold for that path too
	cache, err := os.MkdirTemp("", "walscope-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("WALSCOPE_CACHE_DIR", cache)
	code := m.Run()
	testwal.Cleanup()
	os.RemoveAll(cache)
	os.Exit(code)
}

// walscope runs the CLI in-process in dir and returns stdout, stderr and the
// exit code.
func walscope(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	var out, errb bytes.Buffer
	code := run(append([]string{"walscope"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// TestCommandsBuiltAlone: a run builds only the command it runs, so the
// table's names must be the commands' own, and a command's help and usage
// errors are the same built alone as among all of them; the root's help
// lists every command.
func TestCommandsBuiltAlone(t *testing.T) {
	out, _, code := walscope(t, "", "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		cmd := c.build()
		if cmd.Name != c.name {
			t.Errorf("table entry %q builds command %q", c.name, cmd.Name)
		}
		if !strings.Contains(out, "\n   "+c.name+" ") {
			t.Errorf("--help does not list %s:\n%s", c.name, out)
		}
		alone, _, code := walscope(t, "", c.name, "--help")
		if code != 0 || !strings.Contains(alone, "walscope "+c.name) {
			t.Errorf("%s --help: exit %d:\n%s", c.name, code, alone)
		}
		// The same help through the root's help command, which builds all.
		viaRoot, _, code := walscope(t, "", "help", c.name)
		if code != 0 || viaRoot != alone {
			t.Errorf("help %s (all commands built): exit %d, differs from %s --help:\n%s\n---\n%s", c.name, code, c.name, viaRoot, alone)
		}
		_, stderr, code := walscope(t, "", c.name, "--bogus")
		if code != exitUsage || !strings.Contains(stderr, "usage: walscope "+c.name) {
			t.Errorf("%s --bogus: exit %d, %q", c.name, code, stderr)
		}
	}
}
