package decode

import (
	"bytes"
	"math"
	"testing"
)

// TestPGLZCompressBaseWraps compresses through a compressor whose stored
// positions are about to overflow, so that it clears its history and starts
// again from a low base, and requires the bytes of a fresh compressor on
// each input, before and after.
func TestPGLZCompressBaseWraps(t *testing.T) {
	inputs := [][]byte{
		bytes.Repeat([]byte("the same words again, "), 400),
		bytes.Repeat([]byte{0xFE, 0x01, 0x80, 0x7F, 0x00}, 1800),
		bytes.Repeat([]byte("the same words again, "), 400),
	}
	var c PGLZCompressor
	c.next = math.MaxUint32 - 2*pglzHistorySize - len(inputs[0]) // the first input fits, just
	var seen []int
	for i, src := range inputs {
		var fresh PGLZCompressor
		want, wok := fresh.Compress(nil, src)
		got, ok := c.Compress(nil, src)
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("input %d: %d bytes (ok %v), fresh compressor %d (ok %v)", i, len(got), ok, len(want), wok)
		}
		seen = append(seen, c.next)
	}
	if seen[0] < math.MaxUint32-2*pglzHistorySize || seen[1] >= seen[0] {
		t.Errorf("bases %v: the history was not started again", seen)
	}
}
