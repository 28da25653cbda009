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
// x86-64; see pglzHash4 for the one platform dependence.

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

// PGLZCompressor holds the history of pglz compression (hist_start and
// hist_entries, static in PostgreSQL), so that repeated compressions do not
// allocate. The zero value is ready to use; it is not safe for concurrent use.
//
// PostgreSQL keeps each hash list doubly linked (PGLZ_HistEntry) so that an
// entry can be unlinked when hist_entries wraps around and it is reused.
// Every input position is added once, in order, so the entries in use are
// always the last PGLZ_HISTORY_SIZE positions, and an entry reused is the
// oldest of all, hence the tail of its list. Each list therefore holds, newest
// first, exactly the positions of its hash within the last 4096 bytes, and
// the walk stops at an offset of 0x0fff anyway, before any older position.
// So singly linked lists indexed by position, as zlib keeps them, give the
// same candidates in the same order with two stores per position instead of
// PostgreSQL's unlinking: head is hist_start holding positions, prev links
// each position to the previous one of its list.
//
// A position is stored as a uint16, plus a bias that keeps 0 as "none" (the
// cleared head, more than 4096 bytes back, ends the walk like an empty list),
// and prev is indexed by that stored value itself: one load per entry
// walked, the walk's critical path. An input too long for 16 bits slides
// the stored values down now and then (pglzSlide), as zlib slides its window.
type PGLZCompressor struct {
	head [pglzMaxHistoryLists]uint16 // hist_start: the newest position of each hash list, biased; 0 is none
	prev [1 << 16]uint16             // by biased position: the previous position of its list, biased
}

const (
	// pglzBias is the stored value of position 0 of an input: a stored
	// position is at least 4096, more than a match can reach back from it
	// to 0, the end of a list.
	pglzBias = pglzHistorySize
	// pglzSlide is how far the stored values move down when the next
	// item's positions could pass 0xffff; what stays is well past 4096
	// bytes of history.
	pglzSlide = 1<<16 - 4*pglzHistorySize
)

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

// Compress is PGLZCompress with c's history: it appends to dst and
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

	// As pglz_compress, clear the part of hist_start this input uses.
	head, prev := &c.head, &c.prev
	clear(head[:hashsz])
	bias := pglzBias // position dp is stored as dp+bias
	// Slide before an item whose positions could be stored past 0xffff.
	slideAt := 1<<16 - pglzMaxMatch - bias

	// The output: PGLZ_MAX_OUTPUT(slen) = slen + 4 bytes at most, since the
	// size is checked once per item and an item adds at most 4 bytes.
	off := len(dst)
	if cap(dst)-off < slen+4 {
		grown := make([]byte, off, off+slen+4)
		copy(grown, dst)
		dst = grown
	}
	out := dst[off : off+slen+4]
	bp := 0

	ctrlp := -1 // index of the pending control byte in out; -1 is ctrl_dummy
	var ctrlb, ctrl byte
	foundMatch := false

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
		if dp >= slideAt {
			c.slide(hashsz)
			bias -= pglzSlide
			slideAt += pglzSlide
		}
		h := pglzHash(src, dp, mask)
		mlen, moff := c.findMatch(src, dp, h, bias)

		// pglz_out_ctrl: store the full control byte and reserve the next
		// one when 8 items have been written under it.
		if ctrl == 0 {
			if ctrlp >= 0 {
				out[ctrlp] = ctrlb
			}
			ctrlp = bp
			bp++
			ctrlb = 0
			ctrl = 1
		}
		if mlen > 0 {
			// pglz_out_tag, then every matched position into the history.
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
			prev[uint16(dp+bias)] = head[h&(pglzMaxHistoryLists-1)]
			head[h&(pglzMaxHistoryLists-1)] = uint16(dp + bias)
			dp++
			end := dp + mlen - 1
			// The positions with 4 bytes to hash, from a slice the compiler
			// sees need no bounds check per position.
			if in := src[dp:min(end+3, slen)]; len(in) >= 4 {
				at := dp + bias
				for i := range len(in) - 3 {
					h := pglzHash4(binary.LittleEndian.Uint32(in[i:])) & mask
					prev[uint16(at+i)] = head[h&(pglzMaxHistoryLists-1)]
					head[h&(pglzMaxHistoryLists-1)] = uint16(at + i)
				}
				dp += len(in) - 3
			}
			for ; dp < end; dp++ { // the last 3 bytes of the input
				h := pglzHash(src, dp, mask)
				prev[uint16(dp+bias)] = head[h&(pglzMaxHistoryLists-1)]
				head[h&(pglzMaxHistoryLists-1)] = uint16(dp + bias)
			}
			foundMatch = true
		} else {
			// pglz_out_literal
			out[bp] = src[dp]
			bp++
			ctrl <<= 1
			prev[uint16(dp+bias)] = head[h&(pglzMaxHistoryLists-1)]
			head[h&(pglzMaxHistoryLists-1)] = uint16(dp + bias)
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
	return dst[:off+bp], true
}

// pglzHash is pglz_hist_idx: the hash list of the 4 bytes at s[i:] (or of
// s[i] alone when fewer than 4 bytes remain).
func pglzHash(s []byte, i, mask int) int {
	if len(s)-i < 4 {
		return int(int8(s[i])) & mask
	}
	return pglzHash4(binary.LittleEndian.Uint32(s[i:])) & mask
}

// pglzHash4 is pglz_hist_idx of 4 bytes, s[0] in the low byte of x, before
// the mask.
//
// The C macro shifts and XORs plain `char` values. On x86 (and x86-64) char
// is signed, so a byte >= 0x80 is sign-extended to a negative int before the
// shifts: int(int8(b)) below. That is what PostgreSQL on x86-64 computes, and
// what the images in real WAL were made with. Where char is unsigned (most
// ARM Linux builds) the hash, hence the candidates and the output, differ;
// that output is still valid pglz, just not byte-identical with this.
func pglzHash4(x uint32) int {
	return int(int8(x))<<6 ^ int(int8(x>>8))<<4 ^ int(int8(x>>16))<<2 ^ int(int8(x>>24))
}

// findMatch is pglz_find_match: it walks hash list h, that of position dp,
// nearest position first, and returns the best match's length and offset,
// or length 0 when there is none longer than 2 bytes.
//
// Two shortcuts leave the result PostgreSQL's. A candidate counts only if
// it matches more bytes than the best so far, so one that differs at the
// byte just past that length is skipped uncompared (PostgreSQL compares it,
// and its memcmp of the first 16 or more bytes only ever scores such
// candidates 0). And a best match as long as a match can be here ends the
// walk, since no later candidate can beat it. PostgreSQL tests good_match
// only when the list goes on; testing it at the end of the list too changes
// nothing, as the walk ends there either way.
func (c *PGLZCompressor) findMatch(src []byte, dp, h, bias int) (int, int) {
	limit := min(pglzMaxMatch, len(src)-dp)
	cur := src[dp : dp+limit] // what a match can cover
	length, off := 0, 0
	want := cur[0]           // the byte a better match must have at length
	stop := pglzStopAfter[0] // the entries visited after which to stop
	at := dp + bias          // dp as stored in the history
	p := c.head[h&(pglzMaxHistoryLists-1)]
	visited := int32(0)
	for {
		// The walk proper, kept small enough for the registers: skip the
		// entries that cannot beat the best match.
		var hp int
		for {
			// Stop if the offset does not fit into a tag anymore: the end
			// of the list (0), or an entry PostgreSQL's history no longer
			// holds, lies further back.
			if at-int(p) >= 0x0fff {
				return pglzResult(length, off)
			}
			hp = int(p) - bias
			p = c.prev[p]
			if src[hp+length] == want {
				break
			}
			// Be happy with lesser good matches the more entries were visited.
			if visited >= stop {
				return pglzResult(length, off)
			}
			visited++
		}
		if n := matchLen(cur, src[hp:hp+limit]); n > length {
			length, off = n, dp-hp
			if length == limit {
				break
			}
			want = cur[length]
			stop = pglzStopAfter[length]
		}
		if visited >= stop {
			break
		}
		visited++
	}
	return pglzResult(length, off)
}

// slide moves every stored position down by pglzSlide, for an input longer
// than 16 bits can hold: a position that would fall to 0 or below lies far
// beyond the 4096 bytes a match can reach back and becomes none, 0.
func (c *PGLZCompressor) slide(hashsz int) {
	down := func(v uint16) uint16 {
		if v <= pglzSlide {
			return 0
		}
		return v - pglzSlide
	}
	for i, v := range c.head[:hashsz] {
		c.head[i] = down(v)
	}
	for i := pglzSlide; i < len(c.prev); i++ {
		c.prev[i-pglzSlide] = down(c.prev[i])
	}
}

// pglzResult is findMatch's result for its best match: only a match that
// saves at least one byte counts.
func pglzResult(length, off int) (int, int) {
	if length > 2 {
		return length, off
	}
	return 0, 0
}

// pglzStopAfter, by the length of the best match so far, is the number of
// entries visited after which that length is good enough: good_match starts
// at match_size_good and loses good_drop percent per entry visited, down to
// 9, which it keeps (9 * 10 / 100 is 0); a match shorter never stops the walk.
var pglzStopAfter = func() (t [pglzMaxMatch + 1]int32) {
	var good []int // good_match after each entry visited
	for g := pglzGoodMatch; len(good) == 0 || good[len(good)-1] != g; g -= g * pglzGoodDrop / 100 {
		good = append(good, g)
	}
	for length := range t {
		t[length] = math.MaxInt32
		for k, g := range good {
			if length >= g {
				t[length] = int32(k)
				break
			}
		}
	}
	return t
}()

// matchLen is the length of the common prefix of a and b, len(b) >=
// len(a): the byte-by-byte loop of pglz_find_match, eight bytes at a time.
func matchLen(a, b []byte) int {
	b = b[:len(a)]
	n := 0
	for ; n+8 <= len(a); n += 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}
