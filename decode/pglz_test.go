package decode

import (
	"bytes"
	"testing"
)

func TestPGLZDecompress(t *testing.T) {
	// control 0b00000010: literal 'a', then a tag copying 17 bytes from offset 1.
	src := []byte{0x02, 'a', 0x0E, 0x01}
	dst := make([]byte, 18)
	n, err := PGLZDecompress(src, dst, true)
	if err != nil || n != 18 || !bytes.Equal(dst, bytes.Repeat([]byte("a"), 18)) {
		t.Fatalf("got %q, %d, %v", dst, n, err)
	}
	// Extended length: 18 + 2 = 20 bytes from offset 2 after "ab".
	src = []byte{0x04, 'a', 'b', 0x0F, 0x02, 0x02}
	dst = make([]byte, 22)
	if n, err := PGLZDecompress(src, dst, true); err != nil || n != 22 || string(dst) != "abababababababababababab"[:22] {
		t.Fatalf("got %q, %d, %v", dst, n, err)
	}
	for _, bad := range [][]byte{
		{0x01, 0x00, 0x00},              // offset 0
		{0x01, 0x00, 0x05},              // offset beyond output
		{0x01, 0x0F},                    // truncated tag
		{0x00, 'a', 'b', 'c'},           // output not filled (check complete)
		{0x00, 'a', 'b', 'c', 'd', 'e'}, // input not consumed
	} {
		if _, err := PGLZDecompress(bad, make([]byte, 4), true); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}

// FuzzPGLZ checks that decompression never writes past its output, never
// panics, and reports success only when it filled the output from all input.
func FuzzPGLZ(f *testing.F) {
	f.Add([]byte{0x02, 'a', 0x0E, 0x01}, uint16(18))
	f.Add([]byte{0x04, 'a', 'b', 0x0F, 0x02, 0x02}, uint16(22))
	f.Add([]byte{0x00, 0, 0, 0, 0, 0, 0x38, 0xD5, 0x70}, uint16(8))
	f.Fuzz(func(t *testing.T, src []byte, size uint16) {
		dst := make([]byte, int(size)+8)
		guard := dst[size:]
		for i := range guard {
			guard[i] = 0xA5
		}
		n, err := PGLZDecompress(src, dst[:size:size], true)
		if n < 0 || n > int(size) {
			t.Fatalf("wrote %d bytes into %d", n, size)
		}
		for _, b := range guard {
			if b != 0xA5 {
				t.Fatal("wrote past the output")
			}
		}
		if err == nil && n != int(size) {
			t.Fatalf("success with %d of %d bytes", n, size)
		}
	})
}
