package typeout

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Database encodings: text is stored in its database's encoding
// (pg_database.encoding, an enum pg_enc of src/include/mb/pg_wchar.h,
// the same numbers in 10 to 18). The output functions print it as
// stored, as COPY does for a client whose client_encoding is the
// database's; Parquet strings must be UTF-8, so AppendUTF8 converts as the
// server does for client_encoding UTF8.

// EncodingSQLASCII and EncodingUTF8 are PG_SQL_ASCII and PG_UTF8.
const (
	EncodingSQLASCII int32 = 0
	EncodingUTF8     int32 = 6
)

var (
	// ErrNoEquivalent: a character of the database's encoding has no
	// equivalent in UTF-8 (the server's error converting it too).
	ErrNoEquivalent = errors.New("character has no equivalent in UTF8")
	// ErrEncodingNotConverted: text of a multibyte encoding other than
	// UTF8 (EUC_*, MULE_INTERNAL), or SQL_ASCII text that is not UTF-8,
	// which walscope does not convert.
	ErrEncodingNotConverted = errors.New("text in this database encoding is not converted to UTF-8")
)

// EncodingName is PostgreSQL's name of a database encoding
// (pg_encoding_to_char), or "encoding N".
func EncodingName(enc int32) string {
	switch enc {
	case EncodingSQLASCII:
		return "SQL_ASCII"
	case EncodingUTF8:
		return "UTF8"
	case 1:
		return "EUC_JP"
	case 2:
		return "EUC_CN"
	case 3:
		return "EUC_KR"
	case 4:
		return "EUC_TW"
	case 5:
		return "EUC_JIS_2004"
	case 7:
		return "MULE_INTERNAL"
	}
	if sb := singleByte(enc); sb != nil {
		return sb.name
	}
	return fmt.Sprintf("encoding %d", enc)
}

func singleByte(enc int32) *singleByteEncoding {
	for i := range singleByteEncodings {
		if singleByteEncodings[i].id == enc {
			return &singleByteEncodings[i]
		}
	}
	return nil
}

// AppendUTF8 appends src, text stored in database encoding enc, converted
// to UTF-8 as the server converts it for a client_encoding of UTF8: UTF8
// as it is (it must be valid), the single-byte encodings (LATIN1 to
// LATIN10, the WIN and ISO_8859 ones, KOI8R, KOI8U) through the server's
// own mapping of each byte (encoding_table.go, read from a real server),
// SQL_ASCII as it is when it is UTF-8. An error wraps ErrNoEquivalent or
// ErrEncodingNotConverted and names the byte.
func AppendUTF8(dst, src []byte, enc int32) ([]byte, error) {
	switch enc {
	case EncodingUTF8, EncodingSQLASCII:
		if !utf8.Valid(src) {
			if enc == EncodingUTF8 {
				return dst, fmt.Errorf("invalid byte sequence for encoding UTF8: %w", ErrNoEquivalent)
			}
			return dst, fmt.Errorf("SQL_ASCII text that is not UTF-8: %w", ErrEncodingNotConverted)
		}
		return append(dst, src...), nil
	}
	sb := singleByte(enc)
	if sb == nil {
		return dst, fmt.Errorf("%s: %w", EncodingName(enc), ErrEncodingNotConverted)
	}
	for _, c := range src {
		if c < 0x80 {
			dst = append(dst, c)
			continue
		}
		r := sb.high[c-0x80]
		if r == 0 {
			return dst, fmt.Errorf("character with byte sequence 0x%02x in encoding %s: %w", c, sb.name, ErrNoEquivalent)
		}
		dst = utf8.AppendRune(dst, rune(r))
	}
	return dst, nil
}
