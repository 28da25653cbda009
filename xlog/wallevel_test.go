package xlog_test

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

// TestWalLevel: get_wal_level_string's names; every other value, the
// unknown level included, is "?".
func TestWalLevel(t *testing.T) {
	for l, want := range map[xlog.WalLevel]string{
		xlog.WalLevelMinimal: "minimal", xlog.WalLevelReplica: "replica", xlog.WalLevelLogical: "logical",
		xlog.WalLevelUnknown: "?", 3: "?", -7: "?",
	} {
		if got := l.String(); got != want {
			t.Errorf("WalLevel(%d).String() = %q, want %q", l, got, want)
		}
		if l.Valid() != (want != "?") {
			t.Errorf("WalLevel(%d).Valid() = %v", l, l.Valid())
		}
	}
}
