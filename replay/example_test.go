package replay_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// A table as it was at a restore point, from fixtures/pages' base backup
// (pg_basebackup -Ft -z, read in place) and its archive: the file the name
// means at the target, its blocks, the record that last changed the first,
// and how many of its tuples a snapshot there sees.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "replay-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	fixture := filepath.Join("..", "fixtures", "pages")
	if err := testwal.UntarZstd(filepath.Join(fixture, "archive.tar.zst"), dir); err != nil {
		fmt.Println(err)
		return
	}
	b, err := backup.Open(filepath.Join(fixture, "base.tar.gz"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	wal, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true},
		Target: replay.Target{Name: "after-update", Inclusive: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	rel, err := r.Resolve("public.acct", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _ := r.NBlocks(rel.Locator, decode.ForkMain)
	_, last, _ := r.Page(nil, rel.Locator, decode.ForkMain, 0)
	rows := 0
	r.VisibleTuples(rel.Locator, func(uint32, uint16, []byte) error { rows++; return nil })
	fmt.Printf("%s in database %s: %d blocks, block 0 last changed at %s, %d rows visible\n", rel.Class.Name, rel.Database.Name, n, last, rows)
	// Output:
	// acct in database postgres: 3 blocks, block 0 last changed at 0/A15378, 302 rows visible
}
