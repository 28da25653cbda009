package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// spg_desc of src/backend/access/rmgrdesc/spgdesc.c; layouts from
// src/include/access/spgxlog.h (the same from 10 to 18 but for
// spgxlogVacuumRedirect). Read in full: 13.16, 15.18, 18.6; 10, 11, 12, 14,
// 16 and 17 checked against the format strings of their binaries (10.23,
// 11.22, 12.22, 14.23, 16.14 postgres, 17.12 pg_waldump):
//
//	10-13  "add leaf to page; off %u; headoff %u; parentoff %u", "%u leafs",
//	       "off %u", "prefix off: %u, postfix off: %u (same %d, new %d)",
//	       "ndel %u; nins %u", VACUUM_LEAF/ROOT nothing, "newest XID %u"
//	14-15  "key: value" rewrite with more fields; VACUUM_REDIRECT
//	       "ntoplaceholder: %u, firstplaceholder: %u, newestredirectxid: %u"
//	16     "..., snapshotConflictHorizon: %u"
//	17-18  "..., snapshotConflictHorizon: %u, isCatalogRel: %c"
//
// 10 and 11 also have CREATE_INDEX (0x00), which prints nothing.
//
// Verified on real records of every version: pg_waldump 13, 15 and 18
// (corpora, fixtures), pg_walinspect 16.14 and 17.10, and for 10.23, 11.22,
// 12.22 and 14.23 the server's own spg_desc called from a test extension
// (embedded-postgres builds; samples kept in testdata/spgist_desc.tsv).

const (
	spgAddLeaf        = 0x10
	spgMoveLeafs      = 0x20
	spgAddNode        = 0x30
	spgSplitTuple     = 0x40
	spgPickSplit      = 0x50
	spgVacuumLeaf     = 0x60
	spgVacuumRoot     = 0x70
	spgVacuumRedirect = 0x80
)

func spgDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	old := v <= xlog.V13
	switch rec.Header.Info &^ xlrInfoMask {
	case spgAddLeaf:
		// spgxlogAddLeaf: newPage @0, storesNulls @1, offnumLeaf @2,
		// offnumHeadLeaf @4, offnumParent @6, nodeI u16 @8
		newPage, nulls := r.u8(), r.u8()
		leaf, head, parent, nodeI := r.u16(), r.u16(), r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		if old {
			dst = append(dst, "add leaf to page; off "...)
			dst = appendUint(dst, uint64(leaf))
			dst = append(dst, "; headoff "...)
			dst = appendUint(dst, uint64(head))
			dst = append(dst, "; parentoff "...)
			dst = appendUint(dst, uint64(parent))
		} else {
			dst = append(dst, "off: "...)
			dst = appendUint(dst, uint64(leaf))
			dst = append(dst, ", headoff: "...)
			dst = appendUint(dst, uint64(head))
			dst = append(dst, ", parentoff: "...)
			dst = appendUint(dst, uint64(parent))
			dst = append(dst, ", nodeI: "...)
			dst = appendUint(dst, uint64(nodeI))
		}
		if newPage != 0 {
			dst = append(dst, " (newpage)"...)
		}
		if nulls != 0 {
			dst = append(dst, " (nulls)"...)
		}
		return dst
	case spgMoveLeafs:
		// spgxlogMoveLeafs: nMoves u16 @0, newPage @2, replaceDead @3,
		// storesNulls @4, offnumParent u16 @6, nodeI u16 @8
		n := r.u16()
		if old {
			if !r.ok() {
				return dst
			}
			dst = appendUint(dst, uint64(n))
			return append(dst, " leafs"...)
		}
		newPage, replaceDead, nulls := r.u8(), r.u8(), r.u8()
		r.skip(1)
		parent, nodeI := r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "nmoves: "...)
		dst = appendUint(dst, uint64(n))
		dst = append(dst, ", parentoff: "...)
		dst = appendUint(dst, uint64(parent))
		dst = append(dst, ", nodeI: "...)
		dst = appendUint(dst, uint64(nodeI))
		if newPage != 0 {
			dst = append(dst, " (newpage)"...)
		}
		if replaceDead != 0 {
			dst = append(dst, " (replacedead)"...)
		}
		if nulls != 0 {
			dst = append(dst, " (nulls)"...)
		}
		return dst
	case spgAddNode:
		// spgxlogAddNode: offnum u16 @0, offnumNew u16 @2, newPage @4,
		// parentBlk int8 @5, offnumParent u16 @6, nodeI u16 @8
		off := r.u16()
		if old {
			if !r.ok() {
				return dst
			}
			dst = append(dst, "off "...)
			return appendUint(dst, uint64(off))
		}
		newOff := r.u16()
		newPage := r.u8()
		parentBlk := int8(r.u8())
		parent, nodeI := r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "off: "...)
		dst = appendUint(dst, uint64(off))
		dst = append(dst, ", newoff: "...)
		dst = appendUint(dst, uint64(newOff))
		dst = append(dst, ", parentBlk: "...)
		dst = appendInt(dst, int64(parentBlk))
		dst = append(dst, ", parentoff: "...)
		dst = appendUint(dst, uint64(parent))
		dst = append(dst, ", nodeI: "...)
		dst = appendUint(dst, uint64(nodeI))
		if newPage != 0 {
			dst = append(dst, " (newpage)"...)
		}
		return dst
	case spgSplitTuple:
		// spgxlogSplitTuple: offnumPrefix u16 @0, offnumPostfix u16 @2,
		// newPage bool @4, postfixBlkSame bool @5
		prefix, postfix := r.u16(), r.u16()
		newPage, same := r.u8(), r.u8()
		if !r.ok() {
			return dst
		}
		if old {
			// bools passed to %d print their byte value
			dst = append(dst, "prefix off: "...)
			dst = appendUint(dst, uint64(prefix))
			dst = append(dst, ", postfix off: "...)
			dst = appendUint(dst, uint64(postfix))
			dst = append(dst, " (same "...)
			dst = appendInt(dst, int64(same))
			dst = append(dst, ", new "...)
			dst = appendInt(dst, int64(newPage))
			return append(dst, ')')
		}
		dst = append(dst, "prefixoff: "...)
		dst = appendUint(dst, uint64(prefix))
		dst = append(dst, ", postfixoff: "...)
		dst = appendUint(dst, uint64(postfix))
		if newPage != 0 {
			dst = append(dst, " (newpage)"...)
		}
		if same != 0 {
			dst = append(dst, " (same)"...)
		}
		return dst
	case spgPickSplit:
		// spgxlogPickSplit: isRootSplit @0, nDelete u16 @2, nInsert u16 @4,
		// initSrc @6, initDest @7, offnumInner u16 @8, initInner @10,
		// storesNulls @11, innerIsParent @12, offnumParent u16 @14,
		// nodeI u16 @16
		root := r.u8()
		r.skip(1)
		ndel, nins := r.u16(), r.u16()
		r.skip(2)
		inner := r.u16()
		r.skip(1)
		nulls, innerIsParent := r.u8(), r.u8()
		if old {
			if !r.ok() {
				return dst
			}
			dst = append(dst, "ndel "...)
			dst = appendUint(dst, uint64(ndel))
			dst = append(dst, "; nins "...)
			dst = appendUint(dst, uint64(nins))
			if innerIsParent != 0 {
				dst = append(dst, " (innerIsParent)"...)
			}
			if root != 0 {
				dst = append(dst, " (isRootSplit)"...)
			}
			return dst
		}
		r.skip(1)
		parent, nodeI := r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ndelete: "...)
		dst = appendUint(dst, uint64(ndel))
		dst = append(dst, ", ninsert: "...)
		dst = appendUint(dst, uint64(nins))
		dst = append(dst, ", inneroff: "...)
		dst = appendUint(dst, uint64(inner))
		dst = append(dst, ", parentoff: "...)
		dst = appendUint(dst, uint64(parent))
		dst = append(dst, ", nodeI: "...)
		dst = appendUint(dst, uint64(nodeI))
		if innerIsParent != 0 {
			dst = append(dst, " (innerIsParent)"...)
		}
		if nulls != 0 {
			dst = append(dst, " (nulls)"...)
		}
		if root != 0 {
			dst = append(dst, " (isRootSplit)"...)
		}
		return dst
	case spgVacuumLeaf:
		if old {
			return dst
		}
		// spgxlogVacuumLeaf: nDead, nPlaceholder, nMove, nChain u16 @0..@6
		dead, placeholder, move, chain := r.u16(), r.u16(), r.u16(), r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ndead: "...)
		dst = appendUint(dst, uint64(dead))
		dst = append(dst, ", nplaceholder: "...)
		dst = appendUint(dst, uint64(placeholder))
		dst = append(dst, ", nmove: "...)
		dst = appendUint(dst, uint64(move))
		dst = append(dst, ", nchain: "...)
		return appendUint(dst, uint64(chain))
	case spgVacuumRoot:
		if old {
			return dst
		}
		// spgxlogVacuumRoot: nDelete u16 @0
		n := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ndelete: "...)
		return appendUint(dst, uint64(n))
	case spgVacuumRedirect:
		// spgxlogVacuumRedirect: nToPlaceholder u16 @0, firstPlaceholder
		// u16 @2, newestRedirectXid/snapshotConflictHorizon @4,
		// isCatalogRel bool @8 (16+)
		n, first := r.u16(), r.u16()
		xid := r.u32()
		var catalog uint8
		if v >= xlog.V17 {
			catalog = r.u8()
		}
		if !r.ok() {
			return dst
		}
		if old {
			dst = append(dst, "newest XID "...)
			return appendUint(dst, uint64(xid))
		}
		dst = append(dst, "ntoplaceholder: "...)
		dst = appendUint(dst, uint64(n))
		dst = append(dst, ", firstplaceholder: "...)
		dst = appendUint(dst, uint64(first))
		if v <= xlog.V15 {
			dst = append(dst, ", newestredirectxid: "...)
			return appendUint(dst, uint64(xid))
		}
		dst = append(dst, ", snapshotConflictHorizon: "...)
		dst = appendUint(dst, uint64(xid))
		if v >= xlog.V17 {
			dst = append(dst, ", isCatalogRel: "...)
			if catalog != 0 {
				dst = append(dst, 'T')
			} else {
				dst = append(dst, 'F')
			}
		}
		return dst
	}
	return dst
}
