package typeout

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/internal/pgtest"
)

// eucSequences is SQL giving every code of the EUC encodings and the
// invalid sequences around them (columns e, the encoding, and c, the
// bytes): every byte 0x80-0xFF alone, every two bytes from 0x80 0x01 to
// 0xFF 0xFF, 0x8F and two bytes 0xA0-0xFF; for EUC_TW, 0x8E, a plane
// 0xA0-0xA8 and one or two bytes 0xA0-0xFF.
const eucSequences = `WITH encs(e) AS (VALUES ('EUC_JP'), ('EUC_CN'), ('EUC_KR'), ('EUC_TW'), ('EUC_JIS_2004')),
h(b, x) AS (SELECT b, lpad(to_hex(b), 2, '0') FROM generate_series(1, 255) b)
SELECT e, decode(a.x, 'hex') c FROM encs, h a WHERE a.b >= 128
UNION ALL SELECT e, decode(a.x || b.x, 'hex') FROM encs, h a, h b WHERE a.b >= 128
UNION ALL SELECT e, decode('8f' || a.x || b.x, 'hex') FROM encs, h a, h b WHERE a.b >= 160 AND b.b >= 160
UNION ALL SELECT 'EUC_TW', decode('8e' || p.x || a.x, 'hex') FROM h p, h a WHERE p.b BETWEEN 160 AND 168 AND a.b >= 160
UNION ALL SELECT 'EUC_TW', decode('8e' || p.x || a.x || b.x, 'hex') FROM h p, h a, h b WHERE p.b BETWEEN 160 AND 168 AND a.b >= 160 AND b.b >= 160`

// TestMultibyteEncodingsAgainstServer: every code of EUC_JP, EUC_JIS_2004,
// EUC_CN, EUC_KR and EUC_TW, and the invalid sequences around them
// (eucSequences), converted to UTF-8 by a real PostgreSQL 15
// (convert(bytes, enc, 'UTF8')), is what AppendUTF8 gives: the same
// characters (EUC_JIS_2004's combining sequences as two code points), or
// the same kind of error (22P05: ErrNoEquivalent; 22021:
// ErrInvalidByteSequence) naming the bytes the server's message names.
// MULE_INTERNAL has no conversion to UTF8 on the server. With
// WALSCOPE_REGEN_ENCODINGS=1 it writes encoding_euc.bin.zst from the
// server's answers for the valid codes instead (how it was made).
//
// WALSCOPE_TYPEOUT_VERSIONS=all (or e.g. 10,13,18) compares with those
// majors' servers too (scripts/embedded-pg.sh), each a subtest.
func TestMultibyteEncodingsAgainstServer(t *testing.T) {
	for _, major := range encodingMajors(t) {
		t.Run(fmt.Sprint(major), func(t *testing.T) { multibyteAgainstServer(t, major) })
	}
}

// encodingMajors are 15 and the majors WALSCOPE_TYPEOUT_VERSIONS lists
// (comma-separated, or "all": 10 to 18), as for TestAgainstOtherVersions.
func encodingMajors(t *testing.T) []int {
	env := os.Getenv("WALSCOPE_TYPEOUT_VERSIONS")
	majors := []int{15}
	if env == "all" {
		return append(majors, 10, 11, 12, 13, 14, 16, 17, 18)
	}
	for _, v := range strings.Split(env, ",") {
		if v = strings.TrimSpace(v); v == "" || v == "15" {
			continue
		}
		m, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("WALSCOPE_TYPEOUT_VERSIONS: %v", err)
		}
		majors = append(majors, m)
	}
	return majors
}

func multibyteAgainstServer(t *testing.T, major int) {
	bin, client := pgtest.Need(t, major)
	work := pgtest.WorkDir(t, "typeout-euc", "WALSCOPE_KEEP")
	s := pgtest.New(t, work, "pg", major, bin, client)
	s.InitDB(t, "", "")
	s.Start(t)
	for _, e := range eucEncodings {
		if got := s.Query(t, "SELECT pg_char_to_encoding('"+e.name+"')"); len(got) != 1 || got[0] != fmt.Sprint(e.id) {
			t.Fatalf("%s: the server's number %q, ours %d", e.name, got, e.id)
		}
	}
	if _, err := s.TryQueryDB("postgres", "SELECT convert('a', 'MULE_INTERNAL', 'UTF8')"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("MULE_INTERNAL to UTF8 on the server: %v, want no conversion", err)
	}
	if _, err := AppendUTF8(nil, []byte("a"), EncodingMuleInternal); !errors.Is(err, ErrEncodingNotConverted) {
		t.Errorf("MULE_INTERNAL: %v", err)
	}
	lines := s.Query(t, `CREATE FUNCTION conv(c bytea, e text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN RETURN encode(convert(c, e, 'UTF8'), 'hex');
EXCEPTION WHEN others THEN RETURN SQLSTATE || ' ' || substring(SQLERRM FROM '0x[0-9a-f]{2}(?: 0x[0-9a-f]{2})*'); END $$;
SELECT e || ' ' || encode(c, 'hex') || ' ' || conv(c, e) FROM (`+eucSequences+`) x`)
	regen := os.Getenv("WALSCOPE_REGEN_ENCODINGS") == "1" && major == 15
	type answer struct {
		code  []byte
		runes []rune
	}
	mapped := map[string][]answer{}
	kinds := map[string]int{}
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			t.Fatalf("%q", l)
		}
		e := eucByName(f[0])
		code, err := hex.DecodeString(f[1])
		if e == nil || err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		var want []byte
		var wantErr error
		switch {
		case len(f) == 4 && f[2] == "22P05":
			wantErr = ErrNoEquivalent
		case len(f) == 4 && f[2] == "22021":
			wantErr = ErrInvalidByteSequence
		case len(f) == 3:
			if want, err = hex.DecodeString(f[2]); err != nil || !utf8.Valid(want) {
				t.Fatalf("%q: %v", l, err)
			}
			mapped[e.name] = append(mapped[e.name], answer{code, []rune(string(want))})
		default:
			t.Fatalf("%q: an answer of the server this test does not know", l)
		}
		kinds[f[0]+" "+map[bool]string{true: "converted", false: f[2]}[wantErr == nil]]++
		if regen {
			continue
		}
		if major < 14 && e.verify == eucKR && code[0] == 0x8F && wantErr == ErrInvalidByteSequence && len(code) == 3 {
			// before 14, pg_euccn_mblen and pg_euckr_mblen gave 0x8f two
			// bytes (the error shows two); 14 made it pg_euc_mblen's three
			f[3] = byteSequence(code)
		}
		got, err := AppendUTF8([]byte("x"), code, e.id)
		switch {
		case wantErr == nil && (err != nil || string(got) != "x"+string(want)):
			t.Errorf("%s %x: %q (%v), the server %q", e.name, code, got, err, want)
		case wantErr != nil && (!errors.Is(err, wantErr) || !(strings.Contains(err.Error(), " "+f[3]+":") || strings.Contains(err.Error(), " "+f[3]+" in")) || string(got) != "x"):
			t.Errorf("%s %x: %q (%v), the server %s %s", e.name, code, got, err, f[2], f[3])
		}
	}
	t.Logf("%d sequences: %v", len(lines), kinds)
	if !regen {
		return
	}
	var raw []byte
	for _, e := range eucEncodings {
		parts := map[byte][]uint16{}
		var wide [][2]rune
		for _, a := range mapped[e.name] {
			c := a.code
			var part byte
			var i int
			switch {
			case len(c) == 2 && c[0] == 0x8E && e.verify == eucJP:
				part, i = eucPartKana, int(c[1]-0xA1)
			case len(c) == 2:
				part, i = eucPartTwo, int(c[0]-0xA1)*eucSide+int(c[1]-0xA1)
			case len(c) == 3 && c[0] == 0x8F && e.verify == eucJP:
				part, i = eucPartSS3, int(c[1]-0xA1)*eucSide+int(c[2]-0xA1)
			case len(c) == 4 && c[0] == 0x8E && e.verify == eucTW:
				part, i = eucPartPlane+c[1]-0xA1, int(c[2]-0xA1)*eucSide+int(c[3]-0xA1)
			default:
				t.Fatalf("%s %x converted: not a code of the encoding's shape", e.name, c)
			}
			if parts[part] == nil {
				parts[part] = make([]uint16, map[bool]int{true: eucKana, false: eucSide * eucSide}[part == eucPartKana])
			}
			r := a.runes
			switch {
			case len(r) == 1 && r[0] > 0 && r[0] < eucWide || len(r) == 1 && r[0] >= eucWide+0x800 && r[0] <= 0xFFFF:
				parts[part][i] = uint16(r[0])
			case len(r) == 1 && r[0] > 0xFFFF, len(r) == 2:
				parts[part][i] = uint16(eucWide + len(wide))
				wide = append(wide, [2]rune{r[0], 0})
				if len(r) == 2 {
					wide[len(wide)-1][1] = r[1]
				}
			default:
				t.Fatalf("%s %x: %q", e.name, c, string(r))
			}
		}
		if len(wide) >= 0x800 {
			t.Fatalf("%s: %d wide characters", e.name, len(wide))
		}
		for _, part := range []byte{eucPartTwo, eucPartKana, eucPartSS3, eucPartPlane, eucPartPlane + 1, eucPartPlane + 2, eucPartPlane + 3, eucPartPlane + 4, eucPartPlane + 5, eucPartPlane + 6} {
			if v := parts[part]; v != nil {
				raw = append(raw, byte(e.id), part)
				raw = binary.LittleEndian.AppendUint32(raw, uint32(len(v)))
				diff := make([]uint16, len(v))
				var prev uint16
				for i, x := range v {
					diff[i], prev = x-prev, x
				}
				for _, d := range diff {
					raw = append(raw, byte(d))
				}
				for _, d := range diff {
					raw = append(raw, byte(d>>8))
				}
			}
		}
		if len(wide) > 0 {
			raw = append(raw, byte(e.id), eucPartWide)
			raw = binary.LittleEndian.AppendUint32(raw, uint32(len(wide)))
			for _, w := range wide {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(w[0]))
				raw = binary.LittleEndian.AppendUint32(raw, uint32(w[1]))
			}
		}
		t.Logf("%s: %d codes converted (%d wide), parts %v", e.name, len(mapped[e.name]), len(wide), keys(parts))
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	out := enc.EncodeAll(raw, nil)
	var check []eucEncoding
	check = append(check, eucEncodings...)
	if err := loadEUC(out, check); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("encoding_euc.bin.zst", out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote encoding_euc.bin.zst: %d bytes (%d before zstd)", len(out), len(raw))
}

func eucByName(name string) *eucEncoding {
	for i := range eucEncodings {
		if eucEncodings[i].name == name {
			return &eucEncodings[i]
		}
	}
	return nil
}

func keys(m map[byte][]uint16) []byte {
	var k []byte
	for p := range eucPartWide {
		if m[byte(p)] != nil {
			k = append(k, byte(p))
		}
	}
	return k
}

// TestEUCTable: the embedded maps as the generator wrote them, without a
// server: the parts each encoding has, and characters of each (the
// expected text is what PostgreSQL 15's convert_from gave for the bytes).
func TestEUCTable(t *testing.T) {
	for _, c := range []struct {
		enc  int32
		in   string
		want string
	}{
		{1, "\xa4\xa2 \x8e\xb1 \x8f\xb0\xa1", "あ ｱ 丂"},             // EUC_JP: JIS X 0208, kana, JIS X 0212
		{5, "\xa4\xf7\xa1\xa1\xae\xa2", "か\u309a\u3000\U0002000b"}, // EUC_JIS_2004: a combining sequence, a character past U+FFFF
		{2, "\xd6\xd0\xce\xc4", "中文"},                              // EUC_CN
		{3, "\xc7\xd1\xb1\xdb", "한글"},                              // EUC_KR
		{4, "\xc4\xa1\x8e\xa1\xc4\xa1\x8e\xa2\xa1\xa1", "一一乂"},     // EUC_TW: plane 1 twice, plane 2
	} {
		got, err := AppendUTF8(nil, []byte(c.in), c.enc)
		if err != nil || string(got) != c.want {
			t.Errorf("%x in %s: %q (%v), want %q", c.in, EncodingName(c.enc), got, err, c.want)
		}
	}
	if err := eucLoad(); err != nil {
		t.Fatal(err)
	}
	for _, e := range eucEncodings {
		t.Logf("%s: parts %v, %d wide", e.name, e.parts, len(e.wide))
		if e.two == nil || (e.verify == eucJP) != (e.kana != nil && e.ss3 != nil) || (e.verify == eucTW) != (e.planes[0] != nil && e.planes[1] != nil) {
			t.Errorf("%s: parts %v", e.name, e.parts)
		}
	}
}

// FuzzAppendUTF8: for any bytes in any database encoding, AppendUTF8
// never panics and either fails, leaving dst as it was, or appends valid
// UTF-8; NameUTF8 always gives valid UTF-8, the same text where
// AppendUTF8 converts.
func FuzzAppendUTF8(f *testing.F) {
	for _, s := range []string{"abc", "\xa4\xa2\x8e\xb1\x8f\xb0\xa1", "\xa4\xf7\xae\xa2", "\x8e\xa2\xa1\xa1\x80\xa1", "\xa4", "\x8f\xa1", "caf\xe9", "\xff\x00"} {
		for _, enc := range []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 24, 41} {
			f.Add([]byte(s), enc)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, enc int32) {
		got, err := AppendUTF8([]byte("ok"), src, enc)
		switch {
		case err != nil && string(got) != "ok":
			t.Fatalf("%x in %s: %q with the error %v", src, EncodingName(enc), got, err)
		case err == nil && (!utf8.Valid(got) || string(got[:2]) != "ok"):
			t.Fatalf("%x in %s: %q is not UTF-8 after dst", src, EncodingName(enc), got)
		}
		name := NameUTF8(string(src), enc)
		if !utf8.ValidString(name) || (err == nil && name != string(got[2:])) {
			t.Fatalf("%x in %s: name %q, text %q (%v)", src, EncodingName(enc), name, got, err)
		}
	})
}

// TestNameUTF8: a name is converted as text is; a character AppendUTF8
// refuses is written as \x and its bytes' hex (walscope's own form: the
// server cannot print it to a UTF8 client), the rest still converted.
func TestNameUTF8(t *testing.T) {
	for _, c := range []struct {
		name string
		enc  int32
		want string
	}{
		{"\xa4\xa2\xa9\xa1b", 1, `あ\xa9\xa1b`}, // EUC_JP: 0xa9 0xa1 has no equivalent
		{"\xa4", 1, `\xa4`},                    // cut short
		{"caf\xe9\x81", 24, `café\x81`},        // WIN1252: 0x81 has none
		{"a\xe9", EncodingMuleInternal, `a\xe9`},
		{"\xffé", EncodingUTF8, `\xffé`},
		{"plain", 3, "plain"},
	} {
		if got := NameUTF8(c.name, c.enc); got != c.want {
			t.Errorf("%x in %s: %q, want %q", c.name, EncodingName(c.enc), got, c.want)
		}
	}
}

// TestUTF8AgainstServer: text of a UTF8 or SQL_ASCII database is written
// as it is where the server gives it to a UTF8 client as it is
// (convert(bytes, 'UTF8' or 'SQL_ASCII', 'UTF8') of PostgreSQL 15, which
// verifies as pg_server_to_any does), an error naming the same bytes
// where the server's is 22021 (for SQL_ASCII ErrEncodingNotConverted):
// every byte 0x80-0xFF alone and followed by every byte, and three and
// four bytes around the edges of UTF-8 (0xe0, 0xed, 0xef, 0xf0, 0xf4,
// 0xf5 and bytes 0x7f-0xc0 after). WALSCOPE_TYPEOUT_VERSIONS: other
// majors too.
func TestUTF8AgainstServer(t *testing.T) {
	for _, major := range encodingMajors(t) {
		t.Run(fmt.Sprint(major), func(t *testing.T) { utf8AgainstServer(t, major) })
	}
}

func utf8AgainstServer(t *testing.T, major int) {
	bin, client := pgtest.Need(t, major)
	work := pgtest.WorkDir(t, "typeout-utf8", "WALSCOPE_KEEP")
	s := pgtest.New(t, work, "pg", major, bin, client)
	s.InitDB(t, "", "")
	s.Start(t)
	lines := s.Query(t, `CREATE FUNCTION conv(c bytea, e text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN RETURN encode(convert(c, e, 'UTF8'), 'hex');
EXCEPTION WHEN others THEN RETURN SQLSTATE || ' ' || substring(SQLERRM FROM '0x[0-9a-f]{2}(?: 0x[0-9a-f]{2})*'); END $$;
WITH encs(e) AS (VALUES ('UTF8'), ('SQL_ASCII')),
h(b, x) AS (SELECT b, lpad(to_hex(b), 2, '0') FROM generate_series(1, 255) b),
lead(x) AS (VALUES ('e0'), ('ed'), ('ef'), ('f0'), ('f4'), ('f5')),
seqs(e, c) AS (SELECT e, decode(a.x, 'hex') FROM encs, h a WHERE a.b >= 128
 UNION ALL SELECT e, decode(a.x || b.x, 'hex') FROM encs, h a, h b WHERE a.b >= 128
 UNION ALL SELECT e, decode(l.x || a.x || b.x, 'hex') FROM encs, lead l, h a, h b WHERE a.b BETWEEN 127 AND 192 AND b.b BETWEEN 127 AND 192
 UNION ALL SELECT e, decode(l.x || a.x || b.x || '80', 'hex') FROM encs, lead l, h a, h b WHERE l.x >= 'f0' AND a.b BETWEEN 127 AND 192 AND b.b BETWEEN 127 AND 192)
SELECT e || ' ' || encode(c, 'hex') || ' ' || conv(c, e) FROM seqs`)
	kinds := map[string]int{}
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			t.Fatalf("%q", l)
		}
		enc := map[string]int32{"UTF8": EncodingUTF8, "SQL_ASCII": EncodingSQLASCII}[f[0]]
		code, err := hex.DecodeString(f[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendUTF8([]byte("x"), code, enc)
		switch {
		case len(f) == 3:
			if err != nil || fmt.Sprintf("x%x", code) != "x"+f[2] || string(got) != "x"+string(code) {
				t.Errorf("%s %x: %q (%v), the server %s", f[0], code, got, err, f[2])
			}
			kinds[f[0]+" as it is"]++
		case len(f) == 4 && f[2] == "22021":
			wantErr := map[int32]error{EncodingUTF8: ErrInvalidByteSequence, EncodingSQLASCII: ErrEncodingNotConverted}[enc]
			if !errors.Is(err, wantErr) || !(strings.Contains(err.Error(), " "+f[3]+":") || strings.Contains(err.Error(), " "+f[3]+")")) || string(got) != "x" {
				t.Errorf("%s %x: %q (%v), the server %s %s", f[0], code, got, err, f[2], f[3])
			}
			kinds[f[0]+" 22021"]++
		default:
			t.Fatalf("%q: an answer of the server this test does not know", l)
		}
	}
	t.Logf("%d sequences: %v", len(lines), kinds)
}
