package rmgr

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// btreeCheckSamples checks AppendDesc against testdata/NAME_desc.tsv: real
// descriptions that PostgreSQL 10, 11, 12, 14, 16 and 17 printed for real
// records (see the file's header). The index access methods share it.
func btreeCheckSamples(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+"_desc.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	versions := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		col := strings.Split(line, "\t")
		if len(col) != 7 {
			t.Fatalf("bad sample line %q", line)
		}
		v, _ := strconv.Atoi(col[0])
		id, _ := strconv.Atoi(col[2])
		info, _ := strconv.ParseUint(col[3], 16, 8)
		rec := &decode.Record{Record: &xlog.Record{
			Version: xlog.Version(v),
			Header:  xlog.RecordHeader{Info: uint8(info), Rmid: xlog.RmgrID(id)},
		}}
		if col[4] != "-" {
			rec.MainData = btreeMustHex(t, col[4])
		}
		if col[5] != "-" {
			for _, b := range strings.Split(col[5], ",") {
				p := strings.Split(b, ":")
				bid, _ := strconv.Atoi(p[0])
				ff, _ := strconv.ParseUint(p[1], 16, 8)
				data := btreeMustHex(t, p[4])
				rec.Blocks = append(rec.Blocks, decode.BlockRef{
					ID: uint8(bid), ForkFlags: uint8(ff), HasImage: p[2] == "true", Apply: p[3] == "true",
					Data: data, DataLen: uint16(len(data)),
				})
			}
		}
		got := string(AppendDesc(nil, rec))
		if got != col[6] {
			t.Errorf("%s %s (v%d, info %02x):\n got: %q\nwant: %q", name, col[1], v, info, got, col[6])
		}
		n++
		versions[col[0]] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 || len(versions) < 6 {
		t.Fatalf("%s: %d samples over %d versions", name, n, len(versions))
	}
}

func btreeMustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBtreeDescSamples(t *testing.T) { btreeCheckSamples(t, "btree") }

// btreeRec builds a Btree record; blocks are (id, data) pairs with data.
func btreeRec(v xlog.Version, info uint8, main []byte, block0 []byte) *decode.Record {
	rec := &decode.Record{Record: &xlog.Record{
		Version: v,
		Header:  xlog.RecordHeader{Info: info, Rmid: xlog.RmgrBtree},
	}, MainData: main}
	if block0 != nil {
		rec.Blocks = []decode.BlockRef{{ID: 0, ForkFlags: decode.BlockHasData, Data: block0, DataLen: uint16(len(block0))}}
	}
	return rec
}

// btreeLE builds little-endian struct images: each value is written with its
// size (uint8, uint16, uint32, uint64).
func btreeLE(vals ...any) []byte {
	var b []byte
	for _, v := range vals {
		switch x := v.(type) {
		case uint8:
			b = append(b, x)
		case uint16:
			b = append(b, byte(x), byte(x>>8))
		case uint32:
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		case uint64:
			for i := 0; i < 8; i++ {
				b = append(b, byte(x>>(8*i)))
			}
		default:
			panic("btreeLE: unsupported type")
		}
	}
	return b
}

// Branches that no WAL here (corpora, fixtures, samples) holds. Expected
// strings follow the format strings of the version named in each case.
func TestBtreeDescUncovered(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  *decode.Record
		want string
	}{
		// 11 nbtdesc.c: SPLIT_L_HIGHKEY shares "level %u, firstright %d, newitemoff %d"
		{"11 SPLIT_L_HIGHKEY", btreeRec(xlog.V11, 0x50, btreeLE(uint32(1), uint16(7), uint16(9)), nil),
			"level 1, firstright 7, newitemoff 9"},
		// 12: 0x50 is unused; btree_desc has no case for it
		{"12 0x50", btreeRec(xlog.V12, 0x50, btreeLE(uint32(1), uint16(7), uint16(9)), nil), ""},
		// 17 nbtdesc.c: "snapshotConflictHorizon: %u, ndeleted: %u, nupdated: %u, isCatalogRel: %c"
		// then delvacuum_desc with an updated posting list
		{"17 DELETE catalog", btreeRec(xlog.V17, 0x70,
			btreeLE(uint32(900), uint16(1), uint16(2), uint8(1)),
			btreeLE(uint16(4), uint16(10), uint16(11), uint16(2), uint16(0), uint16(5), uint16(1), uint16(3))),
			"snapshotConflictHorizon: 900, ndeleted: 1, nupdated: 2, isCatalogRel: T, deleted: [4], " +
				"updated: [{ off: 10, nptids: 2, ptids: [0, 5] }, { off: 11, nptids: 1, ptids: [3] }]"},
		// 16 nbtdesc.c prints no isCatalogRel even when set
		{"16 DELETE catalog", btreeRec(xlog.V16, 0x70, btreeLE(uint32(900), uint16(0), uint16(0), uint8(1)), nil),
			"snapshotConflictHorizon: 900, ndeleted: 0, nupdated: 0"},
		// 17: "rel: %u/%u/%u, snapshotConflictHorizon: %u:%u, isCatalogRel: %c"
		{"17 REUSE_PAGE catalog", btreeRec(xlog.V17, 0xD0,
			btreeLE(uint32(1663), uint32(5), uint32(16400), uint32(3), uint64(2)<<32|77, uint8(1)), nil),
			"rel: 1663/5/16400, snapshotConflictHorizon: 2:77, isCatalogRel: T"},
		// 11: "oldest_btpo_xact %u; last_cleanup_num_heap_tuples: %f" of the
		// block 0 xl_btree_metadata (no version field in 11)
		{"11 META_CLEANUP", btreeRec(xlog.V11, 0xE0, nil,
			btreeLE(uint32(3), uint32(1), uint32(3), uint32(1), uint32(561), uint32(0), uint64(0x408F400000000000))),
			"oldest_btpo_xact 561; last_cleanup_num_heap_tuples: 1000.000000"},
		// C's %f of an infinity
		{"12 META_CLEANUP inf", btreeRec(xlog.V12, 0xE0, nil,
			btreeLE(uint32(4), uint32(3), uint32(1), uint32(3), uint32(1), uint32(9), uint64(0x7FF0000000000000))),
			"oldest_btpo_xact 9; last_cleanup_num_heap_tuples: inf"},
		// short data prints nothing, and never panics
		{"15 DELETE short", btreeRec(xlog.V15, 0x70, btreeLE(uint32(5), uint16(1)), nil), ""},
		{"16 VACUUM short block", btreeRec(xlog.V16, 0xC0, btreeLE(uint16(3), uint16(1)), btreeLE(uint16(2), uint16(4))),
			"ndeleted: 3, nupdated: 1, deleted: [2, 4], updated: []"},
		{"18 META_CLEANUP no block", btreeRec(xlog.V18, 0xE0, nil, nil), ""},
	} {
		if got := string(btreeDesc(nil, c.rec)); got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.name, got, c.want)
		}
	}
}

func BenchmarkBtreeDescDelete(b *testing.B) {
	rec := btreeRec(xlog.V18, 0x70, btreeLE(uint32(900), uint16(3), uint16(1), uint8(0)),
		btreeLE(uint16(4), uint16(5), uint16(6), uint16(10), uint16(2), uint16(0), uint16(5)))
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst = btreeDesc(dst[:0], rec)
	}
}
