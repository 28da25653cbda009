package rmgr

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Shared pieces of the descriptions: PostgreSQL's frontend timestamptz_to_str
// (src/backend/access/rmgrdesc/... via src/common), relpathperm
// (src/common/relpath.c) and, from 16, rmgrdesc_utils.c's array printing.

// postgresEpochUnix is 2000-01-01 00:00:00 UTC in Unix seconds.
const postgresEpochUnix = 946684800

// appendTimestamptz appends a TimestampTz (microseconds since 2000-01-01 UTC)
// as pg_waldump's timestamptz_to_str does: "%Y-%m-%d %H:%M:%S.%06d %Z" in the
// local time zone (TZ), the fraction taken with C's truncating remainder.
func appendTimestamptz(dst []byte, ts int64) []byte {
	sec := ts/1_000_000 + postgresEpochUnix
	t := time.Unix(sec, 0).In(time.Local)
	dst = t.AppendFormat(dst, "2006-01-02 15:04:05")
	dst = append(dst, '.')
	frac := ts % 1_000_000 // C's %: negative for negative ts, printed as such
	if frac < 0 {
		// printf("%06d", -123) gives "-00123": the sign counts in the width.
		dst = append(dst, '-')
		dst = appendZeroPadded(dst, uint64(-frac), 5)
	} else {
		dst = appendZeroPadded(dst, uint64(frac), 6)
	}
	dst = append(dst, ' ')
	return t.AppendFormat(dst, "MST")
}

func appendZeroPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendUint(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Default tablespace OIDs (src/include/catalog/pg_tablespace.dat).
const (
	defaultTablespaceOID = 1663
	globalTablespaceOID  = 1664
)

// tablespaceVersionDirectory is TABLESPACE_VERSION_DIRECTORY,
// "PG_<major>_<CATALOG_VERSION_NO>", which relpath prints for relations in
// user tablespaces. The catalog version is fixed per major release.
var tablespaceVersionDirectory = map[xlog.Version]string{
	xlog.V10: "PG_10_201707211",
	xlog.V11: "PG_11_201809051",
	xlog.V12: "PG_12_201909212",
	xlog.V13: "PG_13_202007201",
	xlog.V14: "PG_14_202107181",
	xlog.V15: "PG_15_202209061",
	xlog.V16: "PG_16_202307071",
	xlog.V17: "PG_17_202406281",
	xlog.V18: "PG_18_202506291",
}

// appendRelPath appends relpathperm(rel, fork) as the given version prints
// it: "global/R", "base/D/R" or "pg_tblspc/S/PG_…/D/R", with "_fork" for
// forks other than main (GetRelationPath in src/common/relpath.c).
func appendRelPath(dst []byte, v xlog.Version, rel decode.RelFileLocator, fork decode.ForkNumber) []byte {
	switch {
	case rel.SpcOID == globalTablespaceOID:
		dst = append(dst, "global/"...)
		dst = strconv.AppendUint(dst, uint64(rel.RelNumber), 10)
	case rel.SpcOID == defaultTablespaceOID:
		dst = append(dst, "base/"...)
		dst = strconv.AppendUint(dst, uint64(rel.DBOID), 10)
		dst = append(dst, '/')
		dst = strconv.AppendUint(dst, uint64(rel.RelNumber), 10)
	default:
		dst = append(dst, "pg_tblspc/"...)
		dst = strconv.AppendUint(dst, uint64(rel.SpcOID), 10)
		dst = append(dst, '/')
		dst = append(dst, tablespaceVersionDirectory[v]...)
		dst = append(dst, '/')
		dst = strconv.AppendUint(dst, uint64(rel.DBOID), 10)
		dst = append(dst, '/')
		dst = strconv.AppendUint(dst, uint64(rel.RelNumber), 10)
	}
	if fork != decode.ForkMain {
		dst = append(dst, '_')
		dst = append(dst, fork.Name()...)
	}
	return dst
}

// dataReader reads a record's main data or block data; its error sticks, so
// callers read every field and check ok once. It never panics on short data.
type dataReader struct {
	b   []byte
	off int
	bad bool
}

func newDataReader(b []byte) dataReader { return dataReader{b: b} }

func (r *dataReader) need(n int) bool {
	if r.bad || n < 0 || len(r.b)-r.off < n {
		r.bad = true
		return false
	}
	return true
}

func (r *dataReader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *dataReader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *dataReader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *dataReader) i32() int32 { return int32(r.u32()) }

func (r *dataReader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *dataReader) i64() int64 { return int64(r.u64()) }

// bytes returns the next n bytes without copying.
func (r *dataReader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// skip moves past n bytes.
func (r *dataReader) skip(n int) { r.bytes(n) }

// align moves to the next multiple of a (MAXALIGN and friends, relative to
// the start of the data, which PostgreSQL keeps MAXALIGNed).
func (r *dataReader) align(a int) {
	if rem := r.off % a; rem != 0 {
		r.skip(a - rem)
	}
}

func (r *dataReader) ok() bool { return !r.bad }

// rest returns the unread bytes.
func (r *dataReader) rest() []byte {
	if r.bad {
		return nil
	}
	return r.b[r.off:]
}

// appendUint appends v in decimal (%u).
func appendUint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

// appendInt appends v in decimal (%d).
func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// appendHex appends v in lower-case hex without padding (%x).
func appendHex(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 16) }

// appendHexPadded appends v in lower-case hex, zero-padded to width (%0*x).
func appendHexPadded(dst []byte, v uint64, width int) []byte {
	var buf [16]byte
	s := strconv.AppendUint(buf[:0], v, 16)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendUintArray appends "[a, b, c]" as rmgrdesc_utils.c's array_desc with
// an element printer of "%u" does (PostgreSQL 16 and later).
func appendUintArray[T ~uint8 | ~uint16 | ~uint32 | ~uint64](dst []byte, vals []T) []byte {
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, ']')
}

// appendBool appends "true" or "false".
func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendTF appends C's "%c" of b ? 'T' : 'F'.
func appendTF(dst []byte, b bool) []byte {
	if b {
		return append(dst, 'T')
	}
	return append(dst, 'F')
}

// appendFullXid appends a FullTransactionId as "epoch:xid" (EpochFromFullTransactionId,
// XidFromFullTransactionId).
func appendFullXid(dst []byte, full uint64) []byte {
	dst = appendUint(dst, full>>32)
	dst = append(dst, ':')
	return appendUint(dst, full&0xFFFFFFFF)
}

// appendUpperHex appends v as printf's "%X".
func appendUpperHex(dst []byte, v uint64) []byte {
	const digits = "0123456789ABCDEF"
	var buf [16]byte
	i := len(buf)
	for {
		i--
		buf[i] = digits[v&15]
		v >>= 4
		if v == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}

// appendCFloat appends v as C's printf does with format 'f' ("%f": six
// decimals) or 'g' ("%g": Go's 'g' at precision 6 chooses the form and trims
// zeros as C does), including glibc's "inf", "-inf", "nan" and "-nan".
func appendCFloat(dst []byte, v float64, format byte) []byte {
	switch {
	case math.IsNaN(v):
		if math.Signbit(v) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, v, format, 6, 64)
}
