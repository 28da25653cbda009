package rows_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// The rows transaction 804 of fixtures/rows changed: it deleted five rows
// of hist, updated one, truncated the table (the 145 rows it had then) and
// inserted one row into the new, empty file.
func ExampleChanges() {
	dir, err := os.MkdirTemp("", "rows-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	fixture := filepath.Join("..", "fixtures", "rows")
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
	res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: 804})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Close()
	fmt.Printf("transaction %d committed at %s\n", res.XID, res.CommitLSN)
	var last rows.Op
	n := 0
	flush := func() {
		if n > 0 {
			fmt.Printf("  %s %d\n", last, n)
		}
	}
	for _, c := range res.Changes {
		if c.Op != last {
			flush()
			last, n = c.Op, 0
		}
		n++
	}
	flush()
	rel := res.Relations[0]
	fmt.Printf("%s: %d columns, key %q\n", rel.Name(), len(rel.Table.Columns), rel.KeyKind)
	// Output:
	// transaction 804 committed at 0/840B70
	//   delete 5
	//   update 1
	//   truncate 145
	//   insert 1
	// public.hist: 3 columns, key ""
}

// The same transaction read with Open: its changes are not held in
// memory but read back one at a time, here last to first, as the undo
// script undoes them (a budget of 1 MiB for the changes the replay keeps
// in memory; beyond, they go to a file of ours in TempDir).
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "rows-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	fixture := filepath.Join("..", "fixtures", "rows")
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
	res, err := rows.Open(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: 804,
		ChangeMemoryBytes: 1 << 20, TempDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Close()
	fmt.Printf("transaction %d: %d changes, last first:\n", res.XID, res.Len())
	var last rows.Op
	n := 0
	flush := func() {
		if n > 0 {
			fmt.Printf("  %s %d\n", last, n)
		}
	}
	for c, err := range res.Backward() {
		if err != nil {
			fmt.Println(err)
			return
		}
		if c.Op != last {
			flush()
			last, n = c.Op, 0
		}
		n++
	}
	flush()
	// Output:
	// transaction 804: 152 changes, last first:
	//   insert 1
	//   truncate 145
	//   update 1
	//   delete 5
}
