package format

import (
	"strconv"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// AppendRecord appends pg_waldump's line for rec (XLogDumpDisplayRecord in
// src/bin/pg_waldump/pg_waldump.c), with its block references in the short
// form or, with detailed, pg_waldump -b's block lines. The result ends in '\n'.
func AppendRecord(dst []byte, rec *decode.Record, detailed bool, blcksz int) []byte {
	h := &rec.Header
	dst = append(dst, "rmgr: "...)
	name := rmgr.Name(h.Rmid)
	dst = append(dst, name...)
	for i := len(name); i < 11; i++ {
		dst = append(dst, ' ')
	}
	dst = append(dst, " len (rec/tot): "...)
	dst = appendPadded(dst, uint64(rec.RecLen()), 6)
	dst = append(dst, '/')
	dst = appendPadded(dst, uint64(h.TotLen), 6)
	dst = append(dst, ", tx: "...)
	dst = appendPadded(dst, uint64(h.XID), 10)
	dst = append(dst, ", lsn: "...)
	dst = rec.LSN.AppendPadded(dst)
	dst = append(dst, ", prev "...)
	dst = h.Prev.AppendPadded(dst)
	dst = append(dst, ", desc: "...)
	dst = rmgr.AppendRecordType(dst, rec.Version, h.Rmid, h.Info)
	dst = append(dst, ' ')
	dst = rmgr.AppendDesc(dst, rec)
	if detailed {
		dst = append(dst, '\n')
		return AppendBlockRefsDetailed(dst, rec, blcksz)
	}
	return append(AppendBlockRefsShort(dst, rec), '\n')
}

// AppendBlockRefsShort appends ", blkref #N: rel S/D/R [fork F ]blk B[ FPW]" for
// each block reference.
func AppendBlockRefsShort(dst []byte, rec *decode.Record) []byte {
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		dst = append(dst, ", blkref #"...)
		dst = strconv.AppendUint(dst, uint64(b.ID), 10)
		dst = append(dst, ": rel "...)
		dst = appendRel(dst, b.Rel)
		if b.Fork() != decode.ForkMain {
			dst = append(dst, " fork "...)
			dst = append(dst, b.Fork().Name()...)
		}
		dst = append(dst, " blk "...)
		dst = strconv.AppendUint(dst, uint64(b.Block), 10)
		if b.HasImage {
			if b.Apply {
				dst = append(dst, " FPW"...)
			} else {
				dst = append(dst, " FPW for WAL verification"...)
			}
		}
	}
	return dst
}

// AppendBlockRefsDetailed appends pg_waldump -b's lines, one per block
// reference, each starting with a tab and ending in '\n'.
func AppendBlockRefsDetailed(dst []byte, rec *decode.Record, blcksz int) []byte {
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		dst = append(dst, "\tblkref #"...)
		dst = strconv.AppendUint(dst, uint64(b.ID), 10)
		dst = append(dst, ": rel "...)
		dst = appendRel(dst, b.Rel)
		dst = append(dst, " fork "...)
		dst = append(dst, b.Fork().Name()...)
		dst = append(dst, " blk "...)
		dst = strconv.AppendUint(dst, uint64(b.Block), 10)
		if b.HasImage {
			dst = append(dst, " (FPW"...)
			if !b.Apply {
				dst = append(dst, " for WAL verification"...)
			}
			dst = append(dst, "); hole: offset: "...)
			dst = strconv.AppendUint(dst, uint64(b.HoleOffset), 10)
			dst = append(dst, ", length: "...)
			dst = strconv.AppendUint(dst, uint64(b.HoleLength), 10)
			if b.Compression != decode.CompressNone {
				dst = append(dst, ", compression saved: "...)
				// BLCKSZ - hole_length - bimg_len, computed in unsigned int.
				dst = strconv.AppendUint(dst, uint64(uint32(blcksz-int(b.HoleLength)-int(b.ImageLen))), 10)
				if rec.Version >= xlog.V15 {
					dst = append(dst, ", method: "...)
					dst = append(dst, b.Compression.String()...)
				}
			}
		}
		dst = append(dst, '\n')
	}
	return dst
}

func appendRel(dst []byte, r decode.RelFileLocator) []byte {
	dst = strconv.AppendUint(dst, uint64(r.SpcOID), 10)
	dst = append(dst, '/')
	dst = strconv.AppendUint(dst, uint64(r.DBOID), 10)
	dst = append(dst, '/')
	return strconv.AppendUint(dst, uint64(r.RelNumber), 10)
}

// appendPadded appends v right-aligned in width, as printf's %6u does.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendUint(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, ' ')
	}
	return append(dst, s...)
}
