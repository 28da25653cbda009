package rmgr

import (
	"math"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// hash_desc of src/backend/access/rmgrdesc/hashdesc.c; struct layouts from
// src/include/access/hash_xlog.h. Read in full: 13.16, 15.18, 18.6 and the
// 10.0-based TBase fork; 11, 12, 14, 16 and 17 checked against the format
// strings of their binaries (11.22, 12.22, 14.23, 16.14 postgres, 17.12
// pg_waldump). Only VACUUM_ONE_PAGE changed:
//
//	10-11  "ntuples %d"                                 (hnode @0, ntuples int @12)
//	12-13  "ntuples %d, latest removed xid %u"          (xid @0, ntuples int @4)
//	14-15  "ntuples %d, latestRemovedXid %u"
//	16     "ntuples %d, snapshotConflictHorizon %u"     (ntuples u16 @4)
//	17-18  "ntuples %d, snapshotConflictHorizon %u, isCatalogRel %c" (bool @6)
//
// SPLIT_PAGE and SPLIT_CLEANUP print nothing.
//
// Verified on real records of every version: pg_waldump 13, 15 and 18
// (corpora, fixtures), pg_walinspect 16.14 and 17.10, and for 10.23, 11.22,
// 12.22 and 14.23 the server's own hash_desc called from a test extension
// (embedded-postgres builds; samples kept in testdata/hash_desc.tsv).

const (
	hashInitMetaPage      = 0x00
	hashInitBitmapPage    = 0x10
	hashInsert            = 0x20
	hashAddOvflPage       = 0x30
	hashSplitAllocatePage = 0x40
	hashSplitComplete     = 0x60
	hashMovePageContents  = 0x70
	hashSqueezePage       = 0x80
	hashDelete            = 0x90
	hashUpdateMetaPage    = 0xB0
	hashVacuumOnePage     = 0xC0

	hashSplitMetaUpdateMasks      = 1 << 0 // XLH_SPLIT_META_UPDATE_MASKS
	hashSplitMetaUpdateSplitpoint = 1 << 1 // XLH_SPLIT_META_UPDATE_SPLITPOINT
)

func hashDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlrInfoMask {
	case hashInitMetaPage:
		// xl_hash_init_meta_page: num_tuples float8 @0, procid @8, ffactor u16 @12
		tuples := math.Float64frombits(r.u64())
		r.skip(4)
		ffactor := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "num_tuples "...)
		dst = appendCFloat(dst, tuples, 'g')
		dst = append(dst, ", fillfactor "...)
		return appendInt(dst, int64(ffactor))
	case hashInitBitmapPage:
		// xl_hash_init_bitmap_page: bmsize u16 @0
		n := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "bmsize "...)
		return appendInt(dst, int64(n))
	case hashInsert:
		// xl_hash_insert: offnum u16 @0
		off := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "off "...)
		return appendUint(dst, uint64(off))
	case hashAddOvflPage:
		// xl_hash_add_ovfl_page: bmsize u16 @0, bmpage_found bool @2
		n := r.u16()
		found := r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "bmsize "...)
		dst = appendInt(dst, int64(n))
		dst = append(dst, ", bmpage_found "...)
		return appendTF(dst, found != 0)
	case hashSplitAllocatePage:
		// xl_hash_split_allocate_page: new_bucket u32 @0, old/new_bucket_flag
		// u16 @4/@6, flags u8 @8
		bucket := r.u32()
		r.skip(4)
		flags := r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "new_bucket "...)
		dst = appendUint(dst, uint64(bucket))
		dst = append(dst, ", meta_page_masks_updated "...)
		dst = appendTF(dst, flags&hashSplitMetaUpdateMasks != 0)
		dst = append(dst, ", issplitpoint_changed "...)
		return appendTF(dst, flags&hashSplitMetaUpdateSplitpoint != 0)
	case hashSplitComplete:
		// xl_hash_split_complete: old_bucket_flag u16 @0, new_bucket_flag u16 @2
		oldFlag, newFlag := r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "old_bucket_flag "...)
		dst = appendUint(dst, uint64(oldFlag))
		dst = append(dst, ", new_bucket_flag "...)
		return appendUint(dst, uint64(newFlag))
	case hashMovePageContents:
		// xl_hash_move_page_contents: ntups u16 @0, is_prim_bucket_same_wrt bool @2
		ntups := r.u16()
		prim := r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ntups "...)
		dst = appendInt(dst, int64(ntups))
		dst = append(dst, ", is_primary "...)
		return appendTF(dst, prim != 0)
	case hashSqueezePage:
		// xl_hash_squeeze_page: prevblkno @0, nextblkno @4, ntups u16 @8,
		// is_prim_bucket_same_wrt bool @10
		prev, next := r.u32(), r.u32()
		ntups := r.u16()
		prim := r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "prevblkno "...)
		dst = appendUint(dst, uint64(prev))
		dst = append(dst, ", nextblkno "...)
		dst = appendUint(dst, uint64(next))
		dst = append(dst, ", ntups "...)
		dst = appendInt(dst, int64(ntups))
		dst = append(dst, ", is_primary "...)
		return appendTF(dst, prim != 0)
	case hashDelete:
		// xl_hash_delete: clear_dead_marking bool @0, is_primary_bucket_page bool @1
		clear, prim := r.u8(), r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "clear_dead_marking "...)
		dst = appendTF(dst, clear != 0)
		dst = append(dst, ", is_primary "...)
		return appendTF(dst, prim != 0)
	case hashUpdateMetaPage:
		// xl_hash_update_meta_page: ntuples float8 @0
		tuples := math.Float64frombits(r.u64())
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ntuples "...)
		return appendCFloat(dst, tuples, 'g')
	case hashVacuumOnePage:
		return hashDescVacuumOnePage(dst, v, &r)
	}
	return dst
}

func hashDescVacuumOnePage(dst []byte, v xlog.Version, r *dataReader) []byte {
	if v <= xlog.V11 {
		r.skip(12) // RelFileNode hnode
		n := r.i32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ntuples "...)
		return appendInt(dst, int64(n))
	}
	xid := r.u32()
	var n int64
	var catalog uint8
	if v <= xlog.V15 {
		n = int64(r.i32())
	} else {
		n = int64(r.u16())
		if v >= xlog.V17 {
			catalog = r.u8()
		}
	}
	if !r.ok() {
		return dst
	}
	dst = append(dst, "ntuples "...)
	dst = appendInt(dst, n)
	switch {
	case v <= xlog.V13:
		dst = append(dst, ", latest removed xid "...)
	case v <= xlog.V15:
		dst = append(dst, ", latestRemovedXid "...)
	default:
		dst = append(dst, ", snapshotConflictHorizon "...)
	}
	dst = appendUint(dst, uint64(xid))
	if v >= xlog.V17 {
		dst = append(dst, ", isCatalogRel "...)
		dst = appendTF(dst, catalog != 0)
	}
	return dst
}
