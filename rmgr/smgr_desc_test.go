package rmgr

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Tests of the descriptions of the smaller managers (Storage, CLOG, Database,
// Tablespace, MultiXact, Sequence, CommitTs, ReplicationOrigin, Generic,
// LogicalMessage). Records are built by hand from the C struct layouts; every
// expected string is the named PostgreSQL format string filled in by hand,
// never output of the code under test. The real-WAL comparison with
// pg_waldump (13, 15, 18) is TestDumpMatchesPgWaldump.

// smgrTestCase is one hand-built record and the description pg_waldump of
// that version prints for it.
type smgrTestCase struct {
	v    xlog.Version
	info uint8
	data []byte
	want string
}

// smgrTestRecord builds a decode.Record with only what Desc reads.
func smgrTestRecord(v xlog.Version, rmid xlog.RmgrID, info uint8, data []byte) *decode.Record {
	return &decode.Record{
		Record:   &xlog.Record{Version: v, Header: xlog.RecordHeader{Rmid: rmid, Info: info}},
		MainData: data,
	}
}

// smgrLE lays out C struct fields little-endian, in order: uint8, uint16,
// uint32, int32, uint64, int64, string (bytes as is) and []byte.
func smgrLE(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch x := f.(type) {
		case uint8:
			b = append(b, x)
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, x)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, x)
		case int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		case string:
			b = append(b, x...)
		case []byte:
			b = append(b, x...)
		default:
			panic(fmt.Sprintf("smgrLE: %T", f))
		}
	}
	return b
}

// smgrRunCases checks Desc of manager id for each case, through AppendDesc.
func smgrRunCases(t *testing.T, id xlog.RmgrID, cases []smgrTestCase) {
	t.Helper()
	for i, c := range cases {
		rec := smgrTestRecord(c.v, id, c.info, c.data)
		got := string(AppendDesc(nil, rec))
		if got != c.want {
			t.Errorf("%s case %d (v%d info %#02x): got %q, want %q", Name(id), i, c.v, c.info, got, c.want)
		}
	}
}

func TestSmgrDesc(t *testing.T) {
	// smgrdesc.c: CREATE appendStringInfoString(relpathperm(rnode, forkNum));
	// TRUNCATE "%s to %u blocks flags %d" of relpathperm(rnode, MAIN_FORKNUM).
	// relpath.c: "global/%u", "base/%u/%u", "pg_tblspc/%u/%s/%u/%u" with
	// TABLESPACE_VERSION_DIRECTORY, "_%s" of forkNames for other forks.
	create := func(spc, db, rel uint32, fork int32) []byte { return smgrLE(spc, db, rel, fork) }
	trunc := func(blk, spc, db, rel uint32, flags int32) []byte { return smgrLE(blk, spc, db, rel, flags) }
	smgrRunCases(t, xlog.RmgrStorage, []smgrTestCase{
		{xlog.V10, 0x10, create(1663, 5, 16399, 0), "base/5/16399"},
		{xlog.V13, 0x10, create(1664, 0, 1262, 1), "global/1262_fsm"},
		{xlog.V14, 0x10, create(16500, 5, 16399, 3), "pg_tblspc/16500/PG_14_202107181/5/16399_init"},
		{xlog.V18, 0x10, create(16500, 5, 16399, 2), "pg_tblspc/16500/PG_18_202506291/5/16399_vm"},
		{xlog.V12, 0x20, trunc(0, 1663, 16384, 16400, 7), "base/16384/16400 to 0 blocks flags 7"},
		{xlog.V13, 0x20, trunc(14, 1663, 16384, 16477, 1), "base/16384/16477 to 14 blocks flags 1"},
		{xlog.V17, 0x20, trunc(4294967295, 1664, 0, 6000, -1), "global/6000 to 4294967295 blocks flags -1"},
		// Record type 0x00 is not used: nothing printed. Short data: nothing.
		{xlog.V15, 0x00, create(1663, 5, 16399, 0), ""},
		{xlog.V15, 0x10, create(1663, 5, 16399, 0)[:15], ""},
		{xlog.V15, 0x20, trunc(1, 1663, 5, 16399, 0)[:19], ""},
	})
}

func TestSmgrGroupDescAllocs(t *testing.T) {
	rec := smgrTestRecord(xlog.V18, xlog.RmgrStorage, 0x20, smgrLE(uint32(9), uint32(16500), uint32(5), uint32(16399), int32(7)))
	msg := smgrTestRecord(xlog.V18, xlog.RmgrLogicalMessage, 0x00,
		smgrLE(uint32(5), uint8(1), "\x00\x00\x00", uint64(7), uint64(5), "walref\x00hello"))
	mx := smgrTestRecord(xlog.V15, xlog.RmgrMultiXact, 0x20,
		smgrLE(uint32(1), uint32(1), int32(2), uint32(569), uint32(1), uint32(570), uint32(5)))
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendDesc(buf[:0], rec)
		buf = AppendDesc(buf[:0], msg)
		buf = AppendDesc(buf[:0], mx)
	}); n != 0 {
		t.Errorf("AppendDesc allocates %v times per run", n)
	}
}
