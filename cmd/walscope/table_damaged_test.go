package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestTableDamagedToast: a TOAST chunk missing from the base backup (line
// pointer 1 of pg_toast_16384's block 0 in fixtures/rows' backup, unpacked
// as a data directory, set LP_UNUSED; no later WAL touches that page before
// the target) costs the one row whose value it held: `walscope table`
// names it by ctid and column, writes the other rows exactly as the
// primary's COPY, and exits 1 saying the output is incomplete; the sql
// script ends in ROLLBACK, the Parquet file carries walscope.incomplete in
// its footer.
func TestTableDamagedToast(t *testing.T) {
	dir := t.TempDir()
	_, archive, expected, _ := rowsFixture(t, dir)
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(testwal.Root(t), "fixtures", "rows", "base.tar.gz"), "-C", data).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	toast := filepath.Join(data, "base", "5", "16387") // pg_toast.pg_toast_16384, acct's (walscope page --toast)
	page, err := os.ReadFile(toast)
	if err != nil {
		t.Fatal(err)
	}
	lp := binary.LittleEndian.Uint32(page[24:]) // ItemIdData of item 1: lp_off:15, lp_flags:2, lp_len:15
	if lp>>15&3 != 1 {
		t.Fatalf("item 1 of the TOAST page is not LP_NORMAL (%#x): the fixture changed", lp)
	}
	binary.LittleEndian.PutUint32(page[24:], lp&^(3<<15))
	if err := os.WriteFile(toast, page, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"table", "--backup", data, "--relation", "acct", "--target-name", "before-delete"}
	got, stderr, code := walscope(t, "", append(args, archive)...)
	if code != 1 || !strings.Contains(stderr, "row (0,10), column note") || !strings.Contains(stderr, "missing chunk number 0") || !strings.Contains(stderr, "incomplete") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var want []string
	for _, l := range readLines(t, filepath.Join(expected, "delete", "acct.before.copy")) {
		if !strings.HasPrefix(l, "10\t") {
			want = append(want, l)
		}
	}
	if g := strings.Join(readLinesOf(got), "\n"); g != strings.Join(want, "\n") {
		t.Errorf("the other rows differ from the primary's COPY (%d lines, want %d)", len(readLinesOf(got)), len(want))
	}
	sql, _, code := walscope(t, "", append(append(args, "--format", "sql"), archive)...)
	if code != 1 || !strings.HasSuffix(sql, "ROLLBACK;\n") || strings.Contains(sql, "COMMIT") {
		t.Errorf("sql: exit %d, ends %q", code, sql[max(0, len(sql)-80):])
	}
	pq := filepath.Join(dir, "acct.parquet")
	if _, stderr, code := walscope(t, "", append(append(args, "--format", "parquet", "--out", pq), archive)...); code != 1 {
		t.Fatalf("parquet: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("walscope.incomplete")) || !bytes.Contains(b, []byte("row (0,10), column note")) {
		t.Error("the Parquet file does not say it is incomplete")
	}
}

func readLinesOf(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
