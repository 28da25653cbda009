package decode

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
)

// pglz compression, a port of pglz_compress, pglz_find_match and their
// macros in src/common/pg_lzcompress.c (the same code in PostgreSQL 15 and
// 18; the images of PostgreSQL 13's WAL match it too) with
// PGLZ_strategy_default, the strategy XLogCompressBackupBlock uses for
// full-page images. The output is bit-exact with PostgreSQL's as built on
// x86-64; see pglzHash for the one platform dependence.

const (
	pglzMaxHistoryLists = 8192 // PGLZ_MAX_HISTORY_LISTS, a power of 2
	pglzHistorySize     = 4096 // PGLZ_HISTORY_SIZE
	pglzMaxMatch        = 273  // PGLZ_MAX_MATCH

	// PGLZ_strategy_default.
	pglzMinInputSize  = 32            // inputs shorter than this are not compressed
	pglzMaxInputSize  = math.MaxInt32 // no upper limit
	pglzMinCompRate   = 25            // require a 25% saving
	pglzFirstSuccess  = 1024          // give up if no match in the first 1 kB of output
	pglzMatchSizeGood = 128           // stop the history walk at a match this long
	pglzMatchSizeDrop = 10            // lower the good match size by 10% per entry visited

	// The strategy's parameters clamped to their supported ranges, as
	// pglz_compress does at run time.
	pglzGoodMatch = min(max(pglzMatchSizeGood, 17), pglzMaxMatch)
	pglzGoodDrop  = min(max(pglzMatchSizeDrop, 0), 100)
	pglzNeedRate  = min(max(pglzMinCompRate, 0), 99)
)

// pglzHistEntry is PGLZ_HistEntry, with indexes into the entry table for the
// pointers: entry 0 is INVALID_ENTRY (the list terminator, freely scribbled
// on), and a prev of -1 stands for C's NULL (the entry heads its list).
type pglzHistEntry struct {
	next, prev int16
	hindex     int32 // my current hash key
	pos        int32 // my input position
}

// PGLZCompressor holds the work arrays of pglz compression (hist_start and
// hist_entries, static in PostgreSQL), so that repeated compressions do not
// allocate. The zero value is ready to use; it is not safe for concurrent use.
type PGLZCompressor struct {
	start   [pglzMaxHistoryLists]int16         // hist_start: the head of each hash list
	entries [pglzHistorySize + 1]pglzHistEntry // hist_entries
	next    int                                // hist_next: the entry to use next
	recycle bool                               // hist_recycle: entries are being reused
}

var pglzPool = sync.Pool{New: func() any { return new(PGLZCompressor) }}

// PGLZCompress is pglz_compress(src, len(src), ..., PGLZ_strategy_default),
// bit-exact: it appends the compressed form of src to dst and reports true,
// or returns dst with its length and contents unchanged and false where
// PostgreSQL returns -1 (input under 32 bytes, no match within the first
// 1024 output bytes, or output not under 75% of the input). It uses a pooled
// PGLZCompressor; hold one of your own to control allocation.
func PGLZCompress(dst, src []byte) ([]byte, bool) {
	c := pglzPool.Get().(*PGLZCompressor)
	dst, ok := c.Compress(dst, src)
	pglzPool.Put(c)
	return dst, ok
}

// pglzHash is pglz_hist_idx: the hash list of the 4 bytes at s[i:] (or of
// s[i] alone when fewer than 4 bytes remain).
//
// The C macro shifts and XORs plain `char` values. On x86 (and x86-64) char
// is signed, so a byte >= 0x80 is sign-extended to a negative int before the
// shifts: int(int8(b)) below. That is what PostgreSQL on x86-64 computes, and
// what the images in real WAL were made with. Where char is unsigned (most
// ARM Linux builds) the hash, hence the candidates and the output, differ;
// that output is still valid pglz, just not byte-identical with this.
func pglzHash(s []byte, i, mask int) int {
	if len(s)-i < 4 {
		return int(int8(s[i])) & mask
	}
	return (int(int8(s[i]))<<6 ^ int(int8(s[i+1]))<<4 ^
		int(int8(s[i+2]))<<2 ^ int(int8(s[i+3]))) & mask
}

// Compress is PGLZCompress with c's work arrays: it appends to dst and
// allocates only when dst has less than len(src)+4 bytes of spare capacity.
func (c *PGLZCompressor) Compress(dst, src []byte) ([]byte, bool) {
	slen := len(src)
	if slen < pglzMinInputSize || slen > pglzMaxInputSize {
		return dst, false
	}

	var resultMax int
	if slen > math.MaxInt32/100 {
		resultMax = (slen / 100) * (100 - pglzNeedRate) // approximate to avoid overflow
	} else {
		resultMax = (slen * (100 - pglzNeedRate)) / 100
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
		if !foundMatch && bp >= pglzFirstSuccess {
			return dst, false
		}
		h := pglzHash(src, dp, mask)
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
				c.add(pglzHash(src, dp, mask), dp)
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
func (c *PGLZCompressor) add(h, dp int) {
	he := &c.entries
	me := &he[c.next]
	if c.recycle {
		if me.prev < 0 {
			c.start[me.hindex&(pglzMaxHistoryLists-1)] = me.next
		} else {
			he[me.prev].next = me.next
		}
		he[me.next].prev = me.prev // harmless on entry 0
	}
	h &= pglzMaxHistoryLists - 1 // a no-op that drops the bounds checks
	head := c.start[h]
	me.next = head
	me.prev = -1
	me.hindex = int32(h)
	me.pos = int32(dp)
	he[head].prev = int16(c.next) // scribbles on entry 0 for an empty list
	c.start[h] = int16(c.next)
	c.next++
	if c.next >= pglzHistorySize+1 {
		c.next = 1
		c.recycle = true
	}
}

// findMatch is pglz_find_match: it walks hash list h, that of position dp,
// nearest entry first, and returns the best match's length and offset, or
// length 0 when there is none longer than 2 bytes.
func (c *PGLZCompressor) findMatch(src []byte, dp, h int) (int, int) {
	goodMatch := pglzGoodMatch
	he := &c.entries
	n := len(src)
	length, off := 0, 0
	for e := c.start[h&(pglzMaxHistoryLists-1)]; e != 0; {
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
				thislen = length + matchLen(src, dp+length, hp+length, min(pglzMaxMatch-length, n-dp-length))
			}
		} else if limit := min(pglzMaxMatch, n-dp); limit >= 8 {
			// The first eight bytes here, to spare most candidates a call.
			if x := binary.LittleEndian.Uint64(src[dp:]) ^ binary.LittleEndian.Uint64(src[hp:]); x != 0 {
				thislen = bits.TrailingZeros64(x) / 8
			} else {
				thislen = 8 + matchLen(src, dp+8, hp+8, limit-8)
			}
		} else {
			thislen = matchLen(src, dp, hp, limit)
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
			goodMatch -= goodMatch * pglzGoodDrop / 100
		}
	}
	// Only a match that saves at least one byte counts.
	if length > 2 {
		return length, off
	}
	return 0, 0
}

// matchLen is the length of the common prefix of src[a:] and src[b:], at
// most limit bytes, where b < a and a+limit <= len(src): the byte-by-byte
// loop of pglz_find_match, eight bytes at a time.
func matchLen(src []byte, a, b, limit int) int {
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
