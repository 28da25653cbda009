package xlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// LSN is a position in the WAL stream, XLogRecPtr (src/include/access/xlogdefs.h).
type LSN uint64

// InvalidLSN is InvalidXLogRecPtr.
const InvalidLSN LSN = 0

// String formats the LSN as PostgreSQL's LSN_FORMAT_ARGS does with "%X/%X".
func (l LSN) String() string {
	return string(l.Append(nil))
}

// Append appends "%X/%X".
func (l LSN) Append(dst []byte) []byte {
	dst = appendUpperHex(dst, uint64(l>>32), 0)
	dst = append(dst, '/')
	return appendUpperHex(dst, uint64(uint32(l)), 0)
}

// AppendPadded appends "%X/%08X", the form of pg_waldump's lsn: and prev fields.
func (l LSN) AppendPadded(dst []byte) []byte {
	dst = appendUpperHex(dst, uint64(l>>32), 0)
	dst = append(dst, '/')
	return appendUpperHex(dst, uint64(uint32(l)), 8)
}

const hexDigits = "0123456789ABCDEF"

func appendUpperHex(dst []byte, v uint64, width int) []byte {
	var buf [16]byte
	i := len(buf)
	for v != 0 || i == len(buf) {
		i--
		buf[i] = hexDigits[v&15]
		v >>= 4
	}
	for n := len(buf) - i; n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, buf[i:]...)
}

// ErrSyntax reports a malformed LSN, segment name or history line.
var ErrSyntax = errors.New("invalid syntax")

// ParseLSN parses "X/Y" with hexadecimal halves, as pg_waldump's -s and -e
// accept them (sscanf "%X/%X").
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok || hi == "" || lo == "" || len(hi) > 8 || len(lo) > 8 {
		return 0, fmt.Errorf("%w: LSN %q", ErrSyntax, s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: LSN %q", ErrSyntax, s)
	}
	return LSN(h<<32 | l), nil
}

// Maxalign rounds n up to a multiple of 8, MAXALIGN on every platform we read.
func Maxalign[T ~uint64 | ~uint32 | ~int](n T) T { return (n + 7) &^ 7 }
