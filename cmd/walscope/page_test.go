package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/internal/testwal"
)

// pagesFixture unpacks fixtures/pages: the base backup (base.tar.gz, read
// in place), the archive, the real standby's answers per target.
func pagesFixture(t *testing.T) (base, archive, expected string, targets []string) {
	t.Helper()
	d := filepath.Join(testwal.Root(t), "fixtures", "pages")
	dir := t.TempDir()
	for _, a := range []string{"archive.tar.zst", "expected.tar.zst"} {
		if err := testwal.UntarZstd(filepath.Join(d, a), dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(d, "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "base.tar.gz"), filepath.Join(dir, "archive"), filepath.Join(dir, "expected"), strings.Fields(string(b))
}

// TestPageAgainstRecovery: fixtures/pages (real PostgreSQL 15, checksums on,
// wal_compression lz4; see its generate.sh) restored by a real server to
// each of its seven restore points (after inserts and COPY, HOT and non-HOT
// updates and deletes, an aborted transaction, a rolled-back savepoint and
// 2PC, row locks by two sessions, VACUUM and TOAST, VACUUM FREEZE and
// TRUNCATE, VACUUM FULL and DROP TABLE) and paused there: every page of
// every table and TOAST table that `walscope page --backup base.tar.gz
// --target-name X` rebuilds equals the standby's get_raw_page after
// heap_mask on both, the pages count the same, and the tuples walscope says
// are visible are exactly the standby's `SELECT ctid`; a table dropped after
// the target is rebuilt, one dropped before it is no relation (exit 4).
func TestPageAgainstRecovery(t *testing.T) {
	base, archive, expected, targets := pagesFixture(t)
	pages, identical, tuples := 0, 0, 0
	for _, target := range targets {
		for _, tab := range []string{"acct", "hist", "doomed"} {
			for _, toast := range []bool{false, true} {
				suffix := ".pages"
				args := []string{"page", "--backup", base, "--relation", tab, "--target-name", target}
				if toast {
					suffix = ".toast.pages"
					args = append(args, "--toast")
				}
				want, err := os.ReadFile(filepath.Join(expected, target, tab+suffix))
				if os.IsNotExist(err) {
					if !toast {
						// dropped before the target: no such relation
						_, stderr, code := walscope(t, "", append(args, archive)...)
						if code != exitNoRelation {
							t.Errorf("%s %s: exit %d, want %d (no relation): %s", target, tab, code, exitNoRelation, stderr)
						}
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				out, stderr, code := walscope(t, "", append(append(args, "--format", "raw"), archive)...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, stderr)
				}
				var wantPages [][]byte
				for _, l := range strings.Fields(string(want)) {
					p, err := hex.DecodeString(l)
					if err != nil {
						t.Fatal(err)
					}
					wantPages = append(wantPages, p)
				}
				got := []byte(out)
				if len(got) != len(wantPages)*8192 {
					t.Errorf("%s %s%s: %d bytes, the standby has %d pages", target, tab, suffix, len(got), len(wantPages))
					continue
				}
				for blk, w := range wantPages {
					g := got[blk*8192 : (blk+1)*8192]
					pages++
					heap.Mask(g, uint32(blk))
					heap.Mask(w, uint32(blk))
					if !bytes.Equal(g, w) {
						t.Errorf("%s %s%s block %d differs after masking: %s", target, tab, suffix, blk, firstDiffByte(g, w))
						continue
					}
					identical++
				}
				if toast {
					continue
				}
				// visibility: the items walscope calls visible are the standby's ctids
				js, stderr, code := walscope(t, "", append(append(args, "--format", "json"), archive)...)
				if code != 0 {
					t.Fatalf("json: exit %d: %s", code, stderr)
				}
				var jp []struct {
					Block uint32 `json:"block"`
					Items []struct {
						LP      uint16 `json:"lp"`
						Visible bool   `json:"visible"`
					} `json:"items"`
				}
				if err := json.Unmarshal([]byte(js), &jp); err != nil {
					t.Fatal(err)
				}
				var gotCtids []string
				for _, p := range jp {
					for _, it := range p.Items {
						if it.Visible {
							gotCtids = append(gotCtids, fmt.Sprintf("(%d,%d)", p.Block, it.LP))
						}
					}
				}
				wc, err := os.ReadFile(filepath.Join(expected, target, tab+".ctids"))
				if err != nil {
					t.Fatal(err)
				}
				wantCtids := strings.Fields(string(wc))
				if strings.Join(gotCtids, " ") != strings.Join(wantCtids, " ") {
					t.Errorf("%s %s: visible %d tuples, the standby %d\nwalscope: %v\nstandby:  %v", target, tab, len(gotCtids), len(wantCtids), gotCtids, wantCtids)
				} else {
					tuples += len(wantCtids)
				}
			}
		}
	}
	if pages == 0 || tuples == 0 {
		t.Fatalf("nothing compared")
	}
	t.Logf("%d targets: %d pages compared, %d identical after heap_mask; %d visible tuples agree", len(targets), pages, identical, tuples)
}

func firstDiffByte(a, b []byte) string {
	for i := range a {
		if a[i] != b[i] {
			lo, hi := max(i-8, 0), min(i+8, len(a))
			return fmt.Sprintf("first at offset %d: walscope % x, standby % x", i, a[lo:hi], b[lo:hi])
		}
	}
	return "equal"
}

// TestPageChecksumFailure: a page of the backup that fails its checksum
// (the cluster has data checksums) is exit 1, naming the file and block,
// not a page printed: fixtures/pages' backup unpacked to a directory, one
// byte of table doomed's first block flipped (the WAL never rewrites that
// block before after-insert, so it is read from the backup).
func TestPageChecksumFailure(t *testing.T) {
	base, archive, _, _ := pagesFixture(t)
	out, stderr, code := walscope(t, "", "page", "--backup", base, "--relation", "doomed", "--target-name", "after-insert", "--block", "0", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	i, j := strings.Index(out, "1663/"), strings.Index(out, ") block 0")
	if i < 0 || j < i {
		t.Fatalf("no locator in %q", out[:min(len(out), 200)])
	}
	loc := strings.Split(out[i:j], "/")
	data := t.TempDir()
	if err := exec.Command("tar", "-xzf", base, "-C", data).Run(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(data, "base", loc[1], loc[2])
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[300] ^= 0x40
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = walscope(t, "", "page", "--backup", data, "--relation", "doomed", "--target-name", "after-insert", archive)
	if code != exitProblem || !strings.Contains(stderr, "fails its checksum") || !strings.Contains(stderr, "base/"+loc[1]+"/"+loc[2]+" block 0") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestPITRRowsBack: pitr names the walscope table command that gives the
// rows back (issue 27.5), and that command, run as printed (WAL... replaced
// by the archive), prints the dropped table as a real standby at the last
// restore point before the DROP printed it (fixtures/pages: doomed is only
// dropped after after-truncate, and not changed between).
func TestPITRRowsBack(t *testing.T) {
	base, archive, expected, _ := pagesFixture(t)
	out, stderr, code := walscope(t, "", "pitr", "--format", "json", "--relation", "doomed", "--event", "drop", "--backup", base, archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p struct {
		RowsBack string `json:"rows_back"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(p.RowsBack)
	if len(words) < 4 || words[0] != "walscope" || words[1] != "table" || words[len(words)-1] != "WAL..." || !strings.Contains(p.RowsBack, "--backup "+base) {
		t.Fatalf("rows_back %q", p.RowsBack)
	}
	got, stderr, code := walscope(t, "", append(words[1:len(words)-1], archive)...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", p.RowsBack, code, stderr)
	}
	want, err := os.ReadFile(filepath.Join(expected, "after-truncate", "doomed.copy"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) || got == "" {
		t.Errorf("%s printed %d bytes, the standby's COPY %d", p.RowsBack, len(got), len(want))
	}
}
