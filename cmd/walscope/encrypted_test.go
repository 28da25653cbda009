package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestEncryptedRepository: a repository whose segments are all encrypted
// (wal-g 3.0.5's pgp and libsodium) is bad WAL input, not a usage error:
// verify reports each file as encrypted-or-unrecognised and exits 1 (it
// ended with exit 2 and a usage hint), and the other commands exit 1 with
// the same class and no hint.
func TestEncryptedRepository(t *testing.T) {
	base := filepath.Join(testwal.Root(t), "..", "shared", "realtools", "walg-3.0.5")
	for _, m := range []string{"pgp", "libsodium"} {
		dir := filepath.Join(base, m)
		out, stderr, code := walscope(t, "", "verify", dir)
		if code != 1 || !strings.Contains(out, "encrypted-or-unrecognised: file "+filepath.Join(dir, "wal_005", "000000010000000000000002.lz4")) ||
			!strings.Contains(out, "1 problems: encrypted-or-unrecognised 1") || strings.Contains(stderr, "--help") {
			t.Errorf("verify %s: exit %d\n%s%s", m, code, out, stderr)
		}
		for _, cmd := range []string{"stats", "dump", "ls"} {
			_, stderr, code := walscope(t, "", cmd, dir)
			if code != 1 || strings.Contains(stderr, "--help") || (cmd != "ls" && !strings.Contains(stderr, "[encrypted-or-unrecognised]")) {
				t.Errorf("%s %s: exit %d: %s", cmd, m, code, stderr)
			}
		}
	}
}
