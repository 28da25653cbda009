package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Standby descriptions, mirroring standby_desc and standby_desc_invalidations
// in src/backend/access/rmgrdesc/standbydesc.c, with the payloads of
// src/include/storage/standbydefs.h and the invalidation messages of
// src/include/storage/sinval.h.
//
// Sources per version:
//   - 13, 15, 18: standbydesc.c of 13.16, 15.18 and 18.6.
//   - 17: the format strings of pg_waldump 17.12 (Debian binary).
//   - 10, 11, 12, 14, 16: rodata strings and disassembly of standby_desc and
//     standby_desc_invalidations in the postgres server binaries 10.23, 11.22,
//     12.22, 14.23 and 16.14.
//
// Verified against PostgreSQL's own output: pg_waldump 13.16, 15.18 and 18.6
// over the corpora and fixtures (byte-identical lines); the servers' own
// rm_desc over real WAL of 10.23, 11.22, 12.22 and 14.23 (a C function in the
// server calling XLogReadRecord and the *_desc functions) and of 15.18,
// 16.14, 17.10 and 18.4 (pg_walinspect), kept in
// testdata/xlog-group-desc-oracle.tsv for the versions without a corpus.
//
// Differences:
//   - RUNNING_XACTS: 10-15 print "; subxid ovf" and never the subxids; 16+
//     print "; subxid overflowed" and then "; %d subxacts: ..." (the 16
//     rewrite of standby_desc_running_xacts).
//   - Invalidation messages: SHAREDINVALRELSYNC_ID (-6, " relsync %u") is 18+;
//     before 18 that id falls to " unrecognized id %d".
//
// Payloads (the same in 10 to 18):
//   - xl_standby_locks: int nlocks @0, then {xid, dbOid, relOid} (12 bytes) @4.
//   - xl_running_xacts: int xcnt @0, int subxcnt @4, bool subxid_overflow @8,
//     nextXid @12, oldestRunningXid @16, latestCompletedXid @20, xids @24.
//   - xl_invalidations: dbId @0, tsId @4, bool relcacheInitFileInval @8,
//     int nmsgs @12, SharedInvalidationMessage (16 bytes) msgs @16.
//
// Arrays are printed as far as the record holds them: a count larger than the
// data stops at the end of the data (PostgreSQL would read past it).

const (
	standbyLock         = 0x00 // XLOG_STANDBY_LOCK
	standbyRunningXacts = 0x10 // XLOG_RUNNING_XACTS
	standbyInvalidation = 0x20 // XLOG_INVALIDATIONS

	standbyInvalMsgSize = 16 // sizeof(SharedInvalidationMessage)

	standbyInvalCatalog  = -1 // SHAREDINVALCATALOG_ID
	standbyInvalRelcache = -2 // SHAREDINVALRELCACHE_ID
	standbyInvalSmgr     = -3 // SHAREDINVALSMGR_ID
	standbyInvalRelmap   = -4 // SHAREDINVALRELMAP_ID
	standbyInvalSnapshot = -5 // SHAREDINVALSNAPSHOT_ID
	standbyInvalRelsync  = -6 // SHAREDINVALRELSYNC_ID, 18+
)

// standbyItems returns the items of an array of n elements of size bytes at
// the start of b, as many as b holds.
func standbyItems(b []byte, n int64, size int) []byte {
	if n <= 0 {
		return nil
	}
	if avail := int64(len(b) / size); n > avail {
		n = avail
	}
	return b[:n*int64(size)]
}

func standbyDesc(dst []byte, rec *decode.Record) []byte {
	data := rec.MainData
	switch rec.Header.Info &^ xlrInfoMask {
	case standbyLock:
		r := newDataReader(data)
		n := r.i32()
		if !r.ok() {
			return dst
		}
		locks := standbyItems(r.rest(), int64(n), 12)
		for i := 0; i+12 <= len(locks); i += 12 {
			dst = append(dst, "xid "...)
			dst = appendUint(dst, uint64(xlogLE32(locks, i)))
			dst = append(dst, " db "...)
			dst = appendUint(dst, uint64(xlogLE32(locks, i+4)))
			dst = append(dst, " rel "...)
			dst = appendUint(dst, uint64(xlogLE32(locks, i+8)))
			dst = append(dst, ' ')
		}
		return dst

	case standbyRunningXacts:
		return standbyAppendRunningXacts(dst, rec.Version, data)

	case standbyInvalidation:
		r := newDataReader(data)
		dbID := r.u32()
		tsID := r.u32()
		initFile := r.u8()
		r.align(4)
		n := r.i32()
		return standbyAppendInvalidations(dst, rec.Version, n, r.rest(), dbID, tsID, initFile != 0)
	}
	return dst
}

func standbyAppendRunningXacts(dst []byte, v xlog.Version, data []byte) []byte {
	var h [24]byte
	copy(h[:], data)
	xcnt := int32(xlogLE32(h[:], 0))
	subxcnt := int32(xlogLE32(h[:], 4))
	overflow := h[8] != 0
	dst = append(dst, "nextXid "...)
	dst = appendUint(dst, uint64(xlogLE32(h[:], 12)))
	dst = append(dst, " latestCompletedXid "...)
	dst = appendUint(dst, uint64(xlogLE32(h[:], 20)))
	dst = append(dst, " oldestRunningXid "...)
	dst = appendUint(dst, uint64(xlogLE32(h[:], 16)))
	var xids []byte
	if len(data) > 24 {
		xids = data[24:]
	}
	if xcnt > 0 {
		dst = append(dst, "; "...)
		dst = appendInt(dst, int64(xcnt))
		dst = append(dst, " xacts:"...)
		dst = standbyAppendXids(dst, standbyItems(xids, int64(xcnt), 4))
	}
	if v < xlog.V16 {
		// 10-15: the subxids are not printed.
		if overflow {
			dst = append(dst, "; subxid ovf"...)
		}
		return dst
	}
	if overflow {
		dst = append(dst, "; subxid overflowed"...)
	}
	if subxcnt > 0 {
		dst = append(dst, "; "...)
		dst = appendInt(dst, int64(subxcnt))
		dst = append(dst, " subxacts:"...)
		// xids[xcnt + i]
		off := int64(0)
		if xcnt > 0 {
			off = int64(xcnt) * 4
		}
		if off < int64(len(xids)) {
			dst = standbyAppendXids(dst, standbyItems(xids[off:], int64(subxcnt), 4))
		}
	}
	return dst
}

// standbyAppendXids appends " %u" for each 4-byte xid in b.
func standbyAppendXids(dst []byte, b []byte) []byte {
	for i := 0; i+4 <= len(b); i += 4 {
		dst = append(dst, ' ')
		dst = appendUint(dst, uint64(xlogLE32(b, i)))
	}
	return dst
}

// standbyAppendInvalidations mirrors standby_desc_invalidations, which the
// Standby INVALIDATIONS record and the Transaction COMMIT, PREPARE and
// INVALIDATION records share: nmsgs messages of 16 bytes at the start of
// msgs (as many as msgs holds).
func standbyAppendInvalidations(dst []byte, v xlog.Version, nmsgs int32, msgs []byte, dbID, tsID uint32, relcacheInitFileInval bool) []byte {
	if nmsgs <= 0 {
		return dst
	}
	if relcacheInitFileInval {
		dst = append(dst, "; relcache init file inval dbid "...)
		dst = appendUint(dst, uint64(dbID))
		dst = append(dst, " tsid "...)
		dst = appendUint(dst, uint64(tsID))
	}
	dst = append(dst, "; inval msgs:"...)
	msgs = standbyItems(msgs, int64(nmsgs), standbyInvalMsgSize)
	for i := 0; i+standbyInvalMsgSize <= len(msgs); i += standbyInvalMsgSize {
		m := msgs[i : i+standbyInvalMsgSize]
		id := int8(m[0])
		switch {
		case id >= 0:
			dst = append(dst, " catcache "...)
			dst = appendInt(dst, int64(id))
		case id == standbyInvalCatalog:
			dst = append(dst, " catalog "...)
			dst = appendUint(dst, uint64(xlogLE32(m, 8)))
		case id == standbyInvalRelcache:
			dst = append(dst, " relcache "...)
			dst = appendUint(dst, uint64(xlogLE32(m, 8)))
		case id == standbyInvalSmgr:
			dst = append(dst, " smgr"...)
		case id == standbyInvalRelmap:
			dst = append(dst, " relmap db "...)
			dst = appendUint(dst, uint64(xlogLE32(m, 4)))
		case id == standbyInvalSnapshot:
			dst = append(dst, " snapshot "...)
			dst = appendUint(dst, uint64(xlogLE32(m, 8)))
		case id == standbyInvalRelsync && v >= xlog.V18:
			dst = append(dst, " relsync "...)
			dst = appendUint(dst, uint64(xlogLE32(m, 8)))
		default:
			dst = append(dst, " unrecognized id "...)
			dst = appendInt(dst, int64(id))
		}
	}
	return dst
}
