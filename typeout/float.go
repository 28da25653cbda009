package typeout

import (
	"math"
	"math/big"
	"strconv"
)

// appendFloat8 is float8out_internal (float.c): NaN and ±Infinity by name;
// with extra_float_digits > 0 the shortest text that reads back exactly
// (double_to_shortest_decimal_buf, common/d2s.c); else printf's
// "%.*g" with DBL_DIG + extra_float_digits significant digits (at least 1).
// Before PostgreSQL 12 there is no shortest form: always "%.*g".
func (f *Formatter) appendFloat8(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	v := math.Float64frombits(le64(d))
	return appendFloat(dst, v, 64, 15, f.Settings.ExtraFloatDigits, f.major() >= 12), nil
}

// appendFloat4 is float4out (float.c): as float8 with float_to_shortest_
// decimal_buf (common/f2s.c) and FLT_DIG.
func (f *Formatter) appendFloat4(dst, d []byte) ([]byte, error) {
	if err := need(d, 4); err != nil {
		return dst, err
	}
	v := float64(math.Float32frombits(le32(d)))
	return appendFloat(dst, v, 32, 6, f.Settings.ExtraFloatDigits, f.major() >= 12), nil
}

func appendFloat(dst []byte, v float64, bits, digits, extra int, hasShortest bool) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	if extra <= 0 || !hasShortest {
		n := digits + extra
		if n < 1 {
			n = 1
		}
		// Go's %g with a precision rounds and trims as C's does: %e when
		// the exponent is < -4 or >= the precision, else %f, trailing
		// zeros removed, an exponent of at least two digits.
		return strconv.AppendFloat(dst, v, 'g', n, bits)
	}
	return appendShortest(dst, v, bits)
}

// appendShortest prints the shortest decimal that reads back as v the way
// Ryu's to_chars (d2s.c, f2s.c) lays it out: fixed point when the decimal
// exponent is in [-4, 15) for doubles ([-4, 6) for floats), else
// d.ddde±XX with at least two exponent digits.
func appendShortest(dst []byte, v float64, bits int) []byte {
	var buf [32]byte
	// 'e' with precision -1: the shortest digits, as d.ddde±XX.
	s := strconv.AppendFloat(buf[:0], v, 'e', -1, bits)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	epos := 0
	for i, c := range s {
		if c == 'e' {
			epos = i
			break
		}
	}
	mant, expPart := s[:epos], s[epos+1:]
	exp, _ := strconv.Atoi(string(expPart))
	var digs [20]byte
	nd := 0
	for _, c := range mant {
		if c != '.' {
			digs[nd] = c
			nd++
		}
	}
	if onBoundary(v, bits, digs[:nd], exp) {
		// PostgreSQL builds Ryu with STRICTLY_SHORTEST 0 (ryu_common.h):
		// a decimal exactly halfway to a neighbouring float is never
		// taken, though it reads back as v; the shortest decimal strictly
		// inside the interval is, v rounded to as many digits as needed.
		for p := nd + 1; p <= 17; p++ {
			s = strconv.AppendFloat(buf[:0], math.Abs(v), 'e', p-1, bits)
			nd, epos = 0, 0
			for i, c := range s {
				if c == 'e' {
					epos = i
					break
				}
				if c != '.' {
					digs[nd] = c
					nd++
				}
			}
			exp, _ = strconv.Atoi(string(s[epos+1:]))
			if !onBoundary(v, bits, digs[:nd], exp) {
				break
			}
		}
		for nd > 1 && digs[nd-1] == '0' {
			nd--
		}
	}
	limit := 15
	if bits == 32 {
		limit = 6
	}
	if neg {
		dst = append(dst, '-')
	}
	if v == 0 {
		return append(dst, '0')
	}
	if exp >= -4 && exp < limit {
		switch {
		case exp < 0:
			dst = append(dst, '0', '.')
			for i := -1; i > exp; i-- {
				dst = append(dst, '0')
			}
			dst = append(dst, digs[:nd]...)
		case exp+1 >= nd:
			dst = append(dst, digs[:nd]...)
			for i := nd; i < exp+1; i++ {
				dst = append(dst, '0')
			}
		default:
			dst = append(dst, digs[:exp+1]...)
			dst = append(dst, '.')
			dst = append(dst, digs[exp+1:nd]...)
		}
		return dst
	}
	dst = append(dst, digs[0])
	if nd > 1 {
		dst = append(dst, '.')
		dst = append(dst, digs[1:nd]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
		exp = -exp
	} else {
		dst = append(dst, '+')
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

// onBoundary reports whether the decimal digs × 10^(exp-len(digs)+1) is
// exactly halfway between v and a neighbouring float of its precision.
// Only floats of at least 2^(mantissa bits - 1) can have such a midpoint
// with 17 significant digits or fewer (below, the midpoint's expansion is
// too long), so the exact arithmetic is done for those alone.
func onBoundary(v float64, bits int, digs []byte, exp int) bool {
	a := math.Abs(v)
	var lo, hi float64
	if bits == 32 {
		if a < 1<<23 || math.IsInf(a, 0) {
			return false
		}
		f := float32(a)
		lo, hi = float64(math.Nextafter32(f, 0)), float64(math.Nextafter32(f, float32(math.Inf(1))))
	} else {
		if a < 1<<52 || math.IsInf(a, 0) {
			return false
		}
		lo, hi = math.Nextafter(a, 0), math.Nextafter(a, math.Inf(1))
	}
	d := new(big.Int)
	d.SetString(string(digs), 10)
	shift := exp - (len(digs) - 1)
	dec := new(big.Rat)
	if shift >= 0 {
		d.Mul(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
		dec.SetInt(d)
	} else {
		dec.SetFrac(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-shift)), nil))
	}
	mid := func(x, y float64) *big.Rat {
		r := new(big.Rat).SetFloat64(x)
		r.Add(r, new(big.Rat).SetFloat64(y))
		return r.Quo(r, big.NewRat(2, 1))
	}
	if dec.Cmp(mid(lo, a)) == 0 {
		return true
	}
	return !math.IsInf(hi, 0) && bits == 64 && dec.Cmp(mid(a, hi)) == 0 ||
		bits == 32 && !math.IsInf(float64(float32(hi)), 0) && dec.Cmp(mid(a, hi)) == 0
}
