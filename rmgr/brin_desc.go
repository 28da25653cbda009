package rmgr

import "github.com/walscope/walscope/decode"

// brin_desc of src/backend/access/rmgrdesc/brindesc.c; layouts from
// src/include/access/brin_xlog.h. The same in every version 10 to 18: read in
// full in 13.16, 15.18 and 18.6, and the binaries of 10.23, 11.22, 12.22,
// 14.23, 16.14 and 17.12 hold the same format strings. brin_desc masks the
// info with XLOG_BRIN_OPMASK, so INSERT+INIT and UPDATE+INIT print as INSERT
// and UPDATE.
//
// Verified on real records of every version: pg_waldump 13, 15 and 18
// (corpora, fixtures), pg_walinspect 16.14 and 17.10, and for 10.23, 11.22,
// 12.22 and 14.23 the server's own brin_desc called from a test extension
// (embedded-postgres builds; samples kept in testdata/brin_desc.tsv).

const (
	brinCreateIndex    = 0x00
	brinInsert         = 0x10
	brinUpdate         = 0x20
	brinSamepageUpdate = 0x30
	brinRevmapExtend   = 0x40
	brinDesummarize    = 0x50
	brinOpMask         = 0x70 // XLOG_BRIN_OPMASK
)

func brinDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info & brinOpMask {
	case brinCreateIndex:
		// xl_brin_createidx: pagesPerRange u32 @0, version u16 @4
		ppr := r.u32()
		version := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, 'v')
		dst = appendInt(dst, int64(version))
		dst = append(dst, " pagesPerRange "...)
		return appendUint(dst, uint64(ppr))
	case brinInsert:
		// xl_brin_insert: heapBlk @0, pagesPerRange @4, offnum u16 @8
		heapBlk, ppr := r.u32(), r.u32()
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "heapBlk "...)
		dst = appendUint(dst, uint64(heapBlk))
		dst = append(dst, " pagesPerRange "...)
		dst = appendUint(dst, uint64(ppr))
		dst = append(dst, " offnum "...)
		return appendUint(dst, uint64(off))
	case brinUpdate:
		// xl_brin_update: oldOffnum u16 @0, xl_brin_insert insert @4
		oldOff := r.u16()
		r.skip(2)
		heapBlk, ppr := r.u32(), r.u32()
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "heapBlk "...)
		dst = appendUint(dst, uint64(heapBlk))
		dst = append(dst, " pagesPerRange "...)
		dst = appendUint(dst, uint64(ppr))
		dst = append(dst, " old offnum "...)
		dst = appendUint(dst, uint64(oldOff))
		dst = append(dst, ", new offnum "...)
		return appendUint(dst, uint64(off))
	case brinSamepageUpdate:
		// xl_brin_samepage_update: offnum u16 @0
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "offnum "...)
		return appendUint(dst, uint64(off))
	case brinRevmapExtend:
		// xl_brin_revmap_extend: targetBlk @0
		blk := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "targetBlk "...)
		return appendUint(dst, uint64(blk))
	case brinDesummarize:
		// xl_brin_desummarize: pagesPerRange @0, heapBlk @4, regOffset u16 @8
		ppr, heapBlk := r.u32(), r.u32()
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "pagesPerRange "...)
		dst = appendUint(dst, uint64(ppr))
		dst = append(dst, ", heapBlk "...)
		dst = appendUint(dst, uint64(heapBlk))
		dst = append(dst, ", page offset "...)
		return appendUint(dst, uint64(off))
	}
	return dst
}
