package rmgr

import "github.com/walscope/walscope/decode"

// gin_desc of src/backend/access/rmgrdesc/gindesc.c; layouts from
// src/include/access/ginxlog.h and ginblock.h. The function is the same in
// 13.16, 15.18 and 18.6 (read in full; whitespace only differs), and the
// binaries of 10.23, 11.22, 12.22, 14.23, 16.14 and 17.12 hold exactly the
// same format strings; 10 and 11 also have CREATE_INDEX (0x00), which prints
// nothing like every record without a case here.
//
// INSERT and VACUUM_DATA_LEAF_PAGE look at block 0: with an image they print
// " (full page image)" (or ", for WAL verification" when the image is not
// applied, 10+), otherwise they decode the block data.
//
// Verified on real records of every version: pg_waldump 13, 15 and 18
// (corpora, fixtures), pg_walinspect 16.14 and 17.10, and for 10.23, 11.22,
// 12.22 and 14.23 the server's own gin_desc called from a test extension
// (embedded-postgres builds; samples kept in testdata/gin_desc.tsv).

const (
	ginInsert             = 0x20
	ginSplit              = 0x30
	ginDeleteListPage     = 0x80
	ginVacuumDataLeafPage = 0x90

	ginInsertIsData = 0x01 // GIN_INSERT_ISDATA
	ginInsertIsLeaf = 0x02 // GIN_INSERT_ISLEAF
	ginSplitRoot    = 0x04 // GIN_SPLIT_ROOT

	// GIN_SEGMENT_* actions of a recompressed data leaf
	ginSegmentDelete   = 1
	ginSegmentInsert   = 2
	ginSegmentReplace  = 3
	ginSegmentAddItems = 4

	ginMetaPageDataSize = 56 // sizeof(GinMetaPageData), before ndeleted
)

func ginDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlrInfoMask {
	case ginInsert:
		// ginxlogInsert: flags u16 @0; for a non-leaf page the left and
		// right child BlockIdData (hi u16, lo u16) follow @2 and @6.
		flags := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "isdata: "...)
		dst = appendTF(dst, flags&ginInsertIsData != 0)
		dst = append(dst, " isleaf: "...)
		dst = appendTF(dst, flags&ginInsertIsLeaf != 0)
		if flags&ginInsertIsLeaf == 0 {
			left := ginBlockID(&r)
			right := ginBlockID(&r)
			if !r.ok() {
				return dst
			}
			dst = append(dst, " children: "...)
			dst = appendUint(dst, uint64(left))
			dst = append(dst, '/')
			dst = appendUint(dst, uint64(right))
		}
		b := rec.Block(0)
		if b != nil && b.HasImage {
			return ginAppendImage(dst, b)
		}
		if b == nil {
			return dst // PostgreSQL would read a NULL payload
		}
		p := newDataReader(b.Data)
		switch {
		case flags&ginInsertIsData == 0:
			// ginxlogInsertEntry: offset u16 @0, isDelete bool @2
			p.skip(2)
			del := p.u8()
			if !p.ok() {
				return dst
			}
			dst = append(dst, " isdelete: "...)
			return appendTF(dst, del != 0)
		case flags&ginInsertIsLeaf != 0:
			return ginRecompressLeaf(dst, &p)
		default:
			// ginxlogInsertDataInternal: offset u16 @0, PostingItem newitem
			// @2: child BlockIdData, then key ItemPointerData (BlockIdData,
			// posid u16)
			p.skip(2)
			child := ginBlockID(&p)
			blk := ginBlockID(&p)
			off := p.u16()
			if !p.ok() {
				return dst
			}
			dst = append(dst, " pitem: "...)
			dst = appendUint(dst, uint64(child))
			dst = append(dst, '-')
			dst = appendUint(dst, uint64(blk))
			dst = append(dst, '/')
			return appendUint(dst, uint64(off))
		}
	case ginSplit:
		// ginxlogSplit: node @0, rrlink @12, left/rightChildBlkno @16/@20,
		// flags u16 @24
		r.skip(24)
		flags := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "isrootsplit: "...)
		dst = appendTF(dst, flags&ginSplitRoot != 0)
		dst = append(dst, " isdata: "...)
		dst = appendTF(dst, flags&ginInsertIsData != 0)
		dst = append(dst, " isleaf: "...)
		return appendTF(dst, flags&ginInsertIsLeaf != 0)
	case ginVacuumDataLeafPage:
		b := rec.Block(0)
		if b == nil {
			return dst
		}
		if b.HasImage {
			return ginAppendImage(dst, b)
		}
		// ginxlogVacuumDataLeafPage: a ginxlogRecompressDataLeaf
		p := newDataReader(b.Data)
		return ginRecompressLeaf(dst, &p)
	case ginDeleteListPage:
		// ginxlogDeleteListPages: GinMetaPageData metadata, ndeleted int32 @56
		r.skip(ginMetaPageDataSize)
		n := r.i32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "ndeleted: "...)
		return appendInt(dst, int64(n))
	}
	return dst
}

// ginAppendImage mirrors the XLogRecHasBlockImage branch: XLogRecBlockImageApply
// tells a restored image from one kept only for wal_consistency_checking.
func ginAppendImage(dst []byte, b *decode.BlockRef) []byte {
	if b.Apply {
		return append(dst, " (full page image)"...)
	}
	return append(dst, " (full page image, for WAL verification)"...)
}

// ginRecompressLeaf mirrors desc_recompress_leaf: a ginxlogRecompressDataLeaf
// (nactions u16, then per action segno u8, action u8 and its payload).
func ginRecompressLeaf(dst []byte, p *dataReader) []byte {
	nactions := p.u16()
	if !p.ok() {
		return dst
	}
	dst = append(dst, ' ')
	dst = appendInt(dst, int64(nactions))
	dst = append(dst, " segments:"...)
	for i := 0; i < int(nactions); i++ {
		segno := p.u8()
		action := p.u8()
		if !p.ok() {
			return dst
		}
		var nitems uint16
		switch action {
		case ginSegmentInsert, ginSegmentReplace:
			// a GinPostingList: first ItemPointerData (6 bytes), nbytes u16,
			// then SHORTALIGN(nbytes) bytes
			p.skip(6)
			nbytes := p.u16()
			p.skip(int(nbytes+1) &^ 1)
		case ginSegmentAddItems:
			nitems = p.u16()
			p.skip(6 * int(nitems))
		}
		dst = append(dst, ' ')
		dst = appendInt(dst, int64(segno))
		switch action {
		case ginSegmentAddItems:
			dst = append(dst, " (add "...)
			dst = appendInt(dst, int64(nitems))
			dst = append(dst, " items)"...)
		case ginSegmentDelete:
			dst = append(dst, " (delete)"...)
		case ginSegmentInsert:
			dst = append(dst, " (insert)"...)
		case ginSegmentReplace:
			dst = append(dst, " (replace)"...)
		default:
			dst = append(dst, " unknown action "...)
			dst = appendInt(dst, int64(action))
			return append(dst, " ???"...)
		}
		if !p.ok() {
			return dst // the action's payload was cut short
		}
	}
	return dst
}

// ginBlockID reads a BlockIdData (bi_hi, bi_lo) as BlockIdGetBlockNumber does.
func ginBlockID(r *dataReader) uint32 {
	hi, lo := r.u16(), r.u16()
	return uint32(hi)<<16 | uint32(lo)
}
