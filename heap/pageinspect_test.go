package heap_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/xlog"
)

// TestReadPageAgainstPageinspect: a real PostgreSQL 15 writes a heap page
// with nulls, HOT and non-HOT updates, deletes and a VACUUM (redirect, dead
// and unused line pointers), and its pageinspect lists it; ReadPage of the
// same raw page must say the same, field for field.
func TestReadPageAgainstPageinspect(t *testing.T) {
	bin := "/usr/lib/postgresql/15/bin"
	if d := os.Getenv("WALSCOPE_PG15_BIN"); d != "" {
		bin = d
	}
	skip := func(why string) {
		if os.Getenv("WALSCOPE_REQUIRE_PG") == "1" {
			t.Fatalf("WALSCOPE_REQUIRE_PG=1: %s", why)
		}
		t.Skip(why)
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		skip("PostgreSQL 15 binaries not found in " + bin + " (WALSCOPE_PG15_BIN)")
	}
	if os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			skip("running as root and there is no postgres user to run the server as")
		}
	}
	dir, err := os.MkdirTemp("", "walscope-heap-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", line)
		if os.Getuid() == 0 {
			cmd = exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	data := filepath.Join(dir, "data")
	const port = 55491
	run(fmt.Sprintf("%s/initdb -D %s -A trust -U postgres >/dev/null", bin, data))
	run(fmt.Sprintf("%s/pg_ctl -D %s -w -l %s/log -o \"-p %d -k %s -c listen_addresses=''\" start >/dev/null", bin, data, dir, port, dir))
	defer exec.Command("bash", "-c", fmt.Sprintf("%s/pg_ctl -D %s -m immediate stop", bin, data)).Run()
	if os.Getuid() == 0 {
		defer exec.Command("su", "postgres", "-s", "/bin/bash", "-c", fmt.Sprintf("%s/pg_ctl -D %s -m immediate stop", bin, data)).Run()
	}
	psql := func(sql string) string {
		t.Helper()
		return run(fmt.Sprintf("%s/psql -X -q -A -t -F '|' -h %s -p %d -U postgres -d postgres -c %s", bin, dir, port, shellQuote(sql)))
	}
	psql(`CREATE EXTENSION pageinspect`)
	psql(`CREATE TABLE t (a int, b text, c int) WITH (fillfactor = 50, autovacuum_enabled = off)`)
	psql(`INSERT INTO t SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE repeat('x', i) END, CASE WHEN i % 5 = 0 THEN NULL ELSE i END FROM generate_series(1, 200) i`)
	psql(`UPDATE t SET c = -c WHERE a % 7 = 0`) // HOT
	psql(`UPDATE t SET a = a + 1000 WHERE a % 11 = 0`)
	psql(`DELETE FROM t WHERE a % 13 = 0`)
	psql(`VACUUM t`)
	psql(`UPDATE t SET c = 1 WHERE a = 1`)
	psql(`SELECT count(*) FROM t`) // sets hint bits

	var nblocks int
	fmt.Sscan(strings.TrimSpace(psql(`SELECT pg_relation_size('t') / 8192`)), &nblocks)
	if nblocks < 2 {
		t.Fatalf("table of %d blocks", nblocks)
	}
	for blk := 0; blk < nblocks; blk++ {
		raw, err := hex.DecodeString(strings.TrimSpace(psql(fmt.Sprintf(`SELECT encode(get_raw_page('t', %d), 'hex')`, blk))))
		if err != nil {
			t.Fatal(err)
		}
		p, err := heap.ReadPage(raw)
		if err != nil {
			t.Fatal(err)
		}
		wantHeader := strings.TrimSpace(psql(fmt.Sprintf(`SELECT lsn, checksum, flags, lower, upper, special, pagesize, version, prune_xid FROM page_header(get_raw_page('t', %d))`, blk)))
		h := p.Header
		gotHeader := fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%d|%d", xlog.LSN(h.LSN), int16(h.Checksum), h.Flags, h.Lower, h.Upper, h.Special, h.PageSize, h.Version, h.PruneXID)
		if gotHeader != wantHeader {
			t.Errorf("block %d page_header: got %s, want %s", blk, gotHeader, wantHeader)
		}
		want := strings.Split(strings.TrimSpace(psql(fmt.Sprintf(`SELECT lp, lp_off, lp_flags, lp_len, coalesce(t_xmin::text, 'N'), coalesce(t_xmax::text, 'N'),
			coalesce(t_field3::text, 'N'), coalesce(t_ctid::text, 'N'), coalesce(t_infomask2::text, 'N'), coalesce(t_infomask::text, 'N'),
			coalesce(t_hoff::text, 'N'), coalesce(t_bits, 'N'), coalesce(t_oid::text, 'N'), coalesce(encode(t_data, 'hex'), 'N')
			FROM heap_page_items(get_raw_page('t', %d))`, blk))), "\n")
		if len(want) != len(p.Items) {
			t.Fatalf("block %d: %d items, pageinspect lists %d", blk, len(p.Items), len(want))
		}
		kinds := map[uint8]int{}
		for i, it := range p.Items {
			kinds[it.LPFlags]++
			got := fmt.Sprintf("%d|%d|%d|%d", it.LP, it.LPOff, it.LPFlags, it.LPLen)
			if it.HasTuple {
				got += fmt.Sprintf("|%d|%d|%d|(%d,%d)|%d|%d|%d", it.Xmin, it.Xmax, it.Field3, it.CtidBlock, it.CtidOffset, it.Infomask2, it.Infomask, it.Hoff)
			} else {
				got += "|N|N|N|N|N|N|N"
			}
			bits, oid, data := "N", "N", "N"
			if it.HasData {
				if it.Bits != "" {
					bits = it.Bits
				}
				if it.HasOID {
					oid = fmt.Sprint(it.OID)
				}
				data = hex.EncodeToString(it.Data)
			}
			got += "|" + bits + "|" + oid + "|" + data
			if got != want[i] {
				t.Errorf("block %d item %d:\n got  %s\n want %s", blk, i+1, got, want[i])
			}
		}
		if blk == 0 && (kinds[heap.LPRedirect] == 0 || kinds[heap.LPUnused] == 0 || kinds[heap.LPNormal] == 0) {
			t.Errorf("block 0 has line pointers %v: the workload should leave normal, redirect and unused ones", kinds)
		}
		t.Logf("block %d: %d items (by lp_flags %v), header %s", blk, len(p.Items), kinds, gotHeader)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
