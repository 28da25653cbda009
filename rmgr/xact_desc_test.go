package rmgr

import (
	"reflect"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Transaction payloads per src/include/access/xact.h: xl_xact_commit /
// xl_xact_abort is TimestampTz xact_time, then with XLOG_XACT_HAS_INFO (0x80)
// a uint32 xinfo and the sub-records it announces, in the order dbinfo,
// subxacts, relfilenodes, dropped stats (15+), invals (commit only),
// twophase xid (+ GID 11+), origin.

var (
	xactTestAt      = time.Date(2023, 1, 2, 3, 4, 5, 0, time.UTC)
	xactTestOriginT = time.Date(2022, 12, 31, 23, 59, 58, 0, time.UTC)
)

// xactTestCommit is a COMMIT|HAS_INFO payload with every sub-record, for
// version v's layout (dropped stats 15+, 16-byte items in 18).
func xactTestCommit(v xlog.Version) []byte {
	ts, _ := xlogTestStamp(xactTestAt, 5)
	ots, _ := xlogTestStamp(xactTestOriginT, 0)
	xinfo := uint32(xactXinfoDBInfo | xactXinfoSubxacts | xactXinfoRelfilenodes | xactXinfoInvals |
		xactXinfoOrigin | xactCompletionApplyFeedback | xactCompletionRelcacheFile | xactCompletionForceSync)
	var stats []byte
	if v >= xlog.V15 {
		xinfo |= xactXinfoDroppedStats
		if v >= xlog.V18 {
			stats = xlogTestLE(int32(1), int32(2), uint32(5), uint32(2), uint32(1))
		} else {
			stats = xlogTestLE(int32(1), int32(2), uint32(5), uint32(16384))
		}
	}
	return xlogTestLE(ts, xinfo,
		uint32(5), uint32(1663), // dbinfo
		int32(2), uint32(801), uint32(802), // subxacts
		int32(2), uint32(1663), uint32(5), uint32(16384), uint32(1700), uint32(5), uint32(16390), // rels
		stats,
		int32(2), // invals
		int8(12), 3, uint32(5), uint32(0xDEADBEEF), 4,
		int8(-2), 3, uint32(5), uint32(16384), 4,
		uint64(0xABCDEF), ots) // origin, unaligned
}

// xactTestPrepare is a PREPARE payload (xl_xact_prepare, 64 bytes in 13-14,
// 72 in 15+, then the GID and the arrays, each MAXALIGNed).
func xactTestPrepare(v xlog.Version) []byte {
	ts, _ := xlogTestStamp(xactTestAt, 5)
	ots, _ := xlogTestStamp(xactTestOriginT, 0)
	hdr := xlogTestLE(uint32(0x57F94534), uint32(0), uint32(741), uint32(5), ts, uint32(10),
		int32(1), int32(1), int32(2)) // nsubxacts, ncommitrels, nabortrels
	if v >= xlog.V15 {
		hdr = append(hdr, xlogTestLE(int32(1), int32(2))...) // ncommitstats, nabortstats
	}
	hdr = append(hdr, xlogTestLE(int32(1), true, 1, uint16(3), uint64(0x1_00000010), ots)...)
	b := append(hdr, xlogTestLE("g1", uint8(0), 5)...) // gid "g1\0", MAXALIGN(3) = 8
	b = append(b, xlogTestLE(uint32(743), 4)...)
	b = append(b, xlogTestLE(uint32(1663), uint32(5), uint32(16397), 4)...)
	b = append(b, xlogTestLE(uint32(1663), uint32(5), uint32(16400), uint32(1663), uint32(5), uint32(16401))...)
	if v >= xlog.V15 {
		b = append(b, xlogTestLE(int32(2), uint32(5), uint32(16397), 4)...)
		b = append(b, xlogTestLE(int32(2), uint32(5), uint32(16400), int32(2), uint32(5), uint32(16401))...)
	}
	return append(b, xlogTestLE(int8(-5), 3, uint32(5), uint32(2608), 4)...)
}

func TestXactDescVersions(t *testing.T) {
	const rm = xlog.RmgrTransaction
	_, stamp := xlogTestStamp(xactTestAt, 5)
	_, ostamp := xlogTestStamp(xactTestOriginT, 0)
	// xact_desc_commit: ["%u: "] time; "; rels:" " %s"...; "; subxacts:"
	// " %u"...; [15+ "; dropped stats:" " %d/%u/%u" (18: %d/%u/%llu)];
	// standby_desc_invalidations; [15+ "; apply_feedback"]; "; sync";
	// "; origin: node %u, lsn %X/%X, at %s".
	head := stamp + "; rels: base/5/16384 pg_tblspc/1700/"
	tail := "; relcache init file inval dbid 5 tsid 1663; inval msgs: catcache 12 relcache 16384"
	origin := "; origin: node 0, lsn 0/ABCDEF, at " + ostamp // no record origin: node 0

	// ABORT|HAS_INFO with dbinfo, subxacts, origin: 10's ParseAbortRecord
	// reads no dbinfo (so it takes dbId as nsubxacts) and no origin.
	abortTS, _ := xlogTestStamp(xactTestAt, 5)
	abortDB := xlogTestLE(abortTS, uint32(xactXinfoDBInfo|xactXinfoSubxacts|xactXinfoOrigin),
		uint32(1), uint32(1663), int32(1), uint32(900), uint64(0x10), abortTS)
	// ABORT_PREPARED|HAS_INFO: subxacts, rels, stats (15+), twophase, origin.
	abortPrep := func(v xlog.Version) []byte {
		xinfo := uint32(xactXinfoSubxacts | xactXinfoRelfilenodes | xactXinfoTwophase | xactXinfoOrigin)
		var stats []byte
		if v >= xlog.V15 {
			xinfo |= xactXinfoDroppedStats
			stats = xlogTestLE(int32(1), int32(2), uint32(5), uint32(16400))
		}
		return xlogTestLE(abortTS, xinfo, int32(1), uint32(743), int32(1), uint32(1663), uint32(5), uint32(16400),
			stats, uint32(742), uint64(0xABCE80), abortTS)
	}
	// COMMIT_PREPARED|HAS_INFO: twophase with a GID (11+), then origin.
	commitPrepGID := xlogTestLE(abortTS, uint32(xactXinfoTwophase|xactXinfoGID|xactXinfoOrigin),
		uint32(741), "pg_gid_1", uint8(0), uint64(0x2_00000020), abortTS)
	commitPrep10 := xlogTestLE(abortTS, uint32(xactXinfoTwophase|xactXinfoOrigin),
		uint32(741), uint64(0x2_00000020), abortTS)
	// xl_xact_assignment: xtop, nsubxacts, xsub[].
	assignment := xlogTestLE(uint32(808), int32(3), uint32(809), uint32(810), uint32(811))
	// xl_xact_invals: nmsgs, msgs[] (14+).
	invals := xlogTestLE(int32(2), int8(7), 3, uint32(0), uint32(0), 4, int8(-5), 3, uint32(5), uint32(2608), 4)
	// xact_desc_prepare (13+): "gid %s: " time; rels(commit); rels(abort);
	// [15+ commit/abort dropped stats]; subxacts; invalidations with
	// dbId = database, tsId = 0, initfileinval; [15+ record origin].
	prep := "gid g1: " + stamp + "; rels(commit): base/5/16397; rels(abort): base/5/16400 base/5/16401"
	prepStats := "; commit dropped stats: 2/5/16397; abort dropped stats: 2/5/16400 2/5/16401"
	prepTail := "; subxacts: 743; relcache init file inval dbid 5 tsid 0; inval msgs: snapshot 2608"

	xlogRunCases(t, []xlogTestCase{
		{xlog.V10, rm, 0x80, xactTestCommit(xlog.V10), head + "PG_10_201707211/5/16390; subxacts: 801 802" + tail + "; sync" + origin},
		{xlog.V14, rm, 0x80, xactTestCommit(xlog.V14), head + "PG_14_202107181/5/16390; subxacts: 801 802" + tail + "; sync" + origin},
		{xlog.V15, rm, 0x80, xactTestCommit(xlog.V15), head + "PG_15_202209061/5/16390; subxacts: 801 802; dropped stats: 2/5/16384" + tail + "; apply_feedback; sync" + origin},
		{xlog.V17, rm, 0x80, xactTestCommit(xlog.V17), head + "PG_17_202406281/5/16390; subxacts: 801 802; dropped stats: 2/5/16384" + tail + "; apply_feedback; sync" + origin},
		{xlog.V18, rm, 0x80, xactTestCommit(xlog.V18), head + "PG_18_202506291/5/16390; subxacts: 801 802; dropped stats: 2/5/4294967298" + tail + "; apply_feedback; sync" + origin},
		// Without HAS_INFO only the time is there.
		{xlog.V12, rm, 0x00, xlogTestLE(abortTS), stamp},

		{xlog.V10, rm, 0xA0, abortDB, stamp + "; subxacts: 1663"},
		{xlog.V11, rm, 0xA0, abortDB, stamp + "; subxacts: 900"},
		{xlog.V14, rm, 0xA0, abortDB, stamp + "; subxacts: 900"},
		{xlog.V15, rm, 0xA0, abortDB, stamp + "; subxacts: 900; origin: node 0, lsn 0/10, at " + stamp},

		// xact_desc_abort: ["%u: "] time; rels; subxacts; [15+ origin; dropped stats].
		{xlog.V14, rm, 0xC0, abortPrep(xlog.V14), "742: " + stamp + "; rels: base/5/16400; subxacts: 743"},
		{xlog.V16, rm, 0xC0, abortPrep(xlog.V16), "742: " + stamp + "; rels: base/5/16400; subxacts: 743; origin: node 0, lsn 0/ABCE80, at " + stamp + "; dropped stats: 2/5/16400"},

		{xlog.V10, rm, 0xB0, commitPrep10, "741: " + stamp + "; origin: node 0, lsn 2/20, at " + stamp},
		{xlog.V11, rm, 0xB0, commitPrepGID, "741: " + stamp + "; origin: node 0, lsn 2/20, at " + stamp},
		{xlog.V16, rm, 0xB0, commitPrepGID, "741: " + stamp + "; origin: node 0, lsn 2/20, at " + stamp},

		{xlog.V10, rm, 0x10, xactTestPrepare(xlog.V13), ""},
		{xlog.V12, rm, 0x10, xactTestPrepare(xlog.V13), ""},
		{xlog.V13, rm, 0x10, xactTestPrepare(xlog.V13), prep + prepTail},
		{xlog.V14, rm, 0x10, xactTestPrepare(xlog.V14), prep + prepTail},
		{xlog.V16, rm, 0x10, xactTestPrepare(xlog.V16), prep + prepStats + prepTail},

		{xlog.V10, rm, 0x50, assignment, "xtop 808: subxacts: 809 810 811"},
		{xlog.V18, rm, 0x50, assignment, "xtop 808: subxacts: 809 810 811"},

		{xlog.V13, rm, 0x60, invals, ""},
		{xlog.V14, rm, 0x60, invals, "; inval msgs: catcache 7 snapshot 2608"},
		{xlog.V16, rm, 0x60, xlogTestLE(int32(0)), ""},
	})

	// PREPARE prints the record's replication origin from 15 on.
	for _, c := range []struct {
		v    xlog.Version
		want string
	}{
		{xlog.V14, prep + prepTail},
		{xlog.V15, prep + prepStats + prepTail + "; origin: node 4, lsn 1/10, at " + ostamp},
	} {
		rec := xlogTestRecord(c.v, rm, 0x10, xactTestPrepare(c.v))
		rec.Origin, rec.HasOrigin = 4, true
		if got := string(AppendDesc(nil, rec)); got != c.want {
			t.Errorf("PREPARE with origin, %v:\n got: %q\nwant: %q", c.v, got, c.want)
		}
	}
	// COMMIT prints the record's origin id as the node.
	rec := xlogTestRecord(xlog.V13, rm, 0x80, xactTestCommit(xlog.V13))
	rec.Origin, rec.HasOrigin = 7, true
	if got, want := string(AppendDesc(nil, rec)), head+"PG_13_202007201/5/16390; subxacts: 801 802"+tail+"; sync; origin: node 7, lsn 0/ABCDEF, at "+ostamp; got != want {
		t.Errorf("COMMIT with origin:\n got: %q\nwant: %q", got, want)
	}
}

func TestXactEnd(t *testing.T) {
	rec := xlogTestRecord(xlog.V18, xlog.RmgrTransaction, 0x80, xactTestCommit(xlog.V18))
	e, ok := XactEnd(rec)
	want := XactEndInfo{
		Commit:        true,
		Time:          xactTestAt.Add(5 * time.Microsecond),
		XID:           1234,
		Subxacts:      []xlog.XID{801, 802},
		DroppedRels:   []decode.RelFileLocator{{SpcOID: 1663, DBOID: 5, RelNumber: 16384}, {SpcOID: 1700, DBOID: 5, RelNumber: 16390}},
		DroppedStats:  []DroppedStat{{Kind: StatsKindRelation, DBOID: 5, ObjID: 1<<32 | 2}}, // 18: objid_lo, objid_hi
		Invalidations: 2,
		HasOrigin:     true,
		OriginLSN:     0xABCDEF,
		OriginTime:    xactTestOriginT,
	}
	if !ok || !reflect.DeepEqual(e, want) {
		t.Errorf("XactEnd(COMMIT) = %+v, %v\nwant %+v", e, ok, want)
	}
	// 15 to 17: 12-byte items; 14: none.
	for v, stats := range map[xlog.Version][]DroppedStat{xlog.V15: {{Kind: StatsKindRelation, DBOID: 5, ObjID: 16384}}, xlog.V14: nil} {
		e, ok := XactEnd(xlogTestRecord(v, xlog.RmgrTransaction, 0x80, xactTestCommit(v)))
		if !ok || !reflect.DeepEqual(e.DroppedStats, stats) || len(e.DroppedRels) != 2 || e.Invalidations != 2 {
			t.Errorf("XactEnd(COMMIT), %v: dropped stats %+v, rels %d, invals %d; want %+v, 2, 2", v, e.DroppedStats, len(e.DroppedRels), e.Invalidations, stats)
		}
	}

	ts, _ := xlogTestStamp(xactTestAt, 0)
	rec = xlogTestRecord(xlog.V16, xlog.RmgrTransaction, 0xB0, xlogTestLE(ts,
		uint32(xactXinfoTwophase|xactXinfoGID), uint32(741), "gx", uint8(0)))
	rec.Header.XID = 0
	e, ok = XactEnd(rec)
	want = XactEndInfo{Commit: true, Prepared: true, Time: xactTestAt, XID: 741, GID: "gx"}
	if !ok || !reflect.DeepEqual(e, want) {
		t.Errorf("XactEnd(COMMIT_PREPARED) = %+v, %v", e, ok)
	}

	rec = xlogTestRecord(xlog.V13, xlog.RmgrTransaction, 0x20, xlogTestLE(ts))
	e, ok = XactEnd(rec)
	want = XactEndInfo{Time: xactTestAt, XID: 1234}
	if !ok || !reflect.DeepEqual(e, want) {
		t.Errorf("XactEnd(ABORT) = %+v, %v", e, ok)
	}

	for _, c := range []struct {
		info uint8
		data []byte
	}{
		{0x10, xactTestPrepare(xlog.V15)}, // PREPARE
		{0x50, xlogTestLE(uint32(1), int32(0))},
		{0x80, xlogTestLE(ts, uint32(xactXinfoSubxacts), int32(3), uint32(1))}, // short
		{0x00, xlogTestLE(uint32(1))},                                          // short
	} {
		if _, ok := XactEnd(xlogTestRecord(xlog.V15, xlog.RmgrTransaction, c.info, c.data)); ok {
			t.Errorf("XactEnd(info %#x, %d bytes) is ok", c.info, len(c.data))
		}
	}
	if _, ok := XactEnd(xlogTestRecord(xlog.V15, xlog.RmgrXLOG, 0x00, xlogTestLE(ts))); ok {
		t.Error("XactEnd of an XLOG record is ok")
	}
}

// TestXactDescNoAlloc checks that describing a commit does not allocate.
func TestXactDescNoAlloc(t *testing.T) {
	recs := []*decode.Record{
		xlogTestRecord(xlog.V18, xlog.RmgrTransaction, 0x80, xactTestCommit(xlog.V18)),
		xlogTestRecord(xlog.V15, xlog.RmgrTransaction, 0x10, xactTestPrepare(xlog.V15)),
		xlogTestRecord(xlog.V17, xlog.RmgrXLOG, 0x10, xlogTestCheckpoint12(1)),
		xlogTestRecord(xlog.V16, xlog.RmgrStandby, 0x10, xlogTestLE(int32(2), int32(1), true, 3, uint32(10), uint32(9), uint32(8), uint32(9), uint32(11), uint32(12))),
	}
	buf := make([]byte, 0, 4096)
	for _, rec := range recs {
		if n := testing.AllocsPerRun(50, func() { buf = AppendDesc(buf[:0], rec) }); n != 0 {
			t.Errorf("%v rmid %d info %#x: %v allocations per description", rec.Version, rec.Header.Rmid, rec.Header.Info, n)
		}
	}
}
