package archive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// xzDictCapped passes an xz stream through unchanged but for the LZMA2
// dictionary size of each block header, lowered to at most max (the
// header's CRC32 recomputed). ulikunitz/xz allocates, for every block, the
// dictionary its header declares, whatever the data needs: a 170 KB file
// declaring 4 GiB made `verify` allocate and clear gigabytes (8.4 GB RSS,
// 45 s for two such files). No LZMA2 match reaches further back than the
// data decoded, which for a WAL file is at most its size bound, so a
// dictionary of that bound decodes every valid file.
//
// It follows the container (doc/xz-file-format.txt: stream header, block
// headers, LZMA2 chunks by their sizes, block padding and check, index,
// footer, stream padding) without decoding; what does not parse is an
// error, as the decoder would have found it.
type xzDictCapped struct {
	r        *bufio.Reader
	max      uint32
	pending  []byte
	buf      []byte
	state    int
	check    int   // bytes of the current stream's check
	blockLen int64 // bytes of the current block so far (for its padding)
	err      error
}

const (
	xzStreamHeader = iota
	xzBlockOrIndex
	xzChunk
	xzAfterIndex
)

var errXZFormat = errors.New("xz: invalid container")

func newXZDictCapped(r io.Reader, max uint32) *xzDictCapped {
	return &xzDictCapped{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (x *xzDictCapped) Read(p []byte) (int, error) {
	for len(x.pending) == 0 {
		if x.err != nil {
			return 0, x.err
		}
		x.buf = x.buf[:0]
		x.err = x.next()
		x.pending = x.buf
		if x.err != nil && len(x.pending) == 0 {
			return 0, x.err
		}
	}
	n := copy(p, x.pending)
	x.pending = x.pending[n:]
	return n, nil
}

// take reads n bytes into buf and returns them.
func (x *xzDictCapped) take(n int) ([]byte, error) {
	start := len(x.buf)
	x.buf = append(x.buf, make([]byte, n)...)
	if _, err := io.ReadFull(x.r, x.buf[start:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return x.buf[start:], nil
}

// next reads the next unit of the container into buf.
func (x *xzDictCapped) next() error {
	switch x.state {
	case xzStreamHeader, xzAfterIndex:
		if x.state == xzAfterIndex {
			// Stream padding (zeros, by fours), then another stream or the end.
			b, err := x.r.Peek(4)
			if len(b) == 0 && err == io.EOF {
				return io.EOF
			}
			if len(b) == 4 && b[0]|b[1]|b[2]|b[3] == 0 {
				_, err := x.take(4)
				return err
			}
		}
		h, err := x.take(12)
		if err != nil {
			return err
		}
		if string(h[:6]) != "\xfd7zXZ\x00" {
			return errXZFormat
		}
		x.check = xzCheckSize(h[7] & 0x0F)
		x.state = xzBlockOrIndex
		return nil
	case xzBlockOrIndex:
		b, err := x.take(1)
		if err != nil {
			return err
		}
		if b[0] == 0 {
			return x.index()
		}
		size := (int(b[0]) + 1) * 4
		if _, err := x.take(size - 1); err != nil {
			return err
		}
		h := x.buf[len(x.buf)-size:]
		if crc32.ChecksumIEEE(h[:size-4]) != binary.LittleEndian.Uint32(h[size-4:]) {
			return errXZFormat
		}
		// The block's chunks are read ahead (up to 64 MiB of them) to
		// learn how much it decompresses to: no match reaches further
		// back, so that is the dictionary it needs at most.
		x.blockLen = int64(size)
		need := int64(0)
		for len(x.buf) < size+64<<20 {
			before := len(x.buf)
			unpacked, end, err := x.chunk()
			x.blockLen += int64(len(x.buf) - before)
			if err != nil {
				return err
			}
			need += unpacked
			if end {
				if err := capFilters(x.buf[:size], uint32(min(need, int64(x.max)))); err != nil {
					return err
				}
				return x.blockEnd()
			}
		}
		if err := capFilters(x.buf[:size], x.max); err != nil {
			return err
		}
		x.state = xzChunk
		return nil
	case xzChunk:
		before := len(x.buf)
		_, end, err := x.chunk()
		x.blockLen += int64(len(x.buf) - before)
		if err != nil || !end {
			return err
		}
		return x.blockEnd()
	}
	return errXZFormat
}

// chunk reads one LZMA2 chunk by the sizes its header gives, and returns
// what it decompresses to; end is the end-of-data byte.
func (x *xzDictCapped) chunk() (unpacked int64, end bool, err error) {
	c, err := x.take(1)
	if err != nil {
		return 0, false, err
	}
	switch ctl := c[0]; {
	case ctl == 0:
		return 0, true, nil
	case ctl == 1 || ctl == 2: // uncompressed chunk
		s, err := x.take(2)
		if err != nil {
			return 0, false, err
		}
		n := int(binary.BigEndian.Uint16(s)) + 1
		_, err = x.take(n)
		return int64(n), false, err
	case ctl >= 0x80: // LZMA chunk, with a properties byte from 0xC0
		n := 4
		if ctl >= 0xC0 {
			n = 5
		}
		s, err := x.take(n)
		if err != nil {
			return 0, false, err
		}
		unpacked := int64(ctl&0x1F)<<16 + int64(binary.BigEndian.Uint16(s[0:2])) + 1
		_, err = x.take(int(binary.BigEndian.Uint16(s[2:4])) + 1)
		return unpacked, false, err
	}
	return 0, false, errXZFormat
}

// blockEnd reads the block padding (to a multiple of four) and its check.
func (x *xzDictCapped) blockEnd() error {
	pad := int((4 - x.blockLen%4) % 4)
	if _, err := x.take(pad + x.check); err != nil {
		return err
	}
	x.state = xzBlockOrIndex
	return nil
}

// capFilters lowers the dictionary of an LZMA2 filter in block header h to
// at most max (at least 4 KiB, LZMA2's smallest) and fixes the header's
// CRC32.
func capFilters(h []byte, max uint32) error {
	flags := h[1]
	if flags&0x3C != 0 {
		return errXZFormat // reserved bits
	}
	p := 2
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed size
		if present {
			n, ok := xzVLILen(h[p : len(h)-4])
			if !ok {
				return errXZFormat
			}
			p += n
		}
	}
	for f := 0; f <= int(flags&3); f++ {
		id, n, ok := xzVLI(h[p : len(h)-4])
		if !ok {
			return errXZFormat
		}
		p += n
		psize, n, ok := xzVLI(h[p : len(h)-4])
		if !ok || uint64(len(h)-4-p-n) < psize {
			return errXZFormat
		}
		p += n
		if b := xzDictByte(max); id == 0x21 && psize == 1 && h[p] > b && h[p] <= 40 {
			h[p] = b
			binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))
		}
		p += int(psize)
	}
	return nil
}

// index passes the index (its indicator already taken) and the stream
// footer.
func (x *xzDictCapped) index() error {
	size := 1
	readVLI := func() (uint64, error) {
		var v uint64
		for i := 0; i < 9; i++ {
			b, err := x.take(1)
			if err != nil {
				return 0, err
			}
			size++
			v |= uint64(b[0]&0x7F) << (7 * i)
			if b[0]&0x80 == 0 {
				return v, nil
			}
		}
		return 0, errXZFormat
	}
	records, err := readVLI()
	if err != nil {
		return err
	}
	if records > 1<<20 {
		// A block per MiB of a 1 GiB segment is 1,024: no WAL file has
		// this many (and the index is held whole here).
		return errXZFormat
	}
	for i := uint64(0); i < records; i++ {
		if _, err := readVLI(); err != nil { // unpadded size
			return err
		}
		if _, err := readVLI(); err != nil { // uncompressed size
			return err
		}
	}
	if _, err := x.take((4-size%4)%4 + 4 + 12); err != nil { // padding, CRC32, footer
		return err
	}
	x.state = xzAfterIndex
	return nil
}

// xzCheckSize is the size of a check of type t (the file format's table).
func xzCheckSize(t byte) int {
	switch {
	case t == 0:
		return 0
	case t <= 3:
		return 4
	case t <= 6:
		return 8
	case t <= 9:
		return 16
	case t <= 12:
		return 32
	}
	return 64
}

// xzVLI decodes a variable-length integer of the format.
func xzVLI(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) && n < 9 {
		v |= uint64(b[n]&0x7F) << (7 * n)
		n++
		if b[n-1]&0x80 == 0 {
			return v, n, true
		}
	}
	return 0, 0, false
}

func xzVLILen(b []byte) (int, bool) {
	_, n, ok := xzVLI(b)
	return n, ok
}

// xzDictSize is the dictionary size an LZMA2 properties byte gives.
func xzDictSize(b byte) uint32 {
	if b >= 40 {
		return 0xFFFFFFFF
	}
	return (2 | uint32(b)&1) << (b/2 + 11)
}

// xzDictByte is the smallest properties byte whose dictionary holds max.
func xzDictByte(max uint32) byte {
	for b := byte(0); b < 40; b++ {
		if xzDictSize(b) >= max {
			return b
		}
	}
	return 40
}
