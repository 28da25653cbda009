package backup

import (
	"os"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestMain removes the fixtures and corpora the tests unpacked, and the
// scenario's backups.
func TestMain(m *testing.M) {
	code := m.Run()
	testwal.Cleanup()
	removeScenario()
	os.Exit(code)
}
