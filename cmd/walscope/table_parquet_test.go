package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParquetOutputs: `table --format parquet` to standard output (not a
// terminal) and to --out give the same complete Parquet file (PAR1 at both
// ends), no temporary file left beside --out; `rows --format parquet` of a
// transaction that changed two tables asks for --relation (exit 2), and
// with it writes the file. The values are DuckDB's to check
// (internal/duckdbtest's TestTableParquetAgainstRecovery).
func TestParquetOutputs(t *testing.T) {
	base, archive, _, _ := pagesFixture(t)
	stdout, stderr, code := walscope(t, "", "table", "--backup", base, "--relation", "kinds", "--target-name", "after-insert", "--format", "parquet", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "PAR1") || !strings.HasSuffix(stdout, "PAR1") {
		t.Fatalf("standard output is not a Parquet file (%d bytes)", len(stdout))
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "kinds.parquet")
	if _, stderr, code := walscope(t, "", "table", "--backup", base, "--relation", "kinds", "--target-name", "after-insert", "--format", "parquet", "--out", out, archive); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != stdout {
		t.Errorf("--out and standard output differ: %d and %d bytes", len(b), len(stdout))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files beside --out: %v", ents)
	}

	rbase, rarchive, _, _ := rowsFixture(t, t.TempDir())
	_, stderr, code = walscope(t, "", "rows", "--backup", rbase, "--xid", "753", "--format", "parquet", rarchive)
	if code != exitUsage || !strings.Contains(stderr, "give --relation for --format parquet") {
		t.Errorf("two tables without --relation: exit %d: %s", code, stderr)
	}
	rout := filepath.Join(dir, "notes.parquet")
	if _, stderr, code := walscope(t, "", "rows", "--backup", rbase, "--xid", "753", "--relation", "notes", "--format", "parquet", "--out", rout, rarchive); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(rout); err != nil || !strings.HasPrefix(string(b), "PAR1") {
		t.Errorf("rows --out: %v", err)
	}
}
