package decode

import "errors"

// ErrPGLZ reports corrupt pglz data.
var ErrPGLZ = errors.New("pglz: corrupt compressed data")

// PGLZDecompress decompresses pglz data from src into dst, which must be
// exactly the expected raw size (pglz_decompress in src/common/pg_lzcompress.c).
// With checkComplete, as WAL images use it, it succeeds only if dst is filled
// and all of src consumed. It returns the number of bytes written.
//
// Format: a control byte whose bits, least significant first, tell for the
// next eight items whether each is a literal byte (0) or a tag (1). A tag is
// two bytes, [offset high nibble | length-3] [offset low byte], with a third
// byte holding length-18 when the length nibble is 0xF.
func PGLZDecompress(src, dst []byte, checkComplete bool) (int, error) {
	sp, dp := 0, 0
	for sp < len(src) && dp < len(dst) {
		ctrl := src[sp]
		sp++
		for bit := 0; bit < 8 && sp < len(src) && dp < len(dst); bit++ {
			if ctrl&1 != 0 {
				if sp+1 >= len(src) {
					return dp, ErrPGLZ
				}
				length := int(src[sp]&0x0F) + 3
				off := int(src[sp]&0xF0)<<4 | int(src[sp+1])
				sp += 2
				if length == 18 {
					if sp >= len(src) {
						return dp, ErrPGLZ
					}
					length += int(src[sp])
					sp++
				}
				if off == 0 || off > dp {
					return dp, ErrPGLZ
				}
				length = min(length, len(dst)-dp)
				// Overlapping copy, byte by byte in effect: a run is a
				// literal followed by a tag with a short offset.
				for length > 0 {
					n := min(length, off)
					copy(dst[dp:dp+n], dst[dp-off:dp-off+n])
					dp += n
					length -= n
				}
			} else {
				dst[dp] = src[sp]
				dp++
				sp++
			}
			ctrl >>= 1
		}
	}
	if checkComplete && (dp != len(dst) || sp != len(src)) {
		return dp, ErrPGLZ
	}
	return dp, nil
}
