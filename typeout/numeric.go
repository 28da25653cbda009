package typeout

import "fmt"

// Numeric's stored header (NumericShort, NumericLong, numeric.c).
const (
	numericSignMask  = 0xC000
	numericNeg       = 0x4000
	numericShort     = 0x8000
	numericSpecial   = 0xC000
	numericNaN       = 0xC000
	numericPInf      = 0xD000
	numericNInf      = 0xF000
	numericDscale    = 0x3FFF
	shortSign        = 0x2000
	shortDscaleMask  = 0x1F80
	shortDscaleShift = 7
	shortWeightSign  = 0x0040
	shortWeightMask  = 0x003F
	numericNBase     = 10000
)

// numericVar is a stored numeric's fields (NumericVar without the buffer):
// digits in base 10000, most significant first, the first of weight
// weight (its value times 10000^weight), dscale digits after the point.
type numericVar struct {
	neg            bool
	special        uint16 // numericNaN, numericPInf, numericNInf or 0
	weight, dscale int
	digits         []byte // little-endian int16s, each 0..9999
}

// parseNumeric reads a numeric's plain bytes (its varlena payload): the
// 2-byte header of the short form (or of NaN and ±Infinity), or the long
// form's n_sign_dscale and n_weight, then NumericDigits.
func parseNumeric(d []byte) (numericVar, error) {
	var n numericVar
	if len(d) < 2 {
		return n, fmt.Errorf("%w: numeric of %d bytes", ErrCorrupt, len(d))
	}
	h := le16(d)
	switch h & numericSignMask {
	case numericSpecial:
		switch h {
		case numericNaN, numericPInf, numericNInf:
			n.special = h
			return n, nil
		}
		return n, fmt.Errorf("%w: numeric header %#04x", ErrCorrupt, h)
	case numericShort:
		n.neg = h&shortSign != 0
		n.dscale = int(h&shortDscaleMask) >> shortDscaleShift
		n.weight = int(h & shortWeightMask)
		if h&shortWeightSign != 0 {
			n.weight -= shortWeightMask + 1
		}
		n.digits = d[2:]
	default:
		if len(d) < 4 {
			return n, fmt.Errorf("%w: long numeric of %d bytes", ErrCorrupt, len(d))
		}
		n.neg = h&numericSignMask == numericNeg
		n.dscale = int(h & numericDscale)
		n.weight = int(int16(le16(d[2:])))
		n.digits = d[4:]
	}
	if len(n.digits)%2 != 0 {
		return n, fmt.Errorf("%w: numeric digits of %d bytes", ErrCorrupt, len(n.digits))
	}
	for i := 0; i < len(n.digits); i += 2 {
		if le16(n.digits[i:]) >= numericNBase {
			return n, fmt.Errorf("%w: numeric digit %d", ErrCorrupt, le16(n.digits[i:]))
		}
	}
	return n, nil
}

func (n *numericVar) ndigits() int { return len(n.digits) / 2 }
func (n *numericVar) digit(i int) int {
	if i < 0 || i >= n.ndigits() {
		return 0
	}
	return int(le16(n.digits[2*i:]))
}

// appendNumeric is numeric_out (numeric.c).
func appendNumeric(dst, d []byte) ([]byte, error) {
	n, err := parseNumeric(d)
	if err != nil {
		return dst, err
	}
	return n.appendText(dst), nil
}

// appendText is get_str_from_var (numeric.c): the integer part without
// leading zeros (a lone 0 when the weight is negative), then dscale
// digits after a point, zeros beyond the stored digits.
func (n *numericVar) appendText(dst []byte) []byte {
	switch n.special {
	case numericNaN:
		return append(dst, "NaN"...)
	case numericPInf:
		return append(dst, "Infinity"...)
	case numericNInf:
		return append(dst, "-Infinity"...)
	}
	if n.neg {
		dst = append(dst, '-')
	}
	var d int
	if n.weight < 0 {
		d = n.weight + 1
		dst = append(dst, '0')
	} else {
		for d = 0; d <= n.weight; d++ {
			dig := n.digit(d)
			putit := d > 0
			for _, p := range [3]int{1000, 100, 10} {
				q := dig / p
				dig -= q * p
				putit = putit || q > 0
				if putit {
					dst = append(dst, byte('0'+q))
				}
			}
			dst = append(dst, byte('0'+dig))
		}
	}
	if n.dscale > 0 {
		dst = append(dst, '.')
		for i := 0; i < n.dscale; d, i = d+1, i+4 {
			dig := n.digit(d)
			var four [4]byte
			for j := 3; j >= 0; j-- {
				four[j] = byte('0' + dig%10)
				dig /= 10
			}
			k := n.dscale - i
			if k > 4 {
				k = 4
			}
			dst = append(dst, four[:k]...)
		}
	}
	return dst
}
