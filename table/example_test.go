package table_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// A table's rows as they were at a restore point, with no server: the
// replay of fixtures/pages' base backup and archive to the target, the
// table's columns as of then, and its first rows in COPY's text format
// (the output functions of typeout, with the backup's settings), as `COPY
// public.acct TO STDOUT` printed them on a server recovered there (302
// lines, beginning with these two: fixtures/pages/expected.tar.zst).
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "table-example-")
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
	t, err := table.Open(r, rel)
	if err != nil {
		fmt.Println(err)
		return
	}
	f := &typeout.Formatter{Settings: typeout.DefaultSettings(), Types: rel.Catalog, Major: b.MajorVersion()}
	for _, c := range t.Columns {
		fmt.Printf("%s %s\n", c.Attribute.Name, table.FormatType(rel.Catalog, c.Attribute.TypID, c.Attribute.TypMod))
	}
	rows := 0
	var line, val []byte
	err = t.Scan(func(row *table.Row) error {
		rows++
		if rows > 2 {
			return nil
		}
		line = line[:0]
		for i, c := range t.Columns {
			if i > 0 {
				line = append(line, '\t')
			}
			if row.Nulls[i] {
				line = append(line, `\N`...)
				continue
			}
			var err error
			if val, err = f.Append(val[:0], c.Attribute.TypID, row.Values[i]); err != nil {
				return err
			}
			line = typeout.AppendCopyText(line, val, '\t')
		}
		if len(line) > 60 {
			line = append(line[:60], "..."...)
		}
		fmt.Printf("(%d,%d) %s\n", row.Block, row.Offset, bytes.TrimSpace(line))
		return nil
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rows, "rows")
	// Output:
	// id integer
	// owner text
	// balance numeric
	// note text
	// (0,1) 1	owner 1	10	\N
	// (0,2) 2	owner 2	20	\N
	// 302 rows
}
