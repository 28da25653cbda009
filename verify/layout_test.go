package verify

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestLayoutReproducesStream: laying a real stream's records out again with
// its own page size gives every record the LSN and end PostgreSQL gave it.
func TestLayoutReproducesStream(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		src, err := xlog.OpenDir(filepath.Join(testwal.Extract(t, set), "archive"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true, HeadersOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var l *Layout
		n := 0
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if l == nil {
				l = NewLayout(rec.PageSize, rec.SegSize, rec.LSN)
			}
			if rec.Aborted != 0 {
				l.Restart(rec.LSN)
			}
			s, _ := l.Add(rec.Header.TotLen, isSwitch(rec), false)
			if s != rec.LSN || l.Pos() != rec.EndLSN {
				t.Fatalf("%s: record %d laid at %s (next %s), stream has %s (next %s)", set.Name, n, s, l.Pos(), rec.LSN, rec.EndLSN)
			}
			n++
		}
		r.Close()
	}
}

func isSwitch(rec *xlog.Record) bool {
	return rec.Header.Rmid == xlog.RmgrXLOG && rec.Header.Info&0xF0 == 0x40
}

// ioFacts reads ref/io.txt of a pgbench corpus.
func ioFacts(t *testing.T, dir string) (start, end xlog.LSN, written uint64) {
	f, err := os.Open(filepath.Join(dir, "ref", "io.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "run_start_lsn":
			start, _ = xlog.ParseLSN(v)
		case "run_end_lsn":
			end, _ = xlog.ParseLSN(v)
		case "wal_normal_writes_and_write_bytes":
			written, _ = strconv.ParseUint(strings.Fields(v)[1], 10, 64)
		}
	}
	return
}

func flushEstimate(t *testing.T, dir string, pageSize uint32) (uint64, uint64) {
	start, end, _ := ioFacts(t, dir)
	src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := xlog.NewReader(src, xlog.Options{Start: start, End: end, HeadersOnly: true, Timeline: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var l *Layout
	for {
		rec, err := r.Next()
		if err == io.EOF || err != nil {
			break
		}
		if l == nil {
			l = NewLayout(pageSize, rec.SegSize, rec.LSN)
		}
		l.Add(rec.Header.TotLen, isSwitch(rec), isCommit(rec))
	}
	return l.FlushWriteBytes(), l.WALBytes()
}

func isCommit(rec *xlog.Record) bool {
	op := rec.Header.Info & 0x70
	return rec.Header.Rmid == xlog.RmgrTransaction && (op == 0x00 || op == 0x30)
}

func TestFlushModelAgainstPostgres(t *testing.T) {
	dirs := map[uint32]string{}
	for _, s := range testwal.Sets(t) {
		switch s.Name {
		case "corpora/pg18-8k-pgbench-replica":
			dirs[8192] = testwal.Extract(t, s)
		case "corpora/pg18-4k-pgbench-replica":
			dirs[4096] = testwal.Extract(t, s)
		}
	}
	if len(dirs) != 2 {
		t.Fatal("pgbench corpora not found")
	}
	for from, dir := range dirs {
		for to, other := range dirs {
			_, _, written := ioFacts(t, other)
			est, wal := flushEstimate(t, dir, to)
			off := float64(est)/float64(written) - 1
			t.Logf("from the %d-byte run, %d-byte pages: estimate %d bytes written (WAL %d); PostgreSQL wrote %d (%+.2f%%)",
				from, to, est, wal, written, 100*off)
			if off < -0.10 || off > 0.10 {
				t.Errorf("from the %d-byte run, the %d-byte estimate is %+.1f%% off PostgreSQL's count", from, to, 100*off)
			}
		}
	}
}
