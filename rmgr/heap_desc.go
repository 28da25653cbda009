package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Heap descriptions: heap_desc in src/backend/access/rmgrdesc/heapdesc.c,
// payloads from src/include/access/heapam_xlog.h. Three wordings exist:
//
//	10, 11: "off 3", "off 3 xmax 7 ; new off 4 xmax 0", lock "flags %u" (no
//	        flags on INSERT/DELETE/UPDATE). 10 read from a 10.0-based fork
//	        (OpenTenBase, whose Heap part is unmodified), 11 from a 2018
//	        PolarDB-for-PostgreSQL (11-based; its "POLAR" additions ignored):
//	        same as 10 plus TRUNCATE.
//	12-15:  "off 3 flags 0x00", "off 3 xmax 7 flags 0x00 ; new off 4 xmax 0",
//	        lock "flags 0x%02X" (the "add flag values to heap records" change
//	        of the 12 cycle). Verified 13.16 and 15.18 sources and pg_waldump;
//	        12 read from a 2019 (12-based) Greengage tree, 14 from a 2021
//	        (14-based) neondatabase tree; both identical to 13 in Heap.
//	16+:    "off: 3, flags: 0x00", infobits as "infobits: [LOCK_ONLY, ...]"
//	        and arrays as rmgrdesc_utils.c's array_desc (the 16 rewrite of the
//	        heap descriptions). 16 read from a 2023 heapdesc.c and the LLVM IR
//	        of a released-16 build, 17 from the 17.12 headers plus a 2024
//	        heapdesc.c, 18 from the 18.6 source and pg_waldump.
//
// INPLACE appends standby_desc_invalidations's text from 18 on, when
// xl_heap_inplace grew invalidation messages (17.12's header has only offnum).

// Heap info bits and flags (heapam_xlog.h).
const (
	heapOpMask = 0x70 // XLOG_HEAP_OPMASK

	heapXmaxIsMulti    = 0x01 // XLHL_XMAX_IS_MULTI
	heapXmaxLockOnly   = 0x02 // XLHL_XMAX_LOCK_ONLY
	heapXmaxExclLock   = 0x04 // XLHL_XMAX_EXCL_LOCK
	heapXmaxKeyshrLock = 0x08 // XLHL_XMAX_KEYSHR_LOCK
	heapKeysUpdated    = 0x10 // XLHL_KEYS_UPDATED

	heapTruncateCascade     = 0x01 // XLH_TRUNCATE_CASCADE
	heapTruncateRestartSeqs = 0x02 // XLH_TRUNCATE_RESTART_SEQS
)

// heapDesc is the Heap manager's Desc.
func heapDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	switch rec.Header.Info & heapOpMask {
	case heapInsert:
		// xl_heap_insert: offnum u16, flags u8.
		off := r.u16()
		flags := r.u8()
		switch {
		case v >= xlog.V16:
			dst = append(dst, "off: "...)
			dst = appendUint(dst, uint64(off))
			dst = append(dst, ", flags: 0x"...)
			dst = heapAppendHex02(dst, flags)
		case v >= xlog.V12:
			dst = append(dst, "off "...)
			dst = appendUint(dst, uint64(off))
			dst = append(dst, " flags 0x"...)
			dst = heapAppendHex02(dst, flags)
		default:
			dst = append(dst, "off "...)
			dst = appendUint(dst, uint64(off))
		}
	case heapDelete:
		// xl_heap_delete: xmax u32, offnum u16, infobits_set u8, flags u8.
		xmax := r.u32()
		off := r.u16()
		bits := r.u8()
		flags := r.u8()
		switch {
		case v >= xlog.V16:
			dst = append(dst, "xmax: "...)
			dst = appendUint(dst, uint64(xmax))
			dst = append(dst, ", off: "...)
			dst = appendUint(dst, uint64(off))
			dst = append(dst, ", "...)
			dst = heapAppendInfobits(dst, bits, "infobits")
			dst = append(dst, ", flags: 0x"...)
			dst = heapAppendHex02(dst, flags)
		case v >= xlog.V12:
			dst = append(dst, "off "...)
			dst = appendUint(dst, uint64(off))
			dst = append(dst, " flags 0x"...)
			dst = heapAppendHex02(dst, flags)
			dst = append(dst, ' ')
			dst = heapAppendInfobitsOld(dst, bits)
		default:
			dst = append(dst, "off "...)
			dst = appendUint(dst, uint64(off))
			dst = append(dst, ' ')
			dst = heapAppendInfobitsOld(dst, bits)
		}
	case heapUpdate, heapHotUpdate:
		// xl_heap_update: old_xmax u32, old_offnum u16, old_infobits_set u8,
		// flags u8, new_xmax u32, new_offnum u16.
		oldXmax := r.u32()
		oldOff := r.u16()
		bits := r.u8()
		flags := r.u8()
		newXmax := r.u32()
		newOff := r.u16()
		if v >= xlog.V16 {
			dst = append(dst, "old_xmax: "...)
			dst = appendUint(dst, uint64(oldXmax))
			dst = append(dst, ", old_off: "...)
			dst = appendUint(dst, uint64(oldOff))
			dst = append(dst, ", "...)
			dst = heapAppendInfobits(dst, bits, "old_infobits")
			dst = append(dst, ", flags: 0x"...)
			dst = heapAppendHex02(dst, flags)
			dst = append(dst, ", new_xmax: "...)
			dst = appendUint(dst, uint64(newXmax))
			dst = append(dst, ", new_off: "...)
			return appendUint(dst, uint64(newOff))
		}
		dst = append(dst, "off "...)
		dst = appendUint(dst, uint64(oldOff))
		dst = append(dst, " xmax "...)
		dst = appendUint(dst, uint64(oldXmax))
		if v >= xlog.V12 {
			dst = append(dst, " flags 0x"...)
			dst = heapAppendHex02(dst, flags)
		}
		dst = append(dst, ' ')
		dst = heapAppendInfobitsOld(dst, bits)
		dst = append(dst, "; new off "...)
		dst = appendUint(dst, uint64(newOff))
		dst = append(dst, " xmax "...)
		dst = appendUint(dst, uint64(newXmax))
	case heapTruncate:
		if v < xlog.V11 {
			break // 10 has no XLOG_HEAP_TRUNCATE: heap_desc prints nothing
		}
		// xl_heap_truncate: dbId u32, nrelids u32, flags u8, (pad), relids u32[].
		r.u32()
		nrelids := r.u32()
		flags := r.u8()
		relids := heapSub(rec.MainData, 12, 4*int(min(nrelids, 1<<28)))
		if v >= xlog.V16 {
			dst = append(dst, "flags: ["...)
			mark := len(dst)
			if flags&heapTruncateCascade != 0 {
				dst = append(dst, "CASCADE, "...)
			}
			if flags&heapTruncateRestartSeqs != 0 {
				dst = append(dst, "RESTART_SEQS, "...)
			}
			if len(dst) > mark {
				dst = dst[:len(dst)-2]
			}
			dst = append(dst, "], nrelids: "...)
			dst = appendUint(dst, uint64(nrelids))
			dst = append(dst, ", relids:"...)
			return heapAppendU32Array(dst, relids, int(int32(nrelids)))
		}
		if flags&heapTruncateCascade != 0 {
			dst = append(dst, "cascade "...)
		}
		if flags&heapTruncateRestartSeqs != 0 {
			dst = append(dst, "restart_seqs "...)
		}
		dst = append(dst, "nrelids "...)
		dst = appendUint(dst, uint64(nrelids))
		dst = append(dst, " relids"...)
		for i := 0; i+4 <= len(relids); i += 4 {
			dst = append(dst, ' ')
			dst = appendUint(dst, uint64(heapU32(relids, i)))
		}
	case heapConfirm:
		// xl_heap_confirm: offnum u16.
		if v >= xlog.V16 {
			dst = append(dst, "off: "...)
		} else {
			dst = append(dst, "off "...)
		}
		dst = appendUint(dst, uint64(r.u16()))
	case heapLock:
		// xl_heap_lock: locking_xid (xmax from 16) u32, offnum u16,
		// infobits_set u8, flags u8.
		xid := r.u32()
		off := r.u16()
		bits := r.u8()
		flags := r.u8()
		dst = heapAppendLock(dst, v, "xid", xid, off, bits, flags)
	case heapInplace:
		// xl_heap_inplace: offnum u16; from 18 also dbId, tsId,
		// relcacheInitFileInval, nmsgs and the messages.
		off := r.u16()
		if v < xlog.V16 {
			dst = append(dst, "off "...)
			return appendUint(dst, uint64(off))
		}
		dst = append(dst, "off: "...)
		dst = appendUint(dst, uint64(off))
		if v >= xlog.V18 {
			r.skip(2)
			dbID := r.u32()
			tsID := r.u32()
			initInval := r.u8() != 0
			r.skip(3)
			nmsgs := r.i32()
			dst = standbyAppendInvalidations(dst, v, nmsgs, r.rest(), dbID, tsID, initInval)
		}
	}
	return dst
}

// heapAppendLock appends the description of Heap LOCK and Heap2 LOCK_UPDATED
// (xl_heap_lock and xl_heap_lock_updated have the same layout). xidWord is
// the old wording's name of the xid: "xid" for LOCK, "xmax" for LOCK_UPDATED.
func heapAppendLock(dst []byte, v xlog.Version, xidWord string, xid uint32, off uint16, bits, flags uint8) []byte {
	if v >= xlog.V16 {
		// "xmax: %u, off: %u, " infobits_desc ", flags: 0x%02X"
		dst = append(dst, "xmax: "...)
		dst = appendUint(dst, uint64(xid))
		dst = append(dst, ", off: "...)
		dst = appendUint(dst, uint64(off))
		dst = append(dst, ", "...)
		dst = heapAppendInfobits(dst, bits, "infobits")
		dst = append(dst, ", flags: 0x"...)
		return heapAppendHex02(dst, flags)
	}
	// "off %u: xid %u: flags 0x%02X " out_infobits (12-15; "flags %u " before).
	dst = append(dst, "off "...)
	dst = appendUint(dst, uint64(off))
	dst = append(dst, ": "...)
	dst = append(dst, xidWord...)
	dst = append(dst, ' ')
	dst = appendUint(dst, uint64(xid))
	dst = append(dst, ": flags "...)
	if v >= xlog.V12 {
		dst = append(dst, "0x"...)
		dst = heapAppendHex02(dst, flags)
	} else {
		dst = appendUint(dst, uint64(flags))
	}
	dst = append(dst, ' ')
	return heapAppendInfobitsOld(dst, bits)
}

// heapAppendInfobitsOld is out_infobits of 10 to 15: each set bit's name
// followed by a space.
func heapAppendInfobitsOld(dst []byte, bits uint8) []byte {
	if bits&heapXmaxIsMulti != 0 {
		dst = append(dst, "IS_MULTI "...)
	}
	if bits&heapXmaxLockOnly != 0 {
		dst = append(dst, "LOCK_ONLY "...)
	}
	if bits&heapXmaxExclLock != 0 {
		dst = append(dst, "EXCL_LOCK "...)
	}
	if bits&heapXmaxKeyshrLock != 0 {
		dst = append(dst, "KEYSHR_LOCK "...)
	}
	if bits&heapKeysUpdated != 0 {
		dst = append(dst, "KEYS_UPDATED "...)
	}
	return dst
}

// heapAppendInfobits is infobits_desc of 16 and later: "key: [A, B]".
func heapAppendInfobits(dst []byte, bits uint8, key string) []byte {
	dst = append(dst, key...)
	dst = append(dst, ": ["...)
	mark := len(dst)
	if bits&heapXmaxIsMulti != 0 {
		dst = append(dst, "IS_MULTI, "...)
	}
	if bits&heapXmaxLockOnly != 0 {
		dst = append(dst, "LOCK_ONLY, "...)
	}
	if bits&heapXmaxExclLock != 0 {
		dst = append(dst, "EXCL_LOCK, "...)
	}
	if bits&heapXmaxKeyshrLock != 0 {
		dst = append(dst, "KEYSHR_LOCK, "...)
	}
	if bits&heapKeysUpdated != 0 {
		dst = append(dst, "KEYS_UPDATED, "...)
	}
	if len(dst) > mark {
		dst = dst[:len(dst)-2] // "Truncate-away final unneeded ", ""
	}
	return append(dst, ']')
}

// heapAppendHex02 appends v as printf's "%02X".
func heapAppendHex02(dst []byte, v uint8) []byte {
	const digits = "0123456789ABCDEF"
	return append(dst, digits[v>>4], digits[v&0x0F])
}

// heapU16 and heapU32 read little-endian values at off, 0 when out of range.
func heapU16(b []byte, off int) uint16 {
	if off < 0 || off+2 > len(b) {
		return 0
	}
	return uint16(b[off]) | uint16(b[off+1])<<8
}

func heapU32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24
}

// heapSub returns b[off:off+n] clamped to b (possibly empty), never panicking.
func heapSub(b []byte, off, n int) []byte {
	if off < 0 || off > len(b) || n <= 0 {
		return nil
	}
	if n > len(b)-off {
		n = len(b) - off
	}
	return b[off : off+n : off+n]
}

// heapAppendU16Array appends array_desc (rmgrdesc_utils.c, 16+) of count
// OffsetNumbers stored in data: " [1, 2]" or " []". Elements the data does not
// hold (PostgreSQL would read past it) are left out.
func heapAppendU16Array(dst []byte, data []byte, count int) []byte {
	if count <= 0 {
		return append(dst, " []"...)
	}
	dst = append(dst, " ["...)
	for i := 0; i < count && 2*i+2 <= len(data); i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendUint(dst, uint64(heapU16(data, 2*i)))
	}
	return append(dst, ']')
}

// heapAppendU32Array is heapAppendU16Array for Oids (oid_elem_desc).
func heapAppendU32Array(dst []byte, data []byte, count int) []byte {
	if count <= 0 {
		return append(dst, " []"...)
	}
	dst = append(dst, " ["...)
	for i := 0; i < count && 4*i+4 <= len(data); i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendUint(dst, uint64(heapU32(data, 4*i)))
	}
	return append(dst, ']')
}
