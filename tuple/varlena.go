package tuple

import (
	"encoding/binary"
	"fmt"

	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/decode"
)

// Varlena headers (src/include/varatt.h, postgres.h before 16), as a
// little-endian machine stores them:
//
//	first byte xxxxxx00: 4-byte header, uncompressed (VARATT_IS_4B_U);
//	                     size = (header >> 2) & 0x3FFFFFFF, header included
//	first byte xxxxxx10: 4-byte header, compressed inline (VARATT_IS_4B_C),
//	                     then va_tcinfo u32: raw size (low 30 bits) and, from
//	                     14, the method (top 2 bits); compressed data at 8
//	first byte xxxxxxx1: 1-byte header (VARATT_IS_1B), size = byte >> 1
//	first byte 00000001: external (VARATT_IS_1B_E), then va_tag u8:
//	                     VARTAG_ONDISK (18) is followed by varatt_external
//	                     (16 bytes, unaligned)
const (
	varHdrSz           = 4          // VARHDRSZ
	varHdrSzCompressed = 8          // VARHDRSZ_COMPRESSED: header and va_tcinfo
	varHdrSzExternal   = 2          // VARHDRSZ_EXTERNAL: 0x01 and va_tag
	extSizeBits        = 30         // VARLENA_EXTSIZE_BITS
	extSizeMask        = 0x3FFFFFFF // VARLENA_EXTSIZE_MASK

	vartagIndirect   = 1  // VARTAG_INDIRECT (in memory only)
	vartagExpandedRO = 2  // VARTAG_EXPANDED_RO (in memory only)
	vartagExpandedRW = 3  // VARTAG_EXPANDED_RW (in memory only)
	vartagOnDisk     = 18 // VARTAG_ONDISK
	sizeofExternal   = 16 // sizeof(varatt_external)
)

// datumError is a datum's fault before it has a position.
type datumError struct {
	msg string
	err error
}

// classify returns a varlena's form and stored size (VARSIZE_ANY), header
// included, checking that it fits in b.
func classify(b []byte) (Form, int, *datumError) {
	if len(b) == 0 {
		return Null, 0, &datumError{"varlena starts at the tuple's end", ErrCorrupt}
	}
	b0 := b[0]
	switch {
	case b0 == 0x01: // VARATT_IS_1B_E
		if len(b) < varHdrSzExternal {
			return Null, 0, &datumError{"external varlena cut before its tag", ErrCorrupt}
		}
		switch tag := b[1]; tag {
		case vartagOnDisk:
			n := varHdrSzExternal + sizeofExternal
			if len(b) < n {
				return Null, 0, &datumError{fmt.Sprintf("TOAST pointer of %d bytes cut at %d", n, len(b)), ErrCorrupt}
			}
			return External, n, nil
		case vartagIndirect, vartagExpandedRO, vartagExpandedRW:
			return Null, 0, &datumError{fmt.Sprintf("in-memory TOAST pointer (va_tag %d) on disk", tag), ErrUnsupported}
		default:
			return Null, 0, &datumError{fmt.Sprintf("external varlena with unknown va_tag %d", tag), ErrCorrupt}
		}
	case b0&0x01 == 0x01: // VARATT_IS_1B: VARSIZE_1B = (b0 >> 1) & 0x7F, never 0 here
		n := int(b0 >> 1)
		if n > len(b) {
			return Null, 0, &datumError{fmt.Sprintf("%d-byte short varlena cut at %d", n, len(b)), ErrCorrupt}
		}
		return Short, n, nil
	}
	if len(b) < varHdrSz {
		return Null, 0, &datumError{fmt.Sprintf("4-byte varlena header cut at %d", len(b)), ErrCorrupt}
	}
	n := int(binary.LittleEndian.Uint32(b) >> 2 & extSizeMask)
	form, least := Long, varHdrSz
	if b0&0x03 == 0x02 { // VARATT_IS_4B_C
		form, least = Compressed, varHdrSzCompressed
	}
	if n < least {
		return Null, 0, &datumError{fmt.Sprintf("varlena size %d below its header's %d", n, least), ErrCorrupt}
	}
	if n > len(b) {
		return Null, 0, &datumError{fmt.Sprintf("%d-byte varlena cut at %d", n, len(b)), ErrCorrupt}
	}
	return form, n, nil
}

// Method is a TOAST compression method (ToastCompressionId,
// src/include/access/toast_compression.h): the top two bits of va_tcinfo
// and va_extinfo from 14; always pglz before.
type Method uint8

// Compression methods.
const (
	PGLZ Method = 0 // TOAST_PGLZ_COMPRESSION_ID
	LZ4  Method = 1 // TOAST_LZ4_COMPRESSION_ID
)

func (m Method) String() string {
	switch m {
	case PGLZ:
		return "pglz"
	case LZ4:
		return "lz4"
	}
	return fmt.Sprintf("method %d", uint8(m))
}

// ExternalPointer is varatt_external (varatt.h): where a value moved out of
// line lies in its TOAST relation.
type ExternalPointer struct {
	RawSize    int32  // va_rawsize: the value's size before compression, header included
	ExtInfo    uint32 // va_extinfo (va_extsize before 14): stored size, method in the top 2 bits
	ValueID    uint32 // va_valueid: chunk_id of its chunks
	ToastRelid uint32 // va_toastrelid: the TOAST relation's oid
}

// ExtSize is the size stored in the TOAST relation (VARATT_EXTERNAL_GET_EXTSIZE).
func (p ExternalPointer) ExtSize() int { return int(p.ExtInfo & extSizeMask) }

// IsCompressed reports whether the stored bytes are compressed
// (VARATT_EXTERNAL_IS_COMPRESSED).
func (p ExternalPointer) IsCompressed() bool { return p.ExtSize() < int(p.RawSize)-varHdrSz }

// Method is the compression method (VARATT_EXTERNAL_GET_COMPRESS_METHOD),
// meaningful when IsCompressed.
func (p ExternalPointer) Method() Method { return Method(p.ExtInfo >> extSizeBits) }

// External returns the TOAST pointer of an External value.
func (v Value) External() (ExternalPointer, bool) {
	if v.Form != External || len(v.Raw) < varHdrSzExternal+sizeofExternal {
		return ExternalPointer{}, false
	}
	le, b := binary.LittleEndian, v.Raw[varHdrSzExternal:]
	return ExternalPointer{RawSize: int32(le.Uint32(b)), ExtInfo: le.Uint32(b[4:]), ValueID: le.Uint32(b[8:]), ToastRelid: le.Uint32(b[12:])}, true
}

// Compression returns an inline Compressed value's method and size once
// decompressed (va_tcinfo).
func (v Value) Compression() (m Method, rawSize int, ok bool) {
	if v.Form != Compressed || len(v.Raw) < varHdrSzCompressed {
		return 0, 0, false
	}
	tc := binary.LittleEndian.Uint32(v.Raw[varHdrSz:])
	return Method(tc >> extSizeBits), int(tc & extSizeMask), true
}

// Payload returns the stored bytes without their header: a fixed-length
// value's bytes, a varlena's data (VARDATA_ANY), a compressed value's
// compressed stream, a TOAST pointer's varatt_external, a cstring without
// its NUL; nil for NULL.
func (v Value) Payload() []byte {
	switch v.Form {
	case Fixed:
		return v.Raw
	case Short:
		return v.Raw[1:]
	case Long:
		return v.Raw[varHdrSz:]
	case Compressed:
		return v.Raw[varHdrSzCompressed:]
	case External:
		return v.Raw[varHdrSzExternal:]
	case CString:
		return v.Raw[:len(v.Raw)-1]
	}
	return nil
}

// Detoast appends the value's plain bytes to dst, as detoast_attr would
// give them without their header: inline compressed data decompressed,
// external values fetched through d (nil is allowed when no value is
// external) and decompressed if they were stored compressed. Fixed, short
// and long values and cstrings give their Payload.
func (v Value) Detoast(dst []byte, d Detoaster) ([]byte, error) {
	switch v.Form {
	case Null:
		return dst, nil
	case Compressed:
		return decompress(dst, v.Raw[varHdrSz:])
	case External:
		p, _ := v.External()
		if d == nil {
			return dst, fmt.Errorf("toast value %d in relation %d: %w", p.ValueID, p.ToastRelid, ErrNoToast)
		}
		want := p.ExtSize()
		if p.RawSize < varHdrSz || int(p.RawSize) > extSizeMask+varHdrSz || want > int(p.RawSize)-varHdrSz {
			return dst, fmt.Errorf("toast value %d in relation %d: va_rawsize %d, stored size %d: %w", p.ValueID, p.ToastRelid, p.RawSize, want, ErrCorrupt)
		}
		stored, err := d.Fetch(p.ToastRelid, p.ValueID, want)
		if err != nil {
			return dst, err
		}
		if len(stored) != want {
			return dst, fmt.Errorf("toast value %d in relation %d: %d bytes fetched, the pointer says %d: %w", p.ValueID, p.ToastRelid, len(stored), want, ErrCorrupt)
		}
		if !p.IsCompressed() {
			return append(dst, stored...), nil
		}
		// toast_fetch_datum gives a 4B_C varlena: its chunks hold va_tcinfo
		// and the compressed data (toast_save_datum stored VARDATA of the
		// compressed value).
		n0 := len(dst)
		dst, err = decompress(dst, stored)
		if err != nil {
			return dst, fmt.Errorf("toast value %d in relation %d: %w", p.ValueID, p.ToastRelid, err)
		}
		if got := len(dst) - n0; got != int(p.RawSize)-varHdrSz {
			return dst, fmt.Errorf("toast value %d in relation %d: %d bytes decompressed, va_rawsize says %d: %w", p.ValueID, p.ToastRelid, got, p.RawSize-varHdrSz, ErrCorrupt)
		}
		return dst, nil
	}
	return append(dst, v.Payload()...), nil
}

// maxExpansion bounds what a compressed stream can decompress to, so that a
// corrupt raw size is refused before it is allocated: a pglz tag of at most
// 3 bytes (and its control bit) yields 273 bytes, an lz4 length byte 255.
const maxExpansion = 256

// decompress appends the decompression of tc (va_tcinfo, then the
// compressed data) to dst, as toast_decompress_datum does: pglz with
// check_complete (pglz_decompress), lz4 with LZ4_decompress_safe, the
// result exactly the raw size.
func decompress(dst, tc []byte) ([]byte, error) {
	if len(tc) < 4 {
		return dst, fmt.Errorf("compressed value of %d bytes has no va_tcinfo: %w", len(tc), ErrCorrupt)
	}
	info := binary.LittleEndian.Uint32(tc)
	raw, method, src := int(info&extSizeMask), Method(info>>extSizeBits), tc[4:]
	if raw > maxExpansion*len(src)+64 {
		return dst, fmt.Errorf("%s value of %d bytes cannot decompress to %d: %w", method, len(src), raw, ErrCorrupt)
	}
	n0 := len(dst)
	dst = grow(dst, raw)
	out := dst[n0 : n0+raw]
	switch method {
	case PGLZ:
		n, err := decode.PGLZDecompress(src, out, true)
		if err != nil || n != raw {
			return dst[:n0], fmt.Errorf("compressed pglz data is corrupt (%d of %d bytes): %w", n, raw, ErrCorrupt)
		}
	case LZ4:
		n, err := lz4.UncompressBlock(src, out)
		if err != nil || n != raw {
			return dst[:n0], fmt.Errorf("compressed lz4 data is corrupt (%d of %d bytes): %w", n, raw, ErrCorrupt)
		}
	default:
		return dst[:n0], fmt.Errorf("compression method %d: %w", method, ErrUnsupported)
	}
	return dst, nil
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}
