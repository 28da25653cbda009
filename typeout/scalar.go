package typeout

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

func need(d []byte, n int) error {
	if len(d) != n {
		return fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(d), n)
	}
	return nil
}

// appendBool is boolout (bool.c).
func appendBool(dst, d []byte) ([]byte, error) {
	if err := need(d, 1); err != nil {
		return dst, err
	}
	if d[0] != 0 {
		return append(dst, 't'), nil
	}
	return append(dst, 'f'), nil
}

// appendInt2 is int2out (int.c).
func appendInt2(dst, d []byte) ([]byte, error) {
	if err := need(d, 2); err != nil {
		return dst, err
	}
	return strconv.AppendInt(dst, int64(int16(le16(d))), 10), nil
}

// appendInt4 is int4out (int.c).
func appendInt4(dst, d []byte) ([]byte, error) {
	if err := need(d, 4); err != nil {
		return dst, err
	}
	return strconv.AppendInt(dst, int64(int32(le32(d))), 10), nil
}

// appendInt8 is int8out (int8.c).
func appendInt8(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	return strconv.AppendInt(dst, int64(le64(d)), 10), nil
}

// appendOid is oidout (oid.c), and xidout, cidout.
func appendOid(dst, d []byte) ([]byte, error) {
	if err := need(d, 4); err != nil {
		return dst, err
	}
	return strconv.AppendUint(dst, uint64(le32(d)), 10), nil
}

// appendUint8 is xid8out (xid.c).
func appendUint8(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	return strconv.AppendUint(dst, le64(d), 10), nil
}

// appendCString is cstring_out: up to the first NUL.
func appendCString(dst, d []byte) []byte {
	if i := bytes.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	return append(dst, d...)
}

// appendName is nameout (name.c): NameData is NAMEDATALEN bytes, the name
// ends at its first NUL.
func appendName(dst, d []byte) ([]byte, error) {
	if len(d) != 64 {
		return dst, fmt.Errorf("%w: name of %d bytes, want 64", ErrCorrupt, len(d))
	}
	return appendCString(dst, d), nil
}

// appendChar is charout (char.c): from PostgreSQL 15 a byte with the high
// bit set prints as a backslash and three octal digits; before, as itself.
// NUL prints as nothing.
func (f *Formatter) appendChar(dst, d []byte) ([]byte, error) {
	if err := need(d, 1); err != nil {
		return dst, err
	}
	c := d[0]
	switch {
	case c == 0:
		return dst, nil
	case c >= 0x80 && f.major() >= 15:
		return append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7), nil
	}
	return append(dst, c), nil
}

// appendBytea is byteaout (varlena.c): hex, or with bytea_output = escape
// printable ASCII as itself, a backslash doubled and other bytes as a
// backslash and three octal digits.
func (f *Formatter) appendBytea(dst, d []byte) []byte {
	if !f.Settings.ByteaEscape {
		return AppendByteaHex(dst, d)
	}
	for _, c := range d {
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c < 0x20 || c > 0x7e:
			dst = append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendUUID is uuid_out (uuid.c).
func appendUUID(dst, d []byte) ([]byte, error) {
	if err := need(d, 16); err != nil {
		return dst, err
	}
	for i, c := range d {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst, nil
}

// appendMacaddr is macaddr_out (mac.c) and macaddr8_out (mac8.c).
func appendMacaddr(dst, d []byte, n int) ([]byte, error) {
	if err := need(d, n); err != nil {
		return dst, err
	}
	for i, c := range d {
		if i > 0 {
			dst = append(dst, ':')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst, nil
}

// errMonetary: money's text with an lc_monetary other than C or POSIX.
var errMonetary = errors.New("lc_monetary other than C/POSIX")

// appendMoney is cash_out (cash.c) as the C locale's localeconv() answers
// it: frac_digits and mon_grouping unset (2 and 3), "." and "," as the
// decimal point and thousands separator, "$" as the currency symbol before
// the value, "-" before it all when negative.
func (f *Formatter) appendMoney(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	if !f.Settings.monetaryC() {
		return dst, fmt.Errorf("%w: %w %q", ErrSetting, errMonetary, f.Settings.LCMonetary)
	}
	v := int64(le64(d))
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-v) // -MinInt64 wraps to itself, whose uint64 is right
	}
	dst = append(dst, '$')
	var buf [40]byte
	p := len(buf)
	const points, group = 2, 3
	for pos := points; u != 0 || pos >= 0; pos-- {
		if pos == 0 {
			p--
			buf[p] = '.'
		} else if pos < 0 && pos%group == 0 {
			p--
			buf[p] = ','
		}
		p--
		buf[p] = byte('0' + u%10)
		u /= 10
	}
	return append(dst, buf[p:]...), nil
}
