package typeout

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// The EUC server encodings (EUC_JP, EUC_JIS_2004, EUC_CN, EUC_KR,
// EUC_TW) are converted to UTF-8 as the server converts them for a client
// whose client_encoding is UTF8: LocalToUtf of
// src/backend/utils/mb/conv.c, each character first checked by the
// encoding's verifier (pg_eucjp_verifychar, pg_euckr_verifychar,
// pg_euctw_verifychar of src/common/wchar.c), then looked up in the
// server's map (utf8_and_euc_jp.c and its siblings; EUC_JIS_2004's
// combined map gives some characters as two code points). The maps are
// the server's answers: encoding_euc.bin.zst holds what PostgreSQL 15's
// convert() gives for every valid code of each encoding, written by
// TestMultibyteEncodingsAgainstServer (WALSCOPE_REGEN_ENCODINGS=1).

// eucVerifier is the shape of an encoding's characters.
type eucVerifier uint8

const (
	// eucJP: EUC_JP and EUC_JIS_2004 (pg_eucjp_verifychar): 0x8E and one
	// byte 0xA1-0xDF (JIS X 0201 kana), 0x8F and two bytes 0xA1-0xFE
	// (JIS X 0212; JIS X 0213 plane 2), two bytes 0xA1-0xFE.
	eucJP eucVerifier = iota
	// eucKR: EUC_KR and EUC_CN (pg_euckr_verifychar): two bytes 0xA1-0xFE.
	eucKR
	// eucTW: EUC_TW (pg_euctw_verifychar): 0x8E, a plane 0xA1-0xA7 and
	// two bytes 0xA1-0xFE (CNS 11643 planes 1 to 7); 0x8F is invalid; two
	// bytes, the second 0xA1-0xFE (plane 1; the first is not checked).
	eucTW
)

// eucSide is the number of codes of one byte 0xA1-0xFE; a plane of two
// such bytes holds eucSide*eucSide codes, (b1-0xA1)*eucSide + b2-0xA1.
const eucSide = 94

// eucKana is the number of 0x8E codes of EUC_JP (0xA1-0xDF).
const eucKana = 0xDF - 0xA1 + 1

// eucWide is the first plane value that indexes eucEncoding.wide: the
// UTF-16 surrogates are no character, so no map gives one.
const eucWide = 0xD800

// eucEncoding is one EUC encoding's map to Unicode. A plane value is the
// code point the server gives a code (0: none, the server's error), or
// eucWide+i for wide[i]: a code point past U+FFFF, or two code points
// (EUC_JIS_2004's combining sequences; the second 0 for one).
type eucEncoding struct {
	id     int32
	name   string
	verify eucVerifier
	two    []uint16     // two bytes 0xA1-0xFE
	kana   []uint16     // eucJP: 0x8E 0xA1-0xDF
	ss3    []uint16     // eucJP: 0x8F and two bytes
	planes [7][]uint16  // eucTW: 0x8E 0xA1+i and two bytes
	wide   [][2]rune    // values eucWide+i
	parts  map[byte]int // the parts loadEUC read and their lengths (TestEUCTable)
}

// eucEncodings are the encodings of encoding_euc.bin.zst, by pg_enc
// number (src/include/mb/pg_wchar.h).
var eucEncodings = []eucEncoding{
	{id: 1, name: "EUC_JP", verify: eucJP},
	{id: 2, name: "EUC_CN", verify: eucKR},
	{id: 3, name: "EUC_KR", verify: eucKR},
	{id: 4, name: "EUC_TW", verify: eucTW},
	{id: 5, name: "EUC_JIS_2004", verify: eucJP},
}

// EncodingMuleInternal is PG_MULE_INTERNAL: the server has no conversion
// between it and UTF8.
const EncodingMuleInternal int32 = 7

//go:embed encoding_euc.bin.zst
var eucData []byte

// The parts of encoding_euc.bin.zst: after zstd, records of an encoding
// number (a byte), a part (a byte: eucPartTwo, eucPartKana, eucPartSS3,
// eucPartPlane+i for EUC_TW's plane i+1, eucPartWide), a count n (uint32
// little-endian) and the part's n values: for eucPartWide, pairs of
// uint32 code points (little-endian); for the others, each value's
// difference from the one before (the first's from 0, modulo 2^16), the n
// low bytes of the differences then their n high bytes (neighbouring
// codes are mostly neighbouring code points: zstd then writes 57 KB where
// the plain values took 92 KB).
const (
	eucPartTwo   = 0
	eucPartKana  = 1
	eucPartSS3   = 2
	eucPartPlane = 0x10
	eucPartWide  = 0xFF
)

var eucLoad = sync.OnceValue(func() error { return loadEUC(eucData, eucEncodings) })

// loadEUC reads data (encoding_euc.bin.zst) into encs.
func loadEUC(data []byte, encs []eucEncoding) error {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	raw, err := dec.DecodeAll(data, nil)
	if err != nil {
		return fmt.Errorf("encoding_euc.bin.zst: %w", err)
	}
	for len(raw) > 0 {
		if len(raw) < 6 {
			return fmt.Errorf("encoding_euc.bin.zst: %d bytes left", len(raw))
		}
		id, part, n := int32(raw[0]), raw[1], int(binary.LittleEndian.Uint32(raw[2:]))
		raw = raw[6:]
		var e *eucEncoding
		for i := range encs {
			if encs[i].id == id {
				e = &encs[i]
			}
		}
		size := 2 * n
		if part == eucPartWide {
			size = 8 * n
		}
		if e == nil || n < 0 || size > len(raw) {
			return fmt.Errorf("encoding_euc.bin.zst: encoding %d part %d of %d values", id, part, n)
		}
		if part == eucPartWide {
			e.wide = make([][2]rune, n)
			for i := range e.wide {
				e.wide[i] = [2]rune{rune(binary.LittleEndian.Uint32(raw[8*i:])), rune(binary.LittleEndian.Uint32(raw[8*i+4:]))}
			}
		} else {
			v := make([]uint16, n)
			var prev uint16
			for i := range v {
				prev += uint16(raw[i]) | uint16(raw[n+i])<<8
				v[i] = prev
			}
			want := eucSide * eucSide
			switch {
			case part == eucPartTwo:
				e.two = v
			case part == eucPartKana && e.verify == eucJP:
				e.kana, want = v, eucKana
			case part == eucPartSS3 && e.verify == eucJP:
				e.ss3 = v
			case part >= eucPartPlane && part < eucPartPlane+7 && e.verify == eucTW:
				e.planes[part-eucPartPlane] = v
			default:
				return fmt.Errorf("encoding_euc.bin.zst: %s has no part %d", e.name, part)
			}
			if n != want {
				return fmt.Errorf("encoding_euc.bin.zst: %s part %d of %d values, not %d", e.name, part, n, want)
			}
		}
		if e.parts == nil {
			e.parts = map[byte]int{}
		}
		e.parts[part] = n
		raw = raw[size:]
	}
	return nil
}

func eucEncodingOf(enc int32) *eucEncoding {
	for i := range eucEncodings {
		if eucEncodings[i].id == enc {
			return &eucEncodings[i]
		}
	}
	return nil
}

// eucChar returns the length of the character src begins with (its first
// byte has the high bit set) as the encoding's verifier checks it, 0 when
// it is invalid, and its value in the maps (0: none).
func (e *eucEncoding) eucChar(src []byte) (int, uint16) {
	valid := func(c byte) bool { return c >= 0xA1 && c <= 0xFE } // IS_EUC_RANGE_VALID
	code := func(t []uint16, b1, b2 byte) uint16 {
		if t == nil {
			return 0
		}
		return t[int(b1-0xA1)*eucSide+int(b2-0xA1)]
	}
	c := src[0]
	switch {
	case c == 0x8E && e.verify == eucJP: // SS2
		if len(src) < 2 || src[1] < 0xA1 || src[1] > 0xDF {
			return 0, 0
		}
		if e.kana == nil {
			return 2, 0
		}
		return 2, e.kana[src[1]-0xA1]
	case c == 0x8F && e.verify == eucJP: // SS3
		if len(src) < 3 || !valid(src[1]) || !valid(src[2]) {
			return 0, 0
		}
		return 3, code(e.ss3, src[1], src[2])
	case c == 0x8E && e.verify == eucTW: // SS2: a CNS 11643 plane
		if len(src) < 4 || src[1] < 0xA1 || src[1] > 0xA7 || !valid(src[2]) || !valid(src[3]) {
			return 0, 0
		}
		return 4, code(e.planes[src[1]-0xA1], src[2], src[3])
	case c == 0x8F && e.verify == eucTW: // SS3: unused
		return 0, 0
	}
	if len(src) < 2 || !valid(src[1]) {
		return 0, 0
	}
	if !valid(c) {
		// pg_euctw_verifychar takes any first byte with the high bit set
		// (then no map has the code); the others refuse it
		if e.verify == eucTW {
			return 2, 0
		}
		return 0, 0
	}
	return 2, code(e.two, c, src[1])
}

// eucMaxLen is pg_encoding_mblen (pg_euc_mblen, pg_euctw_mblen): the
// bytes the server's error shows of an invalid character.
func (e *eucEncoding) eucMaxLen(c byte) int {
	switch {
	case c == 0x8E && e.verify == eucTW:
		return 4
	case c == 0x8F:
		return 3
	}
	return 2
}

// appendEUC converts src as LocalToUtf does; with escape, a character
// that is invalid or has no equivalent is written as \x and the hex of
// each of its bytes instead of failing (for names, which are no value).
func appendEUC(dst, src []byte, e *eucEncoding, escape bool) ([]byte, error) {
	if err := eucLoad(); err != nil {
		return dst, err
	}
	start := len(dst)
	for i := 0; i < len(src); {
		c := src[i]
		if c == 0 {
			// LocalToUtf stops at a NUL: invalid
			if escape {
				dst = append(dst, `\x00`...)
				i++
				continue
			}
			return dst[:start], fmt.Errorf("invalid byte sequence for encoding %s: 0x00: %w", e.name, ErrInvalidByteSequence)
		}
		if c < 0x80 {
			dst = append(dst, c)
			i++
			continue
		}
		n, v := e.eucChar(src[i:])
		switch {
		case n > 0 && v != 0 && (v < eucWide || v >= eucWide+0x800):
			dst = utf8.AppendRune(dst, rune(v))
		case n > 0 && v != 0 && int(v-eucWide) < len(e.wide):
			w := e.wide[v-eucWide]
			dst = utf8.AppendRune(dst, w[0])
			if w[1] != 0 {
				dst = utf8.AppendRune(dst, w[1])
			}
		case escape:
			if n == 0 {
				n = 1
			}
			for _, b := range src[i : i+n] {
				dst = fmt.Appendf(dst, `\x%02x`, b)
			}
		case n == 0:
			return dst[:start], fmt.Errorf("invalid byte sequence for encoding %s: %s: %w", e.name, byteSequence(src[i:min(len(src), i+e.eucMaxLen(c))]), ErrInvalidByteSequence)
		default:
			return dst[:start], fmt.Errorf("character with byte sequence %s in encoding %s: %w", byteSequence(src[i:i+n]), e.name, ErrNoEquivalent)
		}
		i += n
	}
	return dst, nil
}

// byteSequence writes b as the server's errors do: 0xa4 0xa2.
func byteSequence(b []byte) string {
	var s bytes.Buffer
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "0x%02x", c)
	}
	return s.String()
}
