package typeout

import (
	"fmt"
	"math"
	"strconv"

	"github.com/walscope/walscope/tuple"
)

// More built-in type OIDs (pg_type.dat).
const (
	oidInt2vector = 22
	oidTid        = 27
	oidOidvector  = 30
	oidPoint      = 600
	oidLseg       = 601
	oidPath       = 602
	oidBox        = 603
	oidPolygon    = 604
	oidLine       = 628
	oidCircle     = 718
	oidBit        = 1560
	oidVarbit     = 1562
	oidPgLsn      = 3220
)

// appendGeoFloat is single_encode (geo_ops.c): float8out_internal from
// PostgreSQL 12 (NaN and the infinities by name); before, "%.*g" with
// DBL_DIG + extra_float_digits digits (PostgreSQL 10 and 11 print NaN and
// Infinity too: checked on both).
func (f *Formatter) appendGeoFloat(dst []byte, v float64) []byte {
	return appendFloat(dst, v, 64, 15, f.Settings.ExtraFloatDigits, f.major() >= 12)
}

// appendPoints is path_encode (geo_ops.c): open paths in [ ], closed in
// ( ), none for a point and a box; each point "(x,y)", separated by ",".
func (f *Formatter) appendPoints(dst, pts []byte, open, closed bool) []byte {
	if open {
		dst = append(dst, '[')
	} else if closed {
		dst = append(dst, '(')
	}
	for i := 0; i+16 <= len(pts); i += 16 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '(')
		dst = f.appendGeoFloat(dst, math.Float64frombits(le64(pts[i:])))
		dst = append(dst, ',')
		dst = f.appendGeoFloat(dst, math.Float64frombits(le64(pts[i+8:])))
		dst = append(dst, ')')
	}
	if open {
		dst = append(dst, ']')
	} else if closed {
		dst = append(dst, ')')
	}
	return dst
}

// appendGeometry prints the geometric types: point_out, lseg_out, box_out
// (BOX is high then low), path_out (PATH: npts, closed, padding, points),
// poly_out (POLYGON: npts, the bounding box, points), line_out ({A,B,C})
// and circle_out (<(x,y),r>).
func (f *Formatter) appendGeometry(dst []byte, oid uint32, d []byte) ([]byte, error) {
	switch oid {
	case oidPoint:
		if err := need(d, 16); err != nil {
			return dst, err
		}
		return f.appendPoints(dst, d, false, false), nil
	case oidLseg:
		if err := need(d, 32); err != nil {
			return dst, err
		}
		return f.appendPoints(dst, d, true, false), nil
	case oidBox:
		if err := need(d, 32); err != nil {
			return dst, err
		}
		return f.appendPoints(dst, d, false, false), nil
	case oidLine, oidCircle:
		if err := need(d, 24); err != nil {
			return dst, err
		}
		a := math.Float64frombits(le64(d))
		b := math.Float64frombits(le64(d[8:]))
		c := math.Float64frombits(le64(d[16:]))
		if oid == oidLine {
			dst = append(dst, '{')
			dst = f.appendGeoFloat(dst, a)
			dst = append(dst, ',')
			dst = f.appendGeoFloat(dst, b)
			dst = append(dst, ',')
			dst = f.appendGeoFloat(dst, c)
			return append(dst, '}'), nil
		}
		dst = append(dst, '<')
		dst = f.appendPoints(dst, d[:16], false, false)
		dst = append(dst, ',')
		dst = f.appendGeoFloat(dst, c)
		return append(dst, '>'), nil
	case oidPath:
		if len(d) < 12 {
			return dst, fmt.Errorf("%w: path of %d bytes", ErrCorrupt, len(d))
		}
		n := int(int32(le32(d)))
		if n < 0 || n > (len(d)-12)/16 || len(d)-12 != 16*n {
			return dst, fmt.Errorf("%w: path of %d points in %d bytes", ErrCorrupt, n, len(d))
		}
		closed := le32(d[4:]) != 0
		return f.appendPoints(dst, d[12:], !closed, closed), nil
	case oidPolygon:
		if len(d) < 36 {
			return dst, fmt.Errorf("%w: polygon of %d bytes", ErrCorrupt, len(d))
		}
		n := int(int32(le32(d)))
		if n < 0 || len(d)-36 != 16*n {
			return dst, fmt.Errorf("%w: polygon of %d points in %d bytes", ErrCorrupt, n, len(d))
		}
		return f.appendPoints(dst, d[36:], false, true), nil
	}
	return dst, fmt.Errorf("%w: not a geometric type", ErrUnsupported)
}

// appendBits is bit_out and varbit_out (varbit.c): VarBit is the length
// in bits (int32) and the bits, most significant first.
func appendBits(dst, d []byte) ([]byte, error) {
	if len(d) < 4 {
		return dst, fmt.Errorf("%w: bit string of %d bytes", ErrCorrupt, len(d))
	}
	n := int(int32(le32(d)))
	if n < 0 || (n+7)/8 != len(d)-4 {
		return dst, fmt.Errorf("%w: %d bits in %d bytes", ErrCorrupt, n, len(d)-4)
	}
	for i := 0; i < n; i++ {
		dst = append(dst, '0'+(d[4+i/8]>>(7-i%8))&1)
	}
	return dst, nil
}

// appendPgLsn is pg_lsn_out (pg_lsn.c): "%X/%X".
func appendPgLsn(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	v := le64(d)
	dst = appendUpperHex(dst, v>>32)
	dst = append(dst, '/')
	return appendUpperHex(dst, v&0xFFFFFFFF), nil
}

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

// appendTid is tidout (tid.c): ItemPointerData is the block number as two
// uint16 halves (high first) and the offset.
func appendTid(dst, d []byte) ([]byte, error) {
	if err := need(d, 6); err != nil {
		return dst, err
	}
	blk := uint64(le16(d))<<16 | uint64(le16(d[2:]))
	dst = append(dst, '(')
	dst = strconv.AppendUint(dst, blk, 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(le16(d[4:])), 10)
	return append(dst, ')'), nil
}

// appendVector is int2vectorout (int.c) and oidvectorout (oid.c): the
// one-dimensional array's elements separated by spaces.
func appendVector(dst, d []byte, oid2 bool) ([]byte, error) {
	a, err := tuple.ParseArray(d)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	elem := tuple.Attr{Len: 2, Align: 's', ByVal: true}
	if oid2 {
		elem = tuple.Attr{Len: 4, Align: 'i', ByVal: true}
	}
	vals, err := a.Elements(nil, elem)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	for i, v := range vals {
		if v.IsNull() {
			return dst, fmt.Errorf("%w: NULL in a vector", ErrCorrupt)
		}
		if i > 0 {
			dst = append(dst, ' ')
		}
		if oid2 {
			dst = strconv.AppendUint(dst, uint64(le32(v.Raw)), 10)
		} else {
			dst = strconv.AppendInt(dst, int64(int16(le16(v.Raw))), 10)
		}
	}
	return dst, nil
}
