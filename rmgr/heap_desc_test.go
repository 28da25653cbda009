package rmgr

import (
	"encoding/binary"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Unit tests of the Heap and Heap2 descriptions for the versions and record
// types no real WAL here covers (the corpora are 13, 15 and 18). Payloads are
// built by hand from the C struct layouts of heapam_xlog.h; the expected
// strings follow the format strings of each version's heapdesc.c (see the
// comments in heap_desc.go and heap2_desc.go for where each was read).

// heapTestBytes builds little-endian bytes: uint8, uint16, uint32 and int32
// values in order; an int is that many zero padding bytes.
func heapTestBytes(vals ...any) []byte {
	var b []byte
	for _, v := range vals {
		switch x := v.(type) {
		case uint8:
			b = append(b, x)
		case int8:
			b = append(b, uint8(x))
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, x)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case int:
			b = append(b, make([]byte, x)...)
		default:
			panic("heapTestBytes: unsupported value")
		}
	}
	return b
}

// heapTestRecord builds a decoded record; blockData, when not nil, becomes
// block 0's data.
func heapTestRecord(v xlog.Version, rmid xlog.RmgrID, info uint8, main, blockData []byte) *decode.Record {
	rec := &decode.Record{
		Record:   &xlog.Record{Version: v, Header: xlog.RecordHeader{Info: info, Rmid: rmid}},
		MainData: main,
	}
	if blockData != nil {
		rec.Blocks = []decode.BlockRef{{ID: 0, ForkFlags: decode.BlockHasData, DataLen: uint16(len(blockData)), Data: blockData}}
	}
	return rec
}

type heapDescCase struct {
	name  string
	v     xlog.Version
	info  uint8
	main  []byte
	block []byte
	want  string
}

func heapRunDescCases(t *testing.T, rmid xlog.RmgrID, cases []heapDescCase) {
	t.Helper()
	for _, c := range cases {
		rec := heapTestRecord(c.v, rmid, c.info, c.main, c.block)
		if got := string(AppendDesc(nil, rec)); got != c.want {
			t.Errorf("%s (v%d):\n got  %q\n want %q", c.name, c.v, got, c.want)
		}
	}
}

func TestHeapDescVersions(t *testing.T) {
	insert := heapTestBytes(uint16(3), uint8(0x01))
	// xl_heap_delete: xmax, offnum, infobits_set (LOCK_ONLY|KEYS_UPDATED), flags
	del := heapTestBytes(uint32(700), uint16(5), uint8(0x12), uint8(0x00))
	delNoBits := heapTestBytes(uint32(700), uint16(5), uint8(0), uint8(0x01))
	// xl_heap_update: old_xmax, old_offnum, old_infobits (IS_MULTI), flags,
	// new_xmax, new_offnum
	upd := heapTestBytes(uint32(7), uint16(2), uint8(0x01), uint8(0x10), uint32(0), uint16(9))
	// xl_heap_truncate: dbId, nrelids, flags (CASCADE|RESTART_SEQS), pad, relids
	trunc := heapTestBytes(uint32(5), uint32(2), uint8(3), 3, uint32(16384), uint32(16390))
	truncPlain := heapTestBytes(uint32(5), uint32(1), uint8(0), 3, uint32(1))
	confirm := heapTestBytes(uint16(4))
	// xl_heap_lock: locking_xid/xmax, offnum, infobits (LOCK_ONLY|EXCL_LOCK), flags
	lock := heapTestBytes(uint32(900), uint16(1), uint8(0x06), uint8(0x01))
	inplace := heapTestBytes(uint16(8))
	// 18 xl_heap_inplace: offnum, pad, dbId, tsId, relcacheInitFileInval, pad,
	// nmsgs, then SharedInvalidationMessage[nmsgs] (16 bytes each).
	msg := func(id int8, at4, at8 uint32) []byte {
		return heapTestBytes(id, 3, at4, at8, 4)
	}
	inplace18 := heapTestBytes(uint16(8), 2, uint32(5), uint32(1663), uint8(1), 3, int32(8))
	for _, m := range [][]byte{
		msg(57, 5, 0xdeadbeef), // catcache
		msg(-1, 5, 1259),       // catalog
		msg(-2, 5, 16384),      // relcache
		msg(-3, 0, 0),          // smgr
		msg(-4, 5, 0),          // relmap
		msg(-5, 5, 2608),       // snapshot
		msg(-6, 5, 16400),      // relsync
		msg(-7, 0, 0),          // unrecognized
	} {
		inplace18 = append(inplace18, m...)
	}
	inplace18NoInit := heapTestBytes(uint16(8), 2, uint32(5), uint32(1663), uint8(0), 3, int32(1))
	inplace18NoInit = append(inplace18NoInit, msg(-2, 5, 16385)...)
	inplace18None := heapTestBytes(uint16(8), 2, uint32(5), uint32(1663), uint8(1), 3, int32(0))

	heapRunDescCases(t, xlog.RmgrHeap, []heapDescCase{
		// INSERT: "off %u" (10, 11), "off %u flags 0x%02X" (12-15),
		// "off: %u, flags: 0x%02X" (16+).
		{"INSERT", xlog.V10, 0x00, insert, nil, "off 3"},
		{"INSERT+INIT", xlog.V11, 0x80, insert, nil, "off 3"},
		{"INSERT", xlog.V12, 0x00, insert, nil, "off 3 flags 0x01"},
		{"INSERT", xlog.V14, 0x00, insert, nil, "off 3 flags 0x01"},
		{"INSERT", xlog.V16, 0x00, insert, nil, "off: 3, flags: 0x01"},
		{"INSERT", xlog.V17, 0x00, insert, nil, "off: 3, flags: 0x01"},

		// DELETE: "off %u " out_infobits (10, 11); "off %u flags 0x%02X "
		// out_infobits (12-15); "xmax: %u, off: %u, " infobits_desc
		// ", flags: 0x%02X" (16+).
		{"DELETE", xlog.V10, 0x10, del, nil, "off 5 LOCK_ONLY KEYS_UPDATED "},
		{"DELETE", xlog.V11, 0x10, delNoBits, nil, "off 5 "},
		{"DELETE", xlog.V12, 0x10, del, nil, "off 5 flags 0x00 LOCK_ONLY KEYS_UPDATED "},
		{"DELETE", xlog.V14, 0x10, delNoBits, nil, "off 5 flags 0x01 "},
		{"DELETE", xlog.V16, 0x10, del, nil, "xmax: 700, off: 5, infobits: [LOCK_ONLY, KEYS_UPDATED], flags: 0x00"},
		{"DELETE", xlog.V17, 0x10, delNoBits, nil, "xmax: 700, off: 5, infobits: [], flags: 0x01"},

		// UPDATE / HOT_UPDATE: "off %u xmax %u " out_infobits "; new off %u
		// xmax %u" (10, 11); with "flags 0x%02X " (12-15); "old_xmax: %u,
		// old_off: %u, " infobits_desc ", flags: 0x%02X, new_xmax: %u,
		// new_off: %u" (16+).
		{"UPDATE", xlog.V10, 0x20, upd, nil, "off 2 xmax 7 IS_MULTI ; new off 9 xmax 0"},
		{"HOT_UPDATE", xlog.V11, 0x40, upd, nil, "off 2 xmax 7 IS_MULTI ; new off 9 xmax 0"},
		{"UPDATE+INIT", xlog.V12, 0xA0, upd, nil, "off 2 xmax 7 flags 0x10 IS_MULTI ; new off 9 xmax 0"},
		{"HOT_UPDATE", xlog.V14, 0x40, upd, nil, "off 2 xmax 7 flags 0x10 IS_MULTI ; new off 9 xmax 0"},
		{"UPDATE", xlog.V16, 0x20, upd, nil, "old_xmax: 7, old_off: 2, old_infobits: [IS_MULTI], flags: 0x10, new_xmax: 0, new_off: 9"},
		{"HOT_UPDATE+INIT", xlog.V17, 0xC0, upd, nil, "old_xmax: 7, old_off: 2, old_infobits: [IS_MULTI], flags: 0x10, new_xmax: 0, new_off: 9"},

		// TRUNCATE: none in 10; "cascade " "restart_seqs " "nrelids %u
		// relids" " %u"... (11-15); truncate_flags_desc ", nrelids: %u"
		// ", relids:" array_desc (16+).
		{"TRUNCATE", xlog.V10, 0x30, trunc, nil, ""},
		{"TRUNCATE", xlog.V11, 0x30, trunc, nil, "cascade restart_seqs nrelids 2 relids 16384 16390"},
		{"TRUNCATE", xlog.V13, 0x30, truncPlain, nil, "nrelids 1 relids 1"},
		{"TRUNCATE", xlog.V15, 0x30, trunc, nil, "cascade restart_seqs nrelids 2 relids 16384 16390"},
		{"TRUNCATE", xlog.V16, 0x30, trunc, nil, "flags: [CASCADE, RESTART_SEQS], nrelids: 2, relids: [16384, 16390]"},
		{"TRUNCATE", xlog.V18, 0x30, truncPlain, nil, "flags: [], nrelids: 1, relids: [1]"},

		// HEAP_CONFIRM: "off %u" / "off: %u".
		{"HEAP_CONFIRM", xlog.V10, 0x50, confirm, nil, "off 4"},
		{"HEAP_CONFIRM", xlog.V13, 0x50, confirm, nil, "off 4"},
		{"HEAP_CONFIRM", xlog.V16, 0x50, confirm, nil, "off: 4"},
		{"HEAP_CONFIRM", xlog.V18, 0x50, confirm, nil, "off: 4"},

		// LOCK: "off %u: xid %u: flags %u " (10, 11), "... flags 0x%02X "
		// (12-15), out_infobits after; "xmax: %u, off: %u, " infobits_desc
		// ", flags: 0x%02X" (16+).
		{"LOCK", xlog.V10, 0x60, lock, nil, "off 1: xid 900: flags 1 LOCK_ONLY EXCL_LOCK "},
		{"LOCK", xlog.V11, 0x60, lock, nil, "off 1: xid 900: flags 1 LOCK_ONLY EXCL_LOCK "},
		{"LOCK", xlog.V12, 0x60, lock, nil, "off 1: xid 900: flags 0x01 LOCK_ONLY EXCL_LOCK "},
		{"LOCK", xlog.V14, 0x60, lock, nil, "off 1: xid 900: flags 0x01 LOCK_ONLY EXCL_LOCK "},
		{"LOCK", xlog.V16, 0x60, lock, nil, "xmax: 900, off: 1, infobits: [LOCK_ONLY, EXCL_LOCK], flags: 0x01"},
		{"LOCK", xlog.V17, 0x60, lock, nil, "xmax: 900, off: 1, infobits: [LOCK_ONLY, EXCL_LOCK], flags: 0x01"},

		// INPLACE: "off %u" (10-15), "off: %u" (16, 17), plus
		// standby_desc_invalidations (18).
		{"INPLACE", xlog.V10, 0x70, inplace, nil, "off 8"},
		{"INPLACE", xlog.V14, 0x70, inplace, nil, "off 8"},
		{"INPLACE", xlog.V16, 0x70, inplace, nil, "off: 8"},
		{"INPLACE", xlog.V17, 0x70, inplace, nil, "off: 8"},
		{"INPLACE", xlog.V18, 0x70, inplace18, nil, "off: 8; relcache init file inval dbid 5 tsid 1663; inval msgs:" +
			" catcache 57 catalog 1259 relcache 16384 smgr relmap db 5 snapshot 2608 relsync 16400 unrecognized id -7"},
		{"INPLACE", xlog.V18, 0x70, inplace18NoInit, nil, "off: 8; inval msgs: relcache 16385"},
		{"INPLACE", xlog.V18, 0x70, inplace18None, nil, "off: 8"},

		// DELETE|0x80 is UNKNOWN to identify, but heap_desc masks the opcode.
		{"DELETE|INIT", xlog.V15, 0x90, delNoBits, nil, "off 5 flags 0x01 "},
	})
}

// TestHeapDescNoAlloc checks that describing a record appends without
// allocating once dst has room.
func TestHeapDescNoAlloc(t *testing.T) {
	prune := heapTestRecord(xlog.V18, xlog.RmgrHeap2, 0x20,
		heapTestBytes(uint8(1), uint8(0xF8), uint32(555)),
		heapTestBytes(uint16(1), 2, uint32(0), uint16(1), uint16(2048), uint8(0), 1, uint16(2),
			uint16(1), uint16(3), uint16(4), uint16(1), uint16(6), uint16(2), uint16(7), uint16(8),
			uint16(10), uint16(11)))
	upd := heapTestRecord(xlog.V13, xlog.RmgrHeap, 0x20,
		heapTestBytes(uint32(7), uint16(2), uint8(0x01), uint8(0x10), uint32(0), uint16(9)), nil)
	dst := make([]byte, 0, 1024)
	for _, rec := range []*decode.Record{prune, upd} {
		if n := testing.AllocsPerRun(100, func() { dst = AppendDesc(dst[:0], rec) }); n != 0 {
			t.Errorf("%d allocations per description", int(n))
		}
	}
}

func TestHeapSummarize(t *testing.T) {
	upd := heapTestRecord(xlog.V13, xlog.RmgrHeap, 0x40,
		heapTestBytes(uint32(7), uint16(2), uint8(0x01), uint8(0x10), uint32(8), uint16(9)), nil)
	s, ok := HeapSummarize(upd)
	if want := (HeapSummary{Offset: 2, NewOffset: 9, Xmax: 7, NewXmax: 8, Flags: 0x10, Infobits: 0x01}); !ok || s != want {
		t.Errorf("HOT_UPDATE: %+v, want %+v", s, want)
	}
	clean := heapTestRecord(xlog.V13, xlog.RmgrHeap2, 0x10, heapTestBytes(uint32(50), uint16(1), uint16(2)),
		heapTestBytes(uint16(2), uint16(5), uint16(7), uint16(8), uint16(10), uint16(11), uint16(12)))
	s, _ = HeapSummarize(clean)
	if want := (HeapSummary{ConflictXID: 50, HasConflictXID: true, NRedirected: 1, NDead: 2, NUnused: 3}); s != want {
		t.Errorf("CLEAN: %+v, want %+v", s, want)
	}
	prune := heapTestRecord(xlog.V17, xlog.RmgrHeap2, 0x20, heapTestBytes(uint8(1), uint8(0xFA), uint32(555)),
		heapTestBytes(uint16(1), 2, uint32(0), uint16(1), uint16(2048), uint8(0), 1, uint16(2),
			uint16(1), uint16(3), uint16(4), uint16(1), uint16(6), uint16(2), uint16(7), uint16(8),
			uint16(10), uint16(11)))
	s, _ = HeapSummarize(prune)
	if want := (HeapSummary{Flags: 0xFA, ConflictXID: 555, HasConflictXID: true, IsCatalogRel: true,
		NRedirected: 1, NDead: 1, NUnused: 2, NFrozen: 2}); s != want {
		t.Errorf("PRUNE_VACUUM_SCAN: %+v, want %+v", s, want)
	}
	freeze16 := heapTestRecord(xlog.V16, xlog.RmgrHeap2, 0x30, heapTestBytes(uint32(200), uint16(2), uint8(1), 1),
		heapTestBytes(uint32(0), uint16(2), uint16(2304), uint8(0), 1, uint16(2),
			uint32(300), uint16(3), uint16(256), uint8(0), 1, uint16(1), uint16(1), uint16(4), uint16(9)))
	s, _ = HeapSummarize(freeze16)
	if want := (HeapSummary{ConflictXID: 200, HasConflictXID: true, IsCatalogRel: true, NFrozen: 3}); s != want {
		t.Errorf("FREEZE_PAGE 16: %+v, want %+v", s, want)
	}
	if _, ok := HeapSummarize(heapTestRecord(xlog.V18, xlog.RmgrBtree, 0, nil, nil)); ok {
		t.Error("HeapSummarize accepted a Btree record")
	}
}
