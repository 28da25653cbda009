package decode

import (
	"testing"
)

// TestPGLZSlide checks the slide of a long input's history: every stored
// position moves down by pglzSlide, those that would reach 0 or below
// become none (0), and prev's entries move with the positions they belong
// to. (TestPGLZCompressLongInputs checks the bytes of inputs that slide.)
func TestPGLZSlide(t *testing.T) {
	var c PGLZCompressor
	heads := map[int]uint16{ // list: stored position
		0:    0,              // none stays none
		1:    1,              // far back: none
		2:    pglzSlide,      // would be 0: none
		3:    pglzSlide + 1,  // the oldest kept
		4:    0xffff,         // the newest
		8191: pglzSlide + 77, // the last list
	}
	for h, v := range heads {
		c.head[h] = v
	}
	for i := range c.prev {
		c.prev[i] = uint16(max(i-300, 0)) // each position links to the one 300 bytes back
	}
	c.slide(pglzMaxHistoryLists)
	for h, v := range heads {
		want := uint16(0)
		if v > pglzSlide {
			want = v - pglzSlide
		}
		if c.head[h] != want {
			t.Errorf("head[%d]: %d slid to %d, want %d", h, v, c.head[h], want)
		}
	}
	for i := range 1<<16 - pglzSlide {
		old := uint16(i + pglzSlide - 300)
		want := uint16(0)
		if old > pglzSlide {
			want = old - pglzSlide
		}
		if c.prev[i] != want {
			t.Fatalf("prev[%d]: %d, want %d (the entry of %d, which linked to %d)", i, c.prev[i], want, i+pglzSlide, old)
		}
	}
}
