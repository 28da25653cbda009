package decode_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/walscope/walscope/decode"
)

// refPGLZ is walscope's first pglz compressor, kept as the reference of the
// equivalence tests: a line-by-line port of pglz_compress, pglz_find_match
// and pglz_hist_add (src/common/pg_lzcompress.c) with PostgreSQL's doubly
// linked history lists, proven byte-identical with PostgreSQL on the real
// WAL's pglz images (TestPGLZCompressOracle ran on it). The fast compressor
// must give its bytes on every input.

const (
	refMaxHistoryLists = 8192 // PGLZ_MAX_HISTORY_LISTS, a power of 2
	refHistorySize     = 4096 // PGLZ_HISTORY_SIZE
	refMaxMatch        = 273  // PGLZ_MAX_MATCH

	// PGLZ_strategy_default.
	refMinInputSize  = 32            // inputs shorter than this are not compressed
	refMaxInputSize  = math.MaxInt32 // no upper limit
	refMinCompRate   = 25            // require a 25% saving
	refFirstSuccess  = 1024          // give up if no match in the first 1 kB of output
	refMatchSizeGood = 128           // stop the history walk at a match this long
	refMatchSizeDrop = 10            // lower the good match size by 10% per entry visited

	// The strategy's parameters clamped to their supported ranges, as
	// pglz_compress does at run time.
	refGoodMatch = min(max(refMatchSizeGood, 17), refMaxMatch)
	refGoodDrop  = min(max(refMatchSizeDrop, 0), 100)
	refNeedRate  = min(max(refMinCompRate, 0), 99)
)

// refHistEntry is PGLZ_HistEntry, with indexes into the entry table for the
// pointers: entry 0 is INVALID_ENTRY (the list terminator, freely scribbled
// on), and a prev of -1 stands for C's NULL (the entry heads its list).
type refHistEntry struct {
	next, prev int16
	hindex     int32 // my current hash key
	pos        int32 // my input position
}

// refPGLZ holds the work arrays of pglz compression (hist_start and
// hist_entries, static in PostgreSQL), so that repeated compressions do not
// allocate. The zero value is ready to use; it is not safe for concurrent use.
type refPGLZ struct {
	start   [refMaxHistoryLists]int16        // hist_start: the head of each hash list
	entries [refHistorySize + 1]refHistEntry // hist_entries
	next    int                              // hist_next: the entry to use next
	recycle bool                             // hist_recycle: entries are being reused
}

// refHash is pglz_hist_idx: the hash list of the 4 bytes at s[i:] (or of
// s[i] alone when fewer than 4 bytes remain).
//
// The C macro shifts and XORs plain `char` values. On x86 (and x86-64) char
// is signed, so a byte >= 0x80 is sign-extended to a negative int before the
// shifts: int(int8(b)) below. That is what PostgreSQL on x86-64 computes, and
// what the images in real WAL were made with. Where char is unsigned (most
// ARM Linux builds) the hash, hence the candidates and the output, differ;
// that output is still valid pglz, just not byte-identical with this.
func refHash(s []byte, i, mask int) int {
	if len(s)-i < 4 {
		return int(int8(s[i])) & mask
	}
	return (int(int8(s[i]))<<6 ^ int(int8(s[i+1]))<<4 ^
		int(int8(s[i+2]))<<2 ^ int(int8(s[i+3]))) & mask
}

// Compress is PGLZCompress with c's work arrays: it appends to dst and
// allocates only when dst has less than len(src)+4 bytes of spare capacity.
func (c *refPGLZ) Compress(dst, src []byte) ([]byte, bool) {
	slen := len(src)
	if slen < refMinInputSize || slen > refMaxInputSize {
		return dst, false
	}

	var resultMax int
	if slen > math.MaxInt32/100 {
		resultMax = (slen / 100) * (100 - refNeedRate) // approximate to avoid overflow
	} else {
		resultMax = (slen * (100 - refNeedRate)) / 100
	}

	var hashsz int
	switch {
	case slen < 128:
		hashsz = 512
	case slen < 256:
		hashsz = 1024
	case slen < 512:
		hashsz = 2048
	case slen < 1024:
		hashsz = 4096
	default:
		hashsz = 8192
	}
	mask := hashsz - 1
	hstart := c.start[:hashsz]
	clear(hstart)

	// The output: PGLZ_MAX_OUTPUT(slen) = slen + 4 bytes at most, since the
	// size is checked once per item and an item adds at most 4 bytes.
	base := len(dst)
	if cap(dst)-base < slen+4 {
		grown := make([]byte, base, base+slen+4)
		copy(grown, dst)
		dst = grown
	}
	out := dst[base : base+slen+4]
	bp := 0

	c.next = 1
	c.recycle = false
	ctrlp := -1 // index of the pending control byte in out; -1 is ctrl_dummy
	var ctrlb, ctrl byte
	foundMatch := false

	// outCtrl is pglz_out_ctrl: store the full control byte and reserve the
	// next one when 8 items have been written under it.
	outCtrl := func() {
		if ctrl == 0 {
			if ctrlp >= 0 {
				out[ctrlp] = ctrlb
			}
			ctrlp = bp
			bp++
			ctrlb = 0
			ctrl = 1
		}
	}

	dp := 0
	for dp < slen {
		// Fail once the output reached the maximum the strategy allows;
		// checked once per item, hence the 4 bytes of slop.
		if bp >= resultMax {
			return dst, false
		}
		// Fail if first_success_by bytes went out without any match, to fall
		// out early on incompressible input.
		if !foundMatch && bp >= refFirstSuccess {
			return dst, false
		}
		h := refHash(src, dp, mask)
		if mlen, moff := c.findMatch(src, dp, h); mlen > 0 {
			// pglz_out_tag
			outCtrl()
			ctrlb |= ctrl
			ctrl <<= 1
			if mlen > 17 {
				out[bp] = byte((moff&0xf00)>>4 | 0x0f)
				out[bp+1] = byte(moff & 0xff)
				out[bp+2] = byte(mlen - 18)
				bp += 3
			} else {
				out[bp] = byte((moff&0xf00)>>4 | (mlen - 3))
				out[bp+1] = byte(moff & 0xff)
				bp += 2
			}
			c.add(h, dp)
			dp++
			for end := dp + mlen - 1; dp < end; dp++ {
				c.add(refHash(src, dp, mask), dp)
			}
			foundMatch = true
		} else {
			// pglz_out_literal
			outCtrl()
			out[bp] = src[dp]
			bp++
			ctrl <<= 1
			c.add(h, dp)
			dp++
		}
	}

	// Write out the last control byte and check the size allowed.
	if ctrlp >= 0 {
		out[ctrlp] = ctrlb
	}
	if bp >= resultMax {
		return dst, false
	}
	return dst[:base+bp], true
}

// add is pglz_hist_add: it pushes position dp on the front of hash list h,
// taking the next entry round-robin, unlinked first from its old list when
// entries are being reused.
func (c *refPGLZ) add(h, dp int) {
	he := &c.entries
	me := &he[c.next]
	if c.recycle {
		if me.prev < 0 {
			c.start[me.hindex&(refMaxHistoryLists-1)] = me.next
		} else {
			he[me.prev].next = me.next
		}
		he[me.next].prev = me.prev // harmless on entry 0
	}
	h &= refMaxHistoryLists - 1 // a no-op that drops the bounds checks
	head := c.start[h]
	me.next = head
	me.prev = -1
	me.hindex = int32(h)
	me.pos = int32(dp)
	he[head].prev = int16(c.next) // scribbles on entry 0 for an empty list
	c.start[h] = int16(c.next)
	c.next++
	if c.next >= refHistorySize+1 {
		c.next = 1
		c.recycle = true
	}
}

// findMatch is pglz_find_match: it walks hash list h, that of position dp,
// nearest entry first, and returns the best match's length and offset, or
// length 0 when there is none longer than 2 bytes.
func (c *refPGLZ) findMatch(src []byte, dp, h int) (int, int) {
	goodMatch := refGoodMatch
	he := &c.entries
	n := len(src)
	length, off := 0, 0
	for e := c.start[h&(refMaxHistoryLists-1)]; e != 0; {
		hp := int(he[e].pos)

		// Stop if the offset does not fit into a tag anymore.
		thisoff := dp - hp
		if thisoff >= 0x0fff {
			break
		}

		// The match length. A better match must be longer than the best so
		// far; once that is 16 bytes or more, PostgreSQL first memcmp's that
		// many bytes and scores the candidate 0 unless they are all equal,
		// then counts on byte by byte. The result is the same as counting
		// from the start, except that a candidate not at least as long as
		// the best scores 0 rather than its length, which does not change
		// which one wins.
		thislen := 0
		if length >= 16 {
			if string(src[dp:dp+length]) == string(src[hp:hp+length]) {
				thislen = length + refMatchLen(src, dp+length, hp+length, min(refMaxMatch-length, n-dp-length))
			}
		} else if limit := min(refMaxMatch, n-dp); limit >= 8 {
			// The first eight bytes here, to spare most candidates a call.
			if x := binary.LittleEndian.Uint64(src[dp:]) ^ binary.LittleEndian.Uint64(src[hp:]); x != 0 {
				thislen = bits.TrailingZeros64(x) / 8
			} else {
				thislen = 8 + refMatchLen(src, dp+8, hp+8, limit-8)
			}
		} else {
			thislen = refMatchLen(src, dp, hp, limit)
		}

		if thislen > length {
			length = thislen
			off = thisoff
		}

		// Advance, and be happy with lesser good matches the more entries
		// were visited; no point at the end of the list.
		e = he[e].next
		if e != 0 {
			if length >= goodMatch {
				break
			}
			goodMatch -= goodMatch * refGoodDrop / 100
		}
	}
	// Only a match that saves at least one byte counts.
	if length > 2 {
		return length, off
	}
	return 0, 0
}

// refMatchLen is the length of the common prefix of src[a:] and src[b:], at
// most limit bytes, where b < a and a+limit <= len(src): the byte-by-byte
// loop of pglz_find_match, eight bytes at a time.
func refMatchLen(src []byte, a, b, limit int) int {
	n := 0
	for n+8 <= limit {
		x := binary.LittleEndian.Uint64(src[a+n:]) ^ binary.LittleEndian.Uint64(src[b+n:])
		if x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < limit && src[a+n] == src[b+n] {
		n++
	}
	return n
}

// pglzEquivalenceInputs are inputs that exercise the history: runs, small
// alphabets (long hash lists, the good_match drop), high bytes (the signed
// hash), repeated words at every distance up to and past the 4095-byte
// offset limit, and lengths around the hash-size steps and the 4096-entry
// history.
func pglzEquivalenceInputs() [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var out [][]byte
	for i := range 600 {
		n := []int{31, 32, 127, 128, 255, 256, 511, 512, 1023, 1024, 4095, 4096, 4097, 8192, 9000, 20000}[i%16]
		if i%3 == 0 {
			n = rng.IntN(12000)
		}
		src := make([]byte, n)
		switch i % 6 {
		case 0:
			for j := range src {
				src[j] = byte(j / (1 + i%41))
			}
		case 1:
			for j := range src {
				src[j] = byte(rng.Uint32())
			}
		case 2:
			for j := range src {
				src[j] = 0x7E + byte(rng.IntN(1+i%5))
			}
		case 3, 4:
			words := make([][]byte, 1+rng.IntN(30))
			for k := range words {
				words[k] = make([]byte, 1+rng.IntN(600))
				for m := range words[k] {
					words[k][m] = byte(rng.Uint32() & uint32(0xFF>>(i%4)))
				}
			}
			src = src[:0]
			for len(src) < n {
				src = append(src, words[rng.IntN(len(words))]...)
				if i%6 == 4 { // noise between the words
					src = append(src, byte(rng.Uint32()))
				}
			}
			src = src[:n]
		case 5: // a page-like layout: zeros, then tuples alike but for a counter
			for j := 0; j+40 <= n/2; j += 40 {
				copy(src[n/2+j:], "\x01\x00\x00\x00tuple header....data")
				src[n/2+j+4] = byte(j)
				src[n/2+j+5] = byte(j >> 8)
			}
		}
		out = append(out, src)
	}
	return out
}

// TestPGLZCompressMatchesReference requires the compressor to give the
// reference port's bytes (hence PostgreSQL's) on varied inputs and on an eighth
// of the real images' pages, through one compressor reused across inputs (the
// history must not leak from one input into the next) and a fresh one.
func TestPGLZCompressMatchesReference(t *testing.T) {
	inputs := pglzEquivalenceInputs()
	for i, im := range realImages(t) {
		if i%8 == 0 { // every image would take half a minute
			inputs = append(inputs, im.holeless())
		}
	}
	var ref refPGLZ
	var reused decode.PGLZCompressor
	for i, src := range inputs {
		want, wok := ref.Compress(nil, src)
		got, ok := reused.Compress(nil, src)
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("input %d (%d bytes): %d bytes (ok %v), reference %d bytes (ok %v)", i, len(src), len(got), ok, len(want), wok)
		}
		if i%50 == 0 {
			var fresh decode.PGLZCompressor
			if got, ok := fresh.Compress(nil, src); ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("input %d, fresh compressor: differs from the reference", i)
			}
		}
	}
}

// FuzzPGLZCompress compares the compressor with the reference port on
// arbitrary input, also compressed after another input through the same
// compressor.
func FuzzPGLZCompress(f *testing.F) {
	f.Add([]byte("walscope walscope walscope walscope walscope"), uint16(3))
	f.Add(bytes.Repeat([]byte{0xFF, 0x80, 0x7F, 0x00}, 3000), uint16(1))
	f.Add(bytes.Repeat([]byte("0123456789abcdef"), 600), uint16(4093))
	var ref refPGLZ
	var c decode.PGLZCompressor
	f.Fuzz(func(t *testing.T, src []byte, period uint16) {
		// Stretch small inputs into repetitive ones, at a distance near the
		// offset limit if the fuzzer likes.
		if p := int(period); len(src) > 0 && p > 0 && len(src) < 64 {
			big := make([]byte, 0, 9000)
			for len(big) < 9000 {
				big = append(big, src...)
				big = append(big, make([]byte, p%4200)...)
			}
			src = big
		}
		want, wok := ref.Compress(nil, src)
		got, ok := c.Compress(nil, src)
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %d bytes (ok %v), reference %d bytes (ok %v)", len(src), len(got), ok, len(want), wok)
		}
	})
}
