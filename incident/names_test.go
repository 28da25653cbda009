package incident

import (
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/names"
)

// walNamesOf reads a set's archive in order into a WALNames, and returns
// the files (database, relfilenode) of the main forks the WAL writes.
func walNamesOf(t *testing.T, set testwal.Set) (*names.WALNames, map[decode.RelFileLocator]bool) {
	t.Helper()
	w := names.NewWALNames(nil)
	files := map[decode.RelFileLocator]bool{}
	waltest.ReadSet(t, filepath.Join(testwal.Extract(t, set), "archive"), func(d *decode.Record) {
		w.Add(d)
		for _, b := range d.Blocks {
			if b.Fork() == decode.ForkMain {
				files[decode.RelFileLocator{DBOID: b.Rel.DBOID, RelNumber: b.Rel.RelNumber}] = true
			}
		}
	})
	return w, files
}

func countNamed(w *names.WALNames, files map[decode.RelFileLocator]bool) int {
	n := 0
	for f := range files {
		if !w.NoName(f) {
			n++
		}
	}
	return n
}
