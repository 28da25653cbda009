package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// gist_desc of src/backend/access/rmgrdesc/gistdesc.c; layouts from
// src/include/access/gistxlog.h. Read in full: 13.16, 15.18, 18.6 and the
// 10.0-based TBase fork; 11, 12, 14, 16 and 17 checked against the format
// strings of their binaries (11.22, 12.22, 14.23, 16.14 postgres, 17.12
// pg_waldump):
//
//	10-11  PAGE_SPLIT "page_split: splits to %d pages"; PAGE_UPDATE and
//	       CREATE_INDEX print nothing
//	12-15  adds PAGE_REUSE "rel %u/%u/%u; blk %u; latestRemovedXid %u:%u",
//	       DELETE "delete: latestRemovedXid %u, nitems: %u",
//	       PAGE_DELETE "deleteXid %u:%u; downlink %u" (ASSIGN_LSN, 13+,
//	       prints nothing)
//	16     latestRemovedXid renamed snapshotConflictHorizon
//	17-18  ", isCatalogRel %c" after PAGE_REUSE and DELETE
//
// Verified on real records of every version: pg_waldump 13, 15 and 18
// (corpora, fixtures), pg_walinspect 16.14 and 17.10, and for 10.23, 11.22,
// 12.22 and 14.23 the server's own gist_desc called from a test extension
// (embedded-postgres builds; samples kept in testdata/gist_desc.tsv).

const (
	gistDelete     = 0x10
	gistPageReuse  = 0x20
	gistPageSplit  = 0x30
	gistPageDelete = 0x60
)

func gistDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	info := rec.Header.Info &^ xlrInfoMask
	if v <= xlog.V11 && info != gistPageSplit {
		return dst // 0x10, 0x20 and 0x60 have other meanings or none before 12
	}
	horizon := "latestRemovedXid "
	if v >= xlog.V16 {
		horizon = "snapshotConflictHorizon "
	}
	switch info {
	case gistPageReuse:
		// gistxlogPageReuse: node/locator (spc, db, rel) @0, block @12,
		// FullTransactionId @16, isCatalogRel bool @24 (16+)
		spc, db, rel, blk := r.u32(), r.u32(), r.u32(), r.u32()
		full := r.u64()
		var catalog uint8
		if v >= xlog.V17 {
			catalog = r.u8()
		}
		if !r.ok() {
			return dst
		}
		dst = append(dst, "rel "...)
		dst = appendUint(dst, uint64(spc))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(db))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(rel))
		dst = append(dst, "; blk "...)
		dst = appendUint(dst, uint64(blk))
		dst = append(dst, "; "...)
		dst = append(dst, horizon...)
		dst = appendFullXid(dst, full)
		if v >= xlog.V17 {
			dst = append(dst, ", isCatalogRel "...)
			dst = appendTF(dst, catalog != 0)
		}
		return dst
	case gistDelete:
		// gistxlogDelete: xid @0, ntodelete u16 @4, isCatalogRel bool @6 (16+)
		xid := r.u32()
		n := r.u16()
		var catalog uint8
		if v >= xlog.V17 {
			catalog = r.u8()
		}
		if !r.ok() {
			return dst
		}
		dst = append(dst, "delete: "...)
		dst = append(dst, horizon...)
		dst = appendUint(dst, uint64(xid))
		dst = append(dst, ", nitems: "...)
		dst = appendUint(dst, uint64(n))
		if v >= xlog.V17 {
			dst = append(dst, ", isCatalogRel "...)
			dst = appendTF(dst, catalog != 0)
		}
		return dst
	case gistPageSplit:
		// gistxlogPageSplit: origrlink @0, orignsn @8, origleaf @16,
		// npage u16 @18
		r.skip(18)
		n := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "page_split: splits to "...)
		dst = appendInt(dst, int64(n))
		return append(dst, " pages"...)
	case gistPageDelete:
		// gistxlogPageDelete: deleteXid FullTransactionId @0, downlinkOffset u16 @8
		full := r.u64()
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "deleteXid "...)
		dst = appendFullXid(dst, full)
		dst = append(dst, "; downlink "...)
		return appendUint(dst, uint64(off))
	}
	return dst
}
