package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sentinel errors; every error of the package wraps one of them.
var (
	// ErrCorrupt: the bytes are not a well-formed tuple, datum, page or
	// TOAST value (a length past the end, a bad header, a missing chunk).
	ErrCorrupt = errors.New("corrupt tuple data")
	// ErrUnsupported: a well-formed datum walscope does not read (an
	// in-memory indirect or expanded pointer, an unknown compression method).
	ErrUnsupported = errors.New("unsupported datum")
	// ErrNoToast: an external value and no Detoaster that has it.
	ErrNoToast = errors.New("TOAST value not available")
)

// Error is a positioned error: which attribute (1-based attnum, 0 for the
// header), at which offset of the tuple (from its first byte), and why.
type Error struct {
	Attnum int
	Name   string // the attribute's name, when known
	Offset int
	Msg    string
	Err    error // ErrCorrupt or ErrUnsupported
}

func (e *Error) Error() string {
	if e.Attnum == 0 {
		return fmt.Sprintf("tuple header at offset %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("tuple attribute %d (%s) at offset %d: %s", e.Attnum, e.Name, e.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// HeapTupleHeaderData (src/include/access/htup_details.h), the same from 10
// to 18:
//
//	t_xmin u32 @0, t_xmax u32 @4, t_field3 (t_cid / t_xvac) u32 @8,
//	t_ctid ItemPointerData {bi_hi u16, bi_lo u16, ip_posid u16} @12,
//	t_infomask2 u16 @18, t_infomask u16 @20, t_hoff u8 @22, t_bits[] @23.
const SizeofHeapTupleHeader = 23 // offsetof(HeapTupleHeaderData, t_bits)

// t_infomask and t_infomask2 bits (htup_details.h).
const (
	HeapHasNull     = 0x0001 // HEAP_HASNULL
	HeapHasVarWidth = 0x0002 // HEAP_HASVARWIDTH
	HeapHasExternal = 0x0004 // HEAP_HASEXTERNAL
	HeapHasOID      = 0x0008 // HEAP_HASOID in 10 and 11 (HEAP_HASOID_OLD from 12)
	HeapNattsMask   = 0x07FF // HEAP_NATTS_MASK of t_infomask2
)

// Header is a tuple's HeapTupleHeaderData.
type Header struct {
	Xmin, Xmax uint32 // t_xmin, t_xmax
	Field3     uint32 // t_cid or t_xvac
	CtidBlock  uint32 // t_ctid's block (bi_hi << 16 | bi_lo)
	CtidOffset uint16 // t_ctid's ip_posid
	Infomask2  uint16
	Infomask   uint16
	Hoff       uint8  // t_hoff: where the data starts
	Bits       []byte // t_bits, the null bitmap; nil without HEAP_HASNULL
	OID        uint32 // HEAP_HASOID (10 and 11): the oid kept before t_hoff
	HasOID     bool
}

// Natts is the number of attributes the tuple holds (HeapTupleHeaderGetNatts).
func (h *Header) Natts() int { return int(h.Infomask2 & HeapNattsMask) }

// ParseHeader reads a tuple's header and checks that t_hoff, the null bitmap
// and the oid fit in tup.
func ParseHeader(tup []byte) (Header, error) {
	var h Header
	if len(tup) < SizeofHeapTupleHeader {
		return h, &Error{Offset: 0, Msg: fmt.Sprintf("%d bytes, shorter than a tuple header (%d)", len(tup), SizeofHeapTupleHeader), Err: ErrCorrupt}
	}
	le := binary.LittleEndian
	h.Xmin, h.Xmax, h.Field3 = le.Uint32(tup[0:]), le.Uint32(tup[4:]), le.Uint32(tup[8:])
	h.CtidBlock = uint32(le.Uint16(tup[12:]))<<16 | uint32(le.Uint16(tup[14:]))
	h.CtidOffset = le.Uint16(tup[16:])
	h.Infomask2, h.Infomask, h.Hoff = le.Uint16(tup[18:]), le.Uint16(tup[20:]), tup[22]
	if int(h.Hoff) < SizeofHeapTupleHeader || int(h.Hoff) > len(tup) {
		return h, &Error{Offset: 22, Msg: fmt.Sprintf("t_hoff %d outside the tuple's %d bytes", h.Hoff, len(tup)), Err: ErrCorrupt}
	}
	end := SizeofHeapTupleHeader
	if h.Infomask&HeapHasNull != 0 {
		end += (h.Natts() + 7) / 8 // BITMAPLEN
		if end > int(h.Hoff) {
			return h, &Error{Offset: 22, Msg: fmt.Sprintf("null bitmap of %d attributes runs past t_hoff %d", h.Natts(), h.Hoff), Err: ErrCorrupt}
		}
		h.Bits = tup[SizeofHeapTupleHeader:end:end]
	}
	if h.Infomask&HeapHasOID != 0 {
		// HeapTupleHeaderGetOid (11): *(Oid *) ((char *) tup + t_hoff - sizeof(Oid))
		if int(h.Hoff)-4 < end {
			return h, &Error{Offset: 22, Msg: "HEAP_HASOID but no room for the oid before t_hoff", Err: ErrCorrupt}
		}
		h.OID, h.HasOID = le.Uint32(tup[int(h.Hoff)-4:]), true
	}
	return h, nil
}

// Attr describes one attribute of a relation, as its pg_attribute row does
// (FormData_pg_attribute, src/include/catalog/pg_attribute.h).
type Attr struct {
	Name    string
	TypeOID uint32 // atttypid
	Len     int16  // attlen: > 0 fixed, -1 varlena, -2 cstring
	Align   byte   // attalign: 'c', 's', 'i' or 'd'
	ByVal   bool   // attbyval
	Dropped bool   // attisdropped: still stored, with its length and alignment
	// HasMissing and Missing: the value a tuple written before the column was
	// added reads as (atthasmissing, attmissingval's one element, as a datum
	// is stored: a varlena with its header). HasMissing with Missing nil
	// reads as NULL.
	HasMissing bool
	Missing    []byte
	NotNull    bool // attnotnull (informational: the bitmap decides)
}

// alignment returns attalign in bytes (TYPALIGN_*), or 0 if unknown.
func (a *Attr) alignment() int {
	switch a.Align {
	case 'c':
		return 1
	case 's':
		return 2
	case 'i':
		return 4
	case 'd':
		return 8
	}
	return 0
}

// Form says how a datum is stored.
type Form uint8

// Forms of a datum.
const (
	Null       Form = iota // NULL: no bytes
	Fixed                  // attlen > 0: Raw is the attlen bytes
	Short                  // varlena with a 1-byte header (VARATT_IS_1B), inline, uncompressed
	Long                   // varlena with a 4-byte header (VARATT_IS_4B_U), inline, uncompressed
	Compressed             // varlena with a 4-byte header, compressed inline (VARATT_IS_4B_C)
	External               // an on-disk TOAST pointer (VARATT_IS_EXTERNAL_ONDISK)
	CString                // attlen -2: NUL-terminated; Raw includes the NUL
)

var formNames = [...]string{"null", "fixed", "short", "long", "compressed", "external", "cstring"}

func (f Form) String() string {
	if int(f) < len(formNames) {
		return formNames[f]
	}
	return fmt.Sprintf("Form(%d)", f)
}

// Value is one column of a deformed tuple.
type Value struct {
	Form Form
	// Raw is the datum exactly as stored, varlena header included: a view
	// into the tuple (or into Attr.Missing), not a copy.
	Raw []byte
	// Offset is Raw's offset in the tuple (from its first byte), -1 for a
	// NULL or missing value.
	Offset int
	// Missing: the tuple predates the column, and the value is its
	// attmissingval (or NULL).
	Missing bool
	// Dropped: the attribute is dropped (attisdropped); its bytes are still
	// there.
	Dropped bool
}

// IsNull reports whether the value is NULL.
func (v Value) IsNull() bool { return v.Form == Null }

// Deform deforms tup (header and data) with desc, appending one Value per
// attribute of desc to dst[:0]. Attributes past the tuple's natts read as
// their missing value or NULL; attributes the tuple holds beyond desc are
// ignored (heap_deform_tuple). Values point into tup.
func Deform(dst []Value, tup []byte, desc []Attr) ([]Value, Header, error) {
	h, err := ParseHeader(tup)
	if err != nil {
		return dst[:0], h, err
	}
	dst, err = deform(dst[:0], tup, int(h.Hoff), h.Bits, h.Natts(), desc)
	return dst, h, err
}

// DeformData deforms a tuple given apart from its header, as WAL records
// carry it: data from t_hoff on, the null bitmap (nil if the tuple has no
// HEAP_HASNULL) and the number of attributes it holds. Offsets in the
// returned Values and errors are from data's start.
func DeformData(dst []Value, data, bits []byte, natts int, desc []Attr) ([]Value, error) {
	if bits != nil && len(bits) < (natts+7)/8 {
		return dst[:0], &Error{Msg: fmt.Sprintf("null bitmap of %d bytes for %d attributes", len(bits), natts), Err: ErrCorrupt}
	}
	return deform(dst[:0], data, 0, bits, natts, desc)
}

// deform walks the attributes as heap_deform_tuple does: off runs from
// start (t_hoff) through buf; each attribute is aligned to attalign, except a
// varlena whose first byte is not a pad byte (a 1-byte header needs none).
func deform(dst []Value, buf []byte, start int, bits []byte, natts int, desc []Attr) ([]Value, error) {
	off := start
	for i := range desc {
		a := &desc[i]
		if i >= natts {
			v, derr := missingValue(a)
			if derr != nil {
				return dst, &Error{Attnum: i + 1, Name: a.Name, Offset: -1, Msg: "attmissingval: " + derr.msg, Err: derr.err}
			}
			dst = append(dst, v)
			continue
		}
		if bits != nil && bits[i>>3]&(1<<(i&7)) == 0 { // att_isnull
			dst = append(dst, Value{Form: Null, Offset: -1, Dropped: a.Dropped})
			continue
		}
		align := a.alignment()
		if align == 0 {
			return dst, corruptAt(i, a, off, "attalign %q is not c, s, i or d", a.Align)
		}
		switch {
		case a.Len > 0:
			off = alignUp(off, align)
			if off+int(a.Len) > len(buf) {
				return dst, corruptAt(i, a, off, "%d-byte value runs past the tuple's %d bytes", a.Len, len(buf))
			}
			dst = append(dst, Value{Form: Fixed, Raw: buf[off : off+int(a.Len) : off+int(a.Len)], Offset: off, Dropped: a.Dropped})
			off += int(a.Len)
		case a.Len == -1:
			// att_align_pointer: a non-zero byte here starts a varlena (a
			// 1-byte header is never padded); a zero is padding.
			if off < len(buf) && buf[off] == 0 {
				off = alignUp(off, align)
			}
			form, n, derr := classify(buf[min(off, len(buf)):])
			if derr != nil {
				return dst, &Error{Attnum: i + 1, Name: a.Name, Offset: off, Msg: derr.msg, Err: derr.err}
			}
			dst = append(dst, Value{Form: form, Raw: buf[off : off+n : off+n], Offset: off, Dropped: a.Dropped})
			off += n
		case a.Len == -2:
			off = alignUp(off, align)
			if off > len(buf) {
				return dst, corruptAt(i, a, off, "cstring starts past the tuple's %d bytes", len(buf))
			}
			n := bytes.IndexByte(buf[off:], 0)
			if n < 0 {
				return dst, corruptAt(i, a, off, "cstring without its terminating NUL")
			}
			dst = append(dst, Value{Form: CString, Raw: buf[off : off+n+1 : off+n+1], Offset: off, Dropped: a.Dropped})
			off += n + 1
		default:
			return dst, corruptAt(i, a, off, "attlen %d", a.Len)
		}
	}
	return dst, nil
}

// missingValue is getmissingattr's answer for an attribute the tuple does
// not hold.
func missingValue(a *Attr) (Value, *datumError) {
	if !a.HasMissing || a.Missing == nil {
		return Value{Form: Null, Offset: -1, Missing: true, Dropped: a.Dropped}, nil
	}
	v := Value{Raw: a.Missing, Offset: -1, Missing: true, Dropped: a.Dropped}
	switch {
	case a.Len > 0:
		if len(a.Missing) < int(a.Len) {
			return v, &datumError{fmt.Sprintf("%d bytes for a %d-byte type", len(a.Missing), a.Len), ErrCorrupt}
		}
		v.Form, v.Raw = Fixed, a.Missing[:a.Len:a.Len]
	case a.Len == -2:
		n := bytes.IndexByte(a.Missing, 0)
		if n < 0 {
			return v, &datumError{"cstring without its terminating NUL", ErrCorrupt}
		}
		v.Form, v.Raw = CString, a.Missing[:n+1:n+1]
	case a.Len == -1:
		form, n, derr := classify(a.Missing)
		if derr != nil {
			return v, derr
		}
		v.Form, v.Raw = form, a.Missing[:n:n]
	default:
		return v, &datumError{fmt.Sprintf("attlen %d", a.Len), ErrCorrupt}
	}
	return v, nil
}

// corruptAt is the ErrCorrupt of attribute i at offset off.
func corruptAt(i int, a *Attr, off int, format string, args ...any) error {
	return &Error{Attnum: i + 1, Name: a.Name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

func alignUp(off, align int) int { return (off + align - 1) &^ (align - 1) }
