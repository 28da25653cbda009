package rmgr

import (
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Transaction descriptions, mirroring xact_desc and ParseCommitRecord,
// ParseAbortRecord and ParsePrepareRecord in
// src/backend/access/rmgrdesc/xactdesc.c, with the payloads of
// src/include/access/xact.h.
//
// Sources per version:
//   - 13, 15, 18: xactdesc.c and xact.h of 13.16, 15.18 and 18.6.
//   - 17: the format strings of pg_waldump 17.12 (Debian binary) and the
//     17.12 server headers (xl_xact_stats_item still 12 bytes).
//   - 10: the xactdesc.c of a 10.0-based fork (Tencent TBase, its own
//     additions ignored), the rodata strings of the 10.23 server binary and
//     the disassembly of its (exported) ParseAbortRecord, which tests only
//     SUBXACTS, RELFILENODES and TWOPHASE.
//   - 11, 12, 14, 16: rodata strings and disassembly of xact_desc,
//     xact_desc_commit/abort/prepare and ParseCommitRecord/ParseAbortRecord
//     in the postgres server binaries 11.22, 12.22, 14.23 and 16.14.
//
// Verified against PostgreSQL's own output: pg_waldump 13.16, 15.18 and 18.6
// over the corpora and fixtures (byte-identical lines); the servers' own
// rm_desc over real WAL of 10.23, 11.22, 12.22 and 14.23 (a C function in the
// server calling XLogReadRecord and the *_desc functions) and of 15.18,
// 16.14, 17.10 and 18.4 (pg_walinspect), kept in
// testdata/xlog-group-desc-oracle.tsv for the versions without a corpus.
//
// Differences:
//   - xl_xact_xinfo sub-records, in this order: DBINFO, SUBXACTS,
//     RELFILENODES (RELFILELOCATORS), DROPPED_STATS (15+), INVALS (commit
//     only), TWOPHASE (+ NUL-terminated GID when HAS_GID, 11+), ORIGIN
//     (unaligned lsn + timestamp). The abort parser of 10 reads no DBINFO and
//     no ORIGIN; 11+ read both.
//   - Dropped-stats items: {int kind, Oid dboid, Oid objoid} (12 bytes,
//     " %d/%u/%u") in 15-17; {int kind, Oid dboid, uint32 objid_lo,
//     objid_hi} (16 bytes, " %d/%u/%llu" of hi<<32|lo) in 18.
//   - COMMIT: "; apply_feedback" from 15 on; ABORT: origin and dropped stats
//     from 15 on (the origin before the stats).
//   - PREPARE: printed from 13 on ("gid %s: <time>..."); 10-12 print nothing.
//     xl_xact_prepare is 64 bytes in 13-14 and 72 in 15+ (ncommitstats and
//     nabortstats); 15+ also print the record's replication origin.
//   - INVALIDATION (0x60): 14+; earlier versions have no such branch.

const (
	xactHasInfo = 0x80 // XLOG_XACT_HAS_INFO

	xactXinfoDBInfo       = 1 << 0 // XACT_XINFO_HAS_DBINFO
	xactXinfoSubxacts     = 1 << 1 // XACT_XINFO_HAS_SUBXACTS
	xactXinfoRelfilenodes = 1 << 2 // XACT_XINFO_HAS_RELFILENODES / _RELFILELOCATORS
	xactXinfoInvals       = 1 << 3 // XACT_XINFO_HAS_INVALS
	xactXinfoTwophase     = 1 << 4 // XACT_XINFO_HAS_TWOPHASE
	xactXinfoOrigin       = 1 << 5 // XACT_XINFO_HAS_ORIGIN
	xactXinfoGID          = 1 << 7 // XACT_XINFO_HAS_GID, 11+
	xactXinfoDroppedStats = 1 << 8 // XACT_XINFO_HAS_DROPPED_STATS, 15+

	xactCompletionApplyFeedback = 1 << 29 // XACT_COMPLETION_APPLY_FEEDBACK
	xactCompletionRelcacheFile  = 1 << 30 // XACT_COMPLETION_UPDATE_RELCACHE_FILE
	xactCompletionForceSync     = 1 << 31 // XACT_COMPLETION_FORCE_SYNC_COMMIT

	xactRelSize = 12 // sizeof(RelFileNode) / sizeof(RelFileLocator)
	xactGIDSize = 200
)

// xactStatsItemSize is sizeof(xl_xact_stats_item) in version v.
func xactStatsItemSize(v xlog.Version) int {
	if v >= xlog.V18 {
		return 16
	}
	return 12
}

// xactParsed is xl_xact_parsed_commit / xl_xact_parsed_abort /
// xl_xact_parsed_prepare, with the arrays left as the bytes the record holds.
type xactParsed struct {
	xactTime    int64
	xinfo       uint32
	dbID, tsID  uint32
	nsubxacts   int32
	subxacts    []byte // 4-byte xids
	nrels       int32
	rels        []byte // 12-byte relfilenodes
	nabortrels  int32  // PREPARE
	abortrels   []byte // PREPARE
	nstats      int32
	stats       []byte
	nabortstats int32  // PREPARE
	abortstats  []byte // PREPARE
	nmsgs       int32
	msgs        []byte // 16-byte invalidation messages
	twophaseXID uint32
	gid         []byte
	originLSN   uint64
	originTS    int64
	initFile    bool // PREPARE: initfileinval
	complete    bool // the record held everything its header announced
}

// xactArray takes an array of n items of size bytes from r: as many as r
// holds; a negative count or a short array makes r fail.
func xactArray(r *dataReader, n int32, size int) []byte {
	if !r.ok() {
		return nil
	}
	if n < 0 {
		r.need(-1)
		return nil
	}
	items := standbyItems(r.rest(), int64(n), size)
	r.skip(len(items))
	if int64(len(items)) < int64(n)*int64(size) {
		r.need(-1)
	}
	return items
}

// xactParse mirrors ParseCommitRecord (abort false) and ParseAbortRecord
// (abort true) of version v.
func xactParse(v xlog.Version, info uint8, data []byte, abort bool, p *xactParsed) {
	r := newDataReader(data)
	p.xactTime = r.i64()
	if info&xactHasInfo != 0 {
		p.xinfo = r.u32()
	}
	x := p.xinfo
	if x&xactXinfoDBInfo != 0 && (!abort || v >= xlog.V11) {
		p.dbID = r.u32()
		p.tsID = r.u32()
	}
	if x&xactXinfoSubxacts != 0 {
		p.nsubxacts = r.i32()
		p.subxacts = xactArray(&r, p.nsubxacts, 4)
	}
	if x&xactXinfoRelfilenodes != 0 {
		p.nrels = r.i32()
		p.rels = xactArray(&r, p.nrels, xactRelSize)
	}
	if x&xactXinfoDroppedStats != 0 && v >= xlog.V15 {
		p.nstats = r.i32()
		p.stats = xactArray(&r, p.nstats, xactStatsItemSize(v))
	}
	if x&xactXinfoInvals != 0 && !abort {
		p.nmsgs = r.i32()
		p.msgs = xactArray(&r, p.nmsgs, standbyInvalMsgSize)
	}
	if x&xactXinfoTwophase != 0 {
		p.twophaseXID = r.u32()
		if x&xactXinfoGID != 0 && v >= xlog.V11 && r.ok() {
			rest := r.rest()
			n := 0
			for n < len(rest) && rest[n] != 0 {
				n++
			}
			p.gid = rest[:n]
			if n > xactGIDSize-1 {
				p.gid = rest[:xactGIDSize-1] // strlcpy into char[GIDSIZE]
			}
			r.skip(n + 1)
		}
	}
	if x&xactXinfoOrigin != 0 && (!abort || v >= xlog.V11) {
		p.originLSN = r.u64()
		p.originTS = r.i64()
	}
	p.complete = r.ok()
}

// xactParsePrepare mirrors ParsePrepareRecord (13+ layout; 11 and 12 share
// the 13-14 header, 10's is 48 bytes with another magic (xactstate reads
// it); 10-12 print nothing, so none of them is parsed here).
func xactParsePrepare(v xlog.Version, data []byte, p *xactParsed) {
	r := newDataReader(data)
	r.skip(8) // magic, total_len
	p.twophaseXID = r.u32()
	p.dbID = r.u32()
	p.xactTime = r.i64()
	r.skip(4) // owner
	p.nsubxacts = r.i32()
	p.nrels = r.i32()
	p.nabortrels = r.i32()
	if v >= xlog.V15 {
		p.nstats = r.i32()
		p.nabortstats = r.i32()
	}
	p.nmsgs = r.i32()
	p.initFile = r.u8() != 0
	r.align(2)
	gidlen := int(r.u16())
	r.align(8)
	p.originLSN = r.u64()
	p.originTS = r.i64()
	// The header is MAXALIGNed (64 bytes in 13-14, 72 in 15+), and so is
	// every array after it.
	if !r.ok() {
		return
	}
	gid := r.rest()
	if len(gid) > gidlen {
		gid = gid[:gidlen]
	}
	if len(gid) > xactGIDSize {
		gid = gid[:xactGIDSize]
	}
	for i, c := range gid {
		if c == 0 {
			gid = gid[:i]
			break
		}
	}
	p.gid = gid
	r.skip(gidlen)
	r.align(8)
	p.subxacts = xactArray(&r, p.nsubxacts, 4)
	r.align(8)
	p.rels = xactArray(&r, p.nrels, xactRelSize)
	r.align(8)
	p.abortrels = xactArray(&r, p.nabortrels, xactRelSize)
	r.align(8)
	if v >= xlog.V15 {
		p.stats = xactArray(&r, p.nstats, xactStatsItemSize(v))
		r.align(8)
		p.abortstats = xactArray(&r, p.nabortstats, xactStatsItemSize(v))
		r.align(8)
	}
	p.msgs = xactArray(&r, p.nmsgs, standbyInvalMsgSize)
	p.complete = r.ok()
}

// xactAppendRelations mirrors xact_desc_relations ("; %s:" and relpathperm
// of each; 10-12 spell "; rels:" out, with the same result).
func xactAppendRelations(dst []byte, v xlog.Version, label string, n int32, rels []byte) []byte {
	if n <= 0 {
		return dst
	}
	dst = append(dst, "; "...)
	dst = append(dst, label...)
	dst = append(dst, ':')
	for i := 0; i+xactRelSize <= len(rels); i += xactRelSize {
		dst = append(dst, ' ')
		dst = appendRelPath(dst, v, xactRel(rels, i), decode.ForkMain)
	}
	return dst
}

func xactRel(b []byte, off int) decode.RelFileLocator {
	return decode.RelFileLocator{
		SpcOID:    xlogLE32(b, off),
		DBOID:     xlogLE32(b, off+4),
		RelNumber: xlogLE32(b, off+8),
	}
}

// xactAppendSubxacts mirrors xact_desc_subxacts.
func xactAppendSubxacts(dst []byte, n int32, xids []byte) []byte {
	if n <= 0 {
		return dst
	}
	dst = append(dst, "; subxacts:"...)
	return standbyAppendXids(dst, xids)
}

// xactAppendStats mirrors xact_desc_stats (15+).
func xactAppendStats(dst []byte, v xlog.Version, label string, n int32, items []byte) []byte {
	if n <= 0 {
		return dst
	}
	dst = append(dst, "; "...)
	dst = append(dst, label...)
	dst = append(dst, "dropped stats:"...)
	size := xactStatsItemSize(v)
	for i := 0; i+size <= len(items); i += size {
		dst = append(dst, ' ')
		dst = appendInt(dst, int64(int32(xlogLE32(items, i))))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(xlogLE32(items, i+4)))
		dst = append(dst, '/')
		objid := uint64(xlogLE32(items, i+8))
		if size == 16 {
			objid |= uint64(xlogLE32(items, i+12)) << 32
		}
		dst = appendUint(dst, objid)
	}
	return dst
}

func xactAppendOrigin(dst []byte, origin uint16, lsn uint64, ts int64) []byte {
	dst = append(dst, "; origin: node "...)
	dst = appendUint(dst, uint64(origin))
	dst = append(dst, ", lsn "...)
	dst = xlog.LSN(lsn).Append(dst)
	dst = append(dst, ", at "...)
	return appendTimestamptz(dst, ts)
}

func xactDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	info := rec.Header.Info
	data := rec.MainData
	var origin uint16
	if rec.HasOrigin {
		origin = rec.Origin
	}
	switch info & xactOpMask {
	case xactCommit, xactCommitPrepared:
		var p xactParsed
		xactParse(v, info, data, false, &p)
		if p.twophaseXID != 0 {
			dst = appendUint(dst, uint64(p.twophaseXID))
			dst = append(dst, ": "...)
		}
		dst = appendTimestamptz(dst, p.xactTime)
		dst = xactAppendRelations(dst, v, "rels", p.nrels, p.rels)
		dst = xactAppendSubxacts(dst, p.nsubxacts, p.subxacts)
		if v >= xlog.V15 {
			dst = xactAppendStats(dst, v, "", p.nstats, p.stats)
		}
		dst = standbyAppendInvalidations(dst, v, p.nmsgs, p.msgs, p.dbID, p.tsID, p.xinfo&xactCompletionRelcacheFile != 0)
		if v >= xlog.V15 && p.xinfo&xactCompletionApplyFeedback != 0 {
			dst = append(dst, "; apply_feedback"...)
		}
		if p.xinfo&xactCompletionForceSync != 0 {
			dst = append(dst, "; sync"...)
		}
		if p.xinfo&xactXinfoOrigin != 0 {
			dst = xactAppendOrigin(dst, origin, p.originLSN, p.originTS)
		}
		return dst

	case xactAbort, xactAbortPrepared:
		var p xactParsed
		xactParse(v, info, data, true, &p)
		if p.twophaseXID != 0 {
			dst = appendUint(dst, uint64(p.twophaseXID))
			dst = append(dst, ": "...)
		}
		dst = appendTimestamptz(dst, p.xactTime)
		dst = xactAppendRelations(dst, v, "rels", p.nrels, p.rels)
		dst = xactAppendSubxacts(dst, p.nsubxacts, p.subxacts)
		if v >= xlog.V15 {
			if p.xinfo&xactXinfoOrigin != 0 {
				dst = xactAppendOrigin(dst, origin, p.originLSN, p.originTS)
			}
			dst = xactAppendStats(dst, v, "", p.nstats, p.stats)
		}
		return dst

	case xactPrepare:
		if v < xlog.V13 {
			return dst // 10-12: xact_desc has no PREPARE branch
		}
		var p xactParsed
		xactParsePrepare(v, data, &p)
		dst = append(dst, "gid "...)
		dst = append(dst, p.gid...)
		dst = append(dst, ": "...)
		dst = appendTimestamptz(dst, p.xactTime)
		dst = xactAppendRelations(dst, v, "rels(commit)", p.nrels, p.rels)
		dst = xactAppendRelations(dst, v, "rels(abort)", p.nabortrels, p.abortrels)
		if v >= xlog.V15 {
			dst = xactAppendStats(dst, v, "commit ", p.nstats, p.stats)
			dst = xactAppendStats(dst, v, "abort ", p.nabortstats, p.abortstats)
		}
		dst = xactAppendSubxacts(dst, p.nsubxacts, p.subxacts)
		// ParsePrepareRecord leaves tsId 0.
		dst = standbyAppendInvalidations(dst, v, p.nmsgs, p.msgs, p.dbID, 0, p.initFile)
		if v >= xlog.V15 && origin != 0 {
			dst = xactAppendOrigin(dst, origin, p.originLSN, p.originTS)
		}
		return dst

	case xactAssignment:
		// xl_xact_assignment: xtop @0, int nsubxacts @4, xsub @8.
		var h [8]byte
		copy(h[:], data)
		dst = append(dst, "xtop "...)
		dst = appendUint(dst, uint64(xlogLE32(h[:], 0)))
		dst = append(dst, ": subxacts:"...)
		var xsub []byte
		if len(data) > 8 {
			xsub = data[8:]
		}
		return standbyAppendXids(dst, standbyItems(xsub, int64(int32(xlogLE32(h[:], 4))), 4))

	case xactInvalidations:
		if v < xlog.V14 {
			return dst
		}
		// xl_xact_invals: int nmsgs @0, msgs @4.
		r := newDataReader(data)
		n := r.i32()
		return standbyAppendInvalidations(dst, v, n, r.rest(), 0, 0, false)
	}
	return dst
}

// XactEndInfo describes a transaction's end: a COMMIT, ABORT,
// COMMIT_PREPARED or ABORT_PREPARED record (xl_xact_commit / xl_xact_abort
// and their xinfo sub-records, src/include/access/xact.h).
type XactEndInfo struct {
	Commit      bool      // COMMIT or COMMIT_PREPARED
	Prepared    bool      // COMMIT_PREPARED or ABORT_PREPARED
	Time        time.Time // xact_time, in UTC
	XID         xlog.XID  // the record's xl_xid, or the prepared transaction's xid for *_PREPARED
	Subxacts    []xlog.XID
	DroppedRels []decode.RelFileLocator
	// DroppedStats are the statistics objects dropped with the commit or
	// abort (15+): xl_xact_stats_item, in the record's order.
	DroppedStats  []DroppedStat
	Invalidations int // number of invalidation messages (commits only)
	GID           string
	HasOrigin     bool
	OriginLSN     xlog.LSN
	OriginTime    time.Time // in UTC; zero without an origin
}

// DroppedStat mirrors xl_xact_stats_item (15+): a statistics entry dropped
// at commit or abort. Kind is PgStat_Kind (2: a relation, whose ObjID is the
// relation's OID); ObjID is 64 bits from 18.
type DroppedStat struct {
	Kind  int32
	DBOID uint32
	ObjID uint64
}

// StatsKindRelation is PGSTAT_KIND_RELATION (15+).
const StatsKindRelation = 2

// XactEnd decodes a COMMIT, ABORT, COMMIT_PREPARED or ABORT_PREPARED record.
// ok is false for any other record or a payload shorter than its header
// announces.
func XactEnd(rec *decode.Record) (XactEndInfo, bool) {
	if rec == nil || rec.Record == nil || rec.Header.Rmid != xlog.RmgrTransaction {
		return XactEndInfo{}, false
	}
	var e XactEndInfo
	switch rec.Header.Info & xactOpMask {
	case xactCommit:
		e.Commit = true
	case xactCommitPrepared:
		e.Commit, e.Prepared = true, true
	case xactAbort:
	case xactAbortPrepared:
		e.Prepared = true
	default:
		return XactEndInfo{}, false
	}
	var p xactParsed
	xactParse(rec.Version, rec.Header.Info, rec.MainData, !e.Commit, &p)
	if !p.complete {
		return XactEndInfo{}, false
	}
	e.Time = xlogTimestampTzTime(p.xactTime)
	e.XID = rec.Header.XID
	if e.Prepared {
		e.XID = xlog.XID(p.twophaseXID)
	}
	if n := len(p.subxacts) / 4; n > 0 {
		e.Subxacts = make([]xlog.XID, n)
		for i := range e.Subxacts {
			e.Subxacts[i] = xlog.XID(xlogLE32(p.subxacts, 4*i))
		}
	}
	if n := len(p.rels) / xactRelSize; n > 0 {
		e.DroppedRels = make([]decode.RelFileLocator, n)
		for i := range e.DroppedRels {
			e.DroppedRels[i] = xactRel(p.rels, xactRelSize*i)
		}
	}
	if size := xactStatsItemSize(rec.Version); p.nstats > 0 && size > 0 {
		for i := 0; i+size <= len(p.stats); i += size {
			st := DroppedStat{Kind: int32(xlogLE32(p.stats, i)), DBOID: xlogLE32(p.stats, i+4), ObjID: uint64(xlogLE32(p.stats, i+8))}
			if size == 16 {
				st.ObjID |= uint64(xlogLE32(p.stats, i+12)) << 32
			}
			e.DroppedStats = append(e.DroppedStats, st)
		}
	}
	if p.nmsgs > 0 {
		e.Invalidations = int(p.nmsgs)
	}
	e.GID = string(p.gid)
	if p.xinfo&xactXinfoOrigin != 0 && (e.Commit || rec.Version >= xlog.V11) {
		e.HasOrigin = true
		e.OriginLSN = xlog.LSN(p.originLSN)
		e.OriginTime = xlogTimestampTzTime(p.originTS)
	}
	return e, true
}
