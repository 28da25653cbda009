package table_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestRowsAgainstRecovery: fixtures/pages (real PostgreSQL 15; see its
// generate.sh), at each restore point: the rows Scan gives are exactly the
// ctids a real standby paused there sees, in the same order, with every
// column readable; at after-vacuum the two TOASTed notes (pglz-compressed
// external, and incompressible external) come back whole: 12,800 and 9,600
// characters as written.
func TestRowsAgainstRecovery(t *testing.T) {
	d := filepath.Join(testwal.Root(t), "fixtures", "pages")
	dir := t.TempDir()
	for _, a := range []string{"archive.tar.zst", "expected.tar.zst"} {
		if err := testwal.UntarZstd(filepath.Join(d, a), dir); err != nil {
			t.Fatal(err)
		}
	}
	targets, err := os.ReadFile(filepath.Join(d, "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, target := range strings.Fields(string(targets)) {
		b, err := backup.Open(filepath.Join(d, "base.tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		src, err := archive.Open(filepath.Join(dir, "archive"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: src, Options: xlog.Options{FollowHistory: true},
			Target: replay.Target{Name: target, Inclusive: true}})
		if err != nil {
			t.Fatal(err)
		}
		rel, err := r.Resolve("acct", 0)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := table.Open(r, rel)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		notes := map[uint32]int{}
		err = tab.Scan(func(row *table.Row) error {
			got = append(got, fmt.Sprintf("(%d,%d)", row.Block, row.Offset))
			id := binary.LittleEndian.Uint32(row.Values[0])
			if !row.Nulls[3] {
				notes[id] = len(row.Values[3])
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "expected", target, "acct.ctids"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != strings.Join(strings.Fields(string(want)), " ") {
			t.Errorf("%s: rows %d, the standby %d", target, len(got), len(strings.Fields(string(want))))
		}
		rows += len(got)
		if target == "after-vacuum" && (notes[3] != 12800 || notes[4] != 9600) {
			t.Errorf("%s: TOASTed notes of ids 3 and 4 are %d and %d bytes, want 12800 and 9600", target, notes[3], notes[4])
		}
		if len(tab.Columns) != 4 || tab.Columns[1].Attribute.Name != "owner" {
			t.Errorf("columns %+v", tab.Columns)
		}
		r.Close()
		b.Close()
	}
	t.Logf("%d rows read, every one where the standby has it", rows)
}

// TestFormatTypeAgainstServer: every column type of fixtures/pages' tables
// as FormatType names it equals the standby's format_type(atttypid,
// atttypmod) at after-insert (integer, numeric(10,2), character
// varying(10), character(3), "char", time with time zone, integer[], an
// enum, a range, ...), dropped columns left out, an added one in.
func TestFormatTypeAgainstServer(t *testing.T) {
	d := filepath.Join(testwal.Root(t), "fixtures", "pages")
	dir := t.TempDir()
	for _, a := range []string{"archive.tar.zst", "expected.tar.zst"} {
		if err := testwal.UntarZstd(filepath.Join(d, a), dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: src, Options: xlog.Options{FollowHistory: true},
		Target: replay.Target{Name: "after-insert", Inclusive: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, tab := range []string{"acct", "hist", "kinds"} {
		rel, err := r.Resolve(tab, 0)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := table.Open(r, rel)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "expected", "after-insert", tab+".types"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range tb.Columns {
			got = append(got, c.Attribute.Name+" "+table.FormatType(rel.Catalog, c.Attribute.TypID, c.Attribute.TypMod))
		}
		if g, w := strings.Join(got, "\n"), strings.TrimRight(string(want), "\n"); g != w {
			t.Errorf("%s:\nwalscope:\n%s\nserver:\n%s", tab, g, w)
		}
		n += len(got)
	}
	t.Logf("%d columns typed as format_type types them", n)
}
