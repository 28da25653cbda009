package whatif

import (
	"os"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestMain removes the fixtures and corpora the tests unpacked.
func TestMain(m *testing.M) {
	code := m.Run()
	testwal.Cleanup()
	os.Exit(code)
}
