package typeout

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/walscope/walscope/catalog"
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
	// equivalent in UTF-8 (the server's error converting it too: SQLSTATE
	// 22P05, untranslatable_character).
	ErrNoEquivalent = errors.New("character has no equivalent in UTF8")
	// ErrInvalidByteSequence: bytes that are no character of the
	// database's encoding (the server's SQLSTATE 22021,
	// character_not_in_repertoire).
	ErrInvalidByteSequence = errors.New("invalid byte sequence")
	// ErrEncodingNotConverted: text of MULE_INTERNAL, which the server
	// does not convert to UTF8 either ("conversion between UTF8 and
	// MULE_INTERNAL is not supported": a client cannot even connect with
	// client_encoding UTF8), or SQL_ASCII text that is not UTF-8.
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
// the EUC encodings through the server's maps (encoding_euc.go), SQL_ASCII
// as it is when it is UTF-8. An error names the bytes and wraps
// ErrNoEquivalent, ErrInvalidByteSequence or ErrEncodingNotConverted
// (MULE_INTERNAL, which the server does not convert either); dst is then
// as it was.
func AppendUTF8(dst, src []byte, enc int32) ([]byte, error) {
	return appendUTF8(dst, src, enc, false)
}

// catalog.Resolve finds a relation of a database in another encoding by
// the UTF-8 name a user types (typeout imports catalog: registered here).
func init() { catalog.NameInUTF8 = NameUTF8 }

// NameUTF8 returns name, an identifier stored in database encoding enc
// (a relation's or a column's), in UTF-8 as AppendUTF8 converts it; a
// character AppendUTF8 refuses is written as \x and the hex of its bytes
// (the server cannot print it to a UTF8 client either), so that a
// Parquet file, whose names are UTF-8, can still be written.
func NameUTF8(name string, enc int32) string {
	if enc == EncodingUTF8 && utf8.ValidString(name) {
		return name
	}
	b, _ := appendUTF8(nil, []byte(name), enc, true)
	return string(b)
}

func appendUTF8(dst, src []byte, enc int32, escape bool) ([]byte, error) {
	switch enc {
	case EncodingUTF8, EncodingSQLASCII:
		if utf8.Valid(src) {
			return append(dst, src...), nil
		}
		if escape {
			return appendEscaped(dst, src, true), nil
		}
		bad := invalidUTF8(src)
		if enc == EncodingUTF8 {
			return dst, fmt.Errorf("invalid byte sequence for encoding UTF8: %s: %w", bad, ErrInvalidByteSequence)
		}
		// the server checks that SQL_ASCII text is valid in the client's
		// encoding (pg_server_to_any): the same error
		return dst, fmt.Errorf("SQL_ASCII text that is not UTF-8 (invalid byte sequence for encoding UTF8: %s): %w", bad, ErrEncodingNotConverted)
	case EncodingMuleInternal:
		if escape {
			return appendEscaped(dst, src, false), nil
		}
		return dst, fmt.Errorf("conversion between MULE_INTERNAL and UTF8 is not supported: %w", ErrEncodingNotConverted)
	}
	if e := eucEncodingOf(enc); e != nil {
		return appendEUC(dst, src, e, escape)
	}
	sb := singleByte(enc)
	if sb == nil {
		if escape {
			return appendEscaped(dst, src, false), nil
		}
		return dst, fmt.Errorf("%s: %w", EncodingName(enc), ErrEncodingNotConverted)
	}
	start := len(dst)
	for _, c := range src {
		if c < 0x80 {
			dst = append(dst, c)
			continue
		}
		r := sb.high[c-0x80]
		switch {
		case r != 0:
			dst = utf8.AppendRune(dst, rune(r))
		case escape:
			dst = fmt.Appendf(dst, `\x%02x`, c)
		default:
			return dst[:start], fmt.Errorf("character with byte sequence 0x%02x in encoding %s: %w", c, sb.name, ErrNoEquivalent)
		}
	}
	return dst, nil
}

// invalidUTF8 names the bytes of the first invalid UTF-8 sequence of src
// as the server's error does (report_invalid_encoding: as many bytes as
// pg_utf_mblen gives its first, those left at most).
func invalidUTF8(src []byte) string {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r != utf8.RuneError || n > 1 {
			i += n
			continue
		}
		l := 1
		switch c := src[i]; {
		case c&0xe0 == 0xc0:
			l = 2
		case c&0xf0 == 0xe0:
			l = 3
		case c&0xf8 == 0xf0:
			l = 4
		}
		return byteSequence(src[i:min(len(src), i+l)])
	}
	return ""
}

// appendEscaped appends src with its bytes that are not ASCII (with
// keepUTF8, not UTF-8) written as \x and their hex.
func appendEscaped(dst, src []byte, keepUTF8 bool) []byte {
	for len(src) > 0 {
		r, n := rune(src[0]), 1
		if keepUTF8 && r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(src)
		}
		if (r == utf8.RuneError && n == 1) || (!keepUTF8 && r >= utf8.RuneSelf) {
			dst = fmt.Appendf(dst, `\x%02x`, src[0])
		} else {
			dst = append(dst, src[:n]...)
		}
		src = src[n:]
	}
	return dst
}
