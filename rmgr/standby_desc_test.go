package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestStandbyDescVersions(t *testing.T) {
	const rm = xlog.RmgrStandby
	// xl_running_xacts: xcnt, subxcnt, subxid_overflow, nextXid,
	// oldestRunningXid, latestCompletedXid, xids[xcnt + subxcnt].
	running := func(overflow bool) []byte {
		return xlogTestLE(int32(2), int32(1), overflow, 3, uint32(10), uint32(9), uint32(8),
			uint32(9), uint32(11), uint32(12))
	}
	// standby_desc_running_xacts: "nextXid %u latestCompletedXid %u
	// oldestRunningXid %u", "; %d xacts:" " %u"...; 10-15 "; subxid ovf";
	// 16+ "; subxid overflowed" and "; %d subxacts:" " %u"....
	base := "nextXid 10 latestCompletedXid 8 oldestRunningXid 9; 2 xacts: 9 11"
	// xl_standby_locks: nlocks, {xid, dbOid, relOid}...: "xid %u db %u rel %u ".
	locks := xlogTestLE(int32(2), uint32(1), uint32(2), uint32(3), uint32(4), uint32(5), uint32(6))
	// xl_invalidations: dbId, tsId, relcacheInitFileInval, nmsgs, msgs[]; one
	// message of every id (catcache 3, catalog -1, relcache -2, smgr -3,
	// relmap -4, snapshot -5, relsync -6 (18+), and -7).
	msg := func(id int8, a, b uint32) []byte { return xlogTestLE(id, 3, a, b, 4) }
	inval := func(init bool) []byte {
		b := xlogTestLE(uint32(5), uint32(1663), init, 3, int32(8))
		for _, m := range [][]byte{msg(3, 5, 77), msg(-1, 5, 1259), msg(-2, 5, 16384), msg(-3, 0, 0),
			msg(-4, 5, 0), msg(-5, 5, 2608), msg(-6, 5, 16500), msg(-7, 0, 0)} {
			b = append(b, m...)
		}
		return b
	}
	msgs := "; inval msgs: catcache 3 catalog 1259 relcache 16384 smgr relmap db 5 snapshot 2608"
	xlogRunCases(t, []xlogTestCase{
		{xlog.V10, rm, 0x00, locks, "xid 1 db 2 rel 3 xid 4 db 5 rel 6 "},
		{xlog.V18, rm, 0x00, locks, "xid 1 db 2 rel 3 xid 4 db 5 rel 6 "},
		{xlog.V16, rm, 0x00, xlogTestLE(int32(0)), ""},

		{xlog.V10, rm, 0x10, running(true), base + "; subxid ovf"},
		{xlog.V14, rm, 0x10, running(false), base},
		{xlog.V15, rm, 0x10, running(true), base + "; subxid ovf"},
		{xlog.V16, rm, 0x10, running(true), base + "; subxid overflowed; 1 subxacts: 12"},
		{xlog.V17, rm, 0x10, running(false), base + "; 1 subxacts: 12"},
		{xlog.V18, rm, 0x10, xlogTestLE(int32(0), int32(0), false, 3, uint32(10), uint32(9), uint32(8)),
			"nextXid 10 latestCompletedXid 8 oldestRunningXid 9"},

		// standby_desc_invalidations: nothing for nmsgs <= 0; "; relcache init
		// file inval dbid %u tsid %u" when flagged; "; inval msgs:" then per
		// message " catcache %d", " catalog %u", " relcache %u", " smgr",
		// " relmap db %u", " snapshot %u", [18+ " relsync %u"], else
		// " unrecognized id %d".
		{xlog.V13, rm, 0x20, inval(false), msgs + " unrecognized id -6 unrecognized id -7"},
		{xlog.V17, rm, 0x20, inval(true), "; relcache init file inval dbid 5 tsid 1663" + msgs + " unrecognized id -6 unrecognized id -7"},
		{xlog.V18, rm, 0x20, inval(false), msgs + " relsync 16500 unrecognized id -7"},
		{xlog.V15, rm, 0x20, xlogTestLE(uint32(5), uint32(1663), true, 3, int32(0)), ""},
	})
}
