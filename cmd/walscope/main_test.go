package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testwal.Cleanup()
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
