package rmgr

import (
	"bufio"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

var xlogOracleStamp = regexp.MustCompile(`(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{6}) UTC`)

// TestGroupDescServerOracle compares the descriptions with those the
// PostgreSQL 10, 11, 12, 14, 16 and 17 servers printed themselves for real
// records (testdata/xlog-group-desc-oracle.tsv, see its header).
func TestGroupDescServerOracle(t *testing.T) {
	f, err := os.Open("testdata/xlog-group-desc-oracle.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	perVersion := map[int]int{}
	for line := 0; sc.Scan(); {
		line++
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		p := strings.Split(text, "\t")
		if len(p) != 7 {
			t.Fatalf("line %d: %d fields", line, len(p))
		}
		v, _ := strconv.Atoi(p[0])
		rmid, _ := strconv.Atoi(p[1])
		info, _ := strconv.Atoi(p[2])
		origin, _ := strconv.Atoi(p[3])
		xid, _ := strconv.ParseUint(p[4], 10, 32)
		data, err := hex.DecodeString(p[5])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		rec := &decode.Record{
			Record: &xlog.Record{
				Version: xlog.Version(v),
				Header:  xlog.RecordHeader{Rmid: xlog.RmgrID(rmid), Info: uint8(info), XID: xlog.XID(xid)},
			},
			MainData: data,
		}
		if origin >= 0 {
			rec.Origin, rec.HasOrigin = uint16(origin), true
		}
		// The oracle's timestamps are UTC; pg_waldump prints local time.
		want := xlogOracleStamp.ReplaceAllStringFunc(p[6], func(m string) string {
			s := xlogOracleStamp.FindStringSubmatch(m)
			at, err := time.Parse("2006-01-02 15:04:05", s[1])
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			local := at.In(time.Local)
			return local.Format("2006-01-02 15:04:05") + "." + s[2] + " " + local.Format("MST")
		})
		if got := string(AppendDesc(nil, rec)); got != want {
			t.Errorf("line %d (PostgreSQL %d, rmid %d, info %#x):\n got: %q\nwant: %q", line, v, rmid, info, got, want)
		}
		perVersion[v]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{10, 11, 12, 14, 16, 17} {
		if perVersion[v] < 50 {
			t.Errorf("PostgreSQL %d: only %d records in the oracle", v, perVersion[v])
		}
	}
}
