// Package decode splits a WAL record's body into its block references, origin,
// top-level transaction id and main data, as PostgreSQL's DecodeXLogRecord does
// (src/backend/access/transam/xlogreader.c), and rebuilds full-page images
// (RestoreBlockImage), decompressing pglz, lz4 and zstd.
//
// Layout of a record body after the 24-byte XLogRecord header:
//
//	block headers (id 0..32, strictly increasing) [origin 253] [top xid 252] [main data header 255|254]
//	for each block: [image bytes][block data]
//	main data
//
// A Decoder is not safe for concurrent use; the Record it returns and the
// slices it holds are valid until the next call to Decode or until the
// xlog.Record they came from is overwritten.
package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/walscope/walscope/xlog"
)

// MaxBlockID is XLR_MAX_BLOCK_ID.
const MaxBlockID = 32

// Special block ids (src/include/access/xlogrecord.h).
const (
	blockIDDataShort   = 255 // XLR_BLOCK_ID_DATA_SHORT
	blockIDDataLong    = 254 // XLR_BLOCK_ID_DATA_LONG
	blockIDOrigin      = 253 // XLR_BLOCK_ID_ORIGIN
	blockIDToplevelXID = 252 // XLR_BLOCK_ID_TOPLEVEL_XID, PostgreSQL 14 and later
)

// Block reference flags, the high nibble of fork_flags (xlogrecord.h).
const (
	BlockForkMask = 0x0F // BKPBLOCK_FORK_MASK
	BlockHasImage = 0x10 // BKPBLOCK_HAS_IMAGE
	BlockHasData  = 0x20 // BKPBLOCK_HAS_DATA
	BlockWillInit = 0x40 // BKPBLOCK_WILL_INIT
	BlockSameRel  = 0x80 // BKPBLOCK_SAME_REL
)

// ForkNumber is a relation fork, ForkNumber (src/include/common/relpath.h).
// A block reference stores it in the four low bits of fork_flags, so a
// corrupt record can hold a number that names no fork (Valid is false).
type ForkNumber uint8

// The forks.
const (
	ForkMain          ForkNumber = 0 // MAIN_FORKNUM
	ForkFSM           ForkNumber = 1 // FSM_FORKNUM
	ForkVisibilityMap ForkNumber = 2 // VISIBILITYMAP_FORKNUM
	ForkInit          ForkNumber = 3 // INIT_FORKNUM

	MaxForkNumber = ForkInit // MAX_FORKNUM
)

// forkNames are forkNames in src/common/relpath.c.
var forkNames = [...]string{"main", "fsm", "vm", "init"}

// Valid reports whether f names a fork.
func (f ForkNumber) Valid() bool { return f <= MaxForkNumber }

// Name returns the fork's name as pg_waldump prints it (forkNames in
// relpath.c): "main", "fsm", "vm" or "init"; "" for a number that names no
// fork.
func (f ForkNumber) Name() string {
	if f.Valid() {
		return forkNames[f]
	}
	return ""
}

// String returns Name, or the number in decimal when it names no fork.
func (f ForkNumber) String() string {
	if f.Valid() {
		return forkNames[f]
	}
	return strconv.Itoa(int(f))
}

// ParseForkNumber returns the fork that name names ("main", "fsm", "vm",
// "init"), as forkname_to_number does.
func ParseForkNumber(name string) (ForkNumber, bool) {
	for i, n := range forkNames {
		if n == name {
			return ForkNumber(i), true
		}
	}
	return 0, false
}

// Compression is the method an image is compressed with.
type Compression uint8

// Image compression methods.
const (
	CompressNone Compression = iota
	CompressPGLZ
	CompressLZ4
	CompressZstd
	CompressUnknown // flags say compressed, but by no method we know
)

func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressPGLZ:
		return "pglz"
	case CompressLZ4:
		return "lz4"
	case CompressZstd:
		return "zstd"
	}
	return "unknown"
}

// RelFileLocator is RelFileLocator (RelFileNode before PostgreSQL 16;
// src/include/storage/relfilelocator.h).
type RelFileLocator struct {
	SpcOID, DBOID, RelNumber uint32
}

// BlockRef is one decoded block reference, DecodedBkpBlock (xlogreader.h).
type BlockRef struct {
	ID        uint8
	ForkFlags uint8 // fork number and BKPBLOCK_* flags as stored
	Rel       RelFileLocator
	Block     uint32
	DataLen   uint16 // data_length
	Data      []byte // block data, DataLen bytes

	HasImage    bool
	ImageInfo   uint8  // bimg_info as stored
	ImageLen    uint16 // bimg_len: stored (maybe compressed) image bytes
	HoleOffset  uint16
	HoleLength  uint16
	HasHole     bool
	Apply       bool // BKPIMAGE_APPLY: redo restores it (else only for wal_consistency_checking)
	Compression Compression
	Image       []byte // the stored image bytes, len = ImageLen
}

// Fork returns the block's fork number.
func (b *BlockRef) Fork() ForkNumber { return ForkNumber(b.ForkFlags & BlockForkMask) }

// WillInit reports BKPBLOCK_WILL_INIT.
func (b *BlockRef) WillInit() bool { return b.ForkFlags&BlockWillInit != 0 }

// Record is a decoded record.
type Record struct {
	*xlog.Record
	Blocks      []BlockRef // block references in id order; ids may have gaps
	MainData    []byte
	Origin      uint16 // replication origin, if HasOrigin
	HasOrigin   bool
	ToplevelXID xlog.XID // 0 if absent
	FPILen      uint32   // sum of bimg_len: pg_waldump's fpi_len
	blocks      [MaxBlockID + 1]BlockRef
}

// RecLen is pg_waldump's "rec" length: xl_tot_len minus the stored image bytes.
func (r *Record) RecLen() uint32 { return r.Header.TotLen - r.FPILen }

// Block returns the block reference with this id, or nil.
func (r *Record) Block(id uint8) *BlockRef {
	for i := range r.Blocks {
		if r.Blocks[i].ID == id {
			return &r.Blocks[i]
		}
	}
	return nil
}

// ErrInvalid is the sentinel of every decoding error.
var ErrInvalid = errors.New("invalid record body")

// Error is a decoding error; Msg is xlogreader's message for it.
type Error struct {
	LSN xlog.LSN // the record's LSN
	Msg string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return ErrInvalid }

// Decoder decodes records. The zero value is not usable; use NewDecoder.
type Decoder struct {
	// BlockSize is BLCKSZ, the data page size, which WAL does not record.
	BlockSize int
	rec       Record
	images    imageDecoders
}

// NewDecoder returns a decoder for data pages of blockSize bytes (0: 8192).
func NewDecoder(blockSize int) *Decoder {
	if blockSize == 0 {
		blockSize = 8192
	}
	return &Decoder{BlockSize: blockSize}
}

// Image flag bits, per version (src/include/access/xlogrecord.h).
const (
	imgHasHole      = 0x01 // BKPIMAGE_HAS_HOLE
	imgApply15      = 0x02 // BKPIMAGE_APPLY, 15 and later
	imgPGLZ15       = 0x04 // BKPIMAGE_COMPRESS_PGLZ
	imgLZ415        = 0x08 // BKPIMAGE_COMPRESS_LZ4
	imgZstd15       = 0x10 // BKPIMAGE_COMPRESS_ZSTD
	imgCompressed14 = 0x02 // BKPIMAGE_IS_COMPRESSED, 14 and earlier (pglz only)
	imgApply14      = 0x04 // BKPIMAGE_APPLY, 10 to 14
)

// imageFlags interprets bimg_info for version v.
func imageFlags(v xlog.Version, info uint8) (apply bool, c Compression) {
	if v >= xlog.V15 {
		apply = info&imgApply15 != 0
		switch {
		case info&imgPGLZ15 != 0:
			c = CompressPGLZ
		case info&imgLZ415 != 0:
			c = CompressLZ4
		case info&imgZstd15 != 0:
			c = CompressZstd
		}
		return
	}
	apply = info&imgApply14 != 0
	if info&imgCompressed14 != 0 {
		c = CompressPGLZ
	}
	return
}

// cursor reads the fixed fields of the header area; its error sticks.
type cursor struct {
	b   []byte
	off int
	bad bool
}

func (c *cursor) need(n int) bool {
	if c.bad || len(c.b)-c.off < n {
		c.bad = true
		return false
	}
	return true
}

func (c *cursor) u8() uint8 {
	if !c.need(1) {
		return 0
	}
	v := c.b[c.off]
	c.off++
	return v
}

func (c *cursor) u16() uint16 {
	if !c.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(c.b[c.off:])
	c.off += 2
	return v
}

func (c *cursor) u32() uint32 {
	if !c.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

// Decode decodes rec's body. Errors carry xlogreader's message; as in
// PostgreSQL, the LSN they print is the previous record's (rec.PrevRead), a
// quirk pg_waldump users see.
func (d *Decoder) Decode(rec *xlog.Record) (*Record, error) {
	prevLSN := rec.PrevRead
	out := &d.rec
	out.Record = rec
	out.Blocks = out.blocks[:0]
	out.MainData = nil
	out.Origin, out.HasOrigin, out.ToplevelXID, out.FPILen = 0, false, 0, 0
	v := rec.Version
	blcksz := d.BlockSize
	c := cursor{b: rec.Raw[xlog.RecordHeaderSize:]}
	// A record read with xlog.Options.HeadersOnly holds only its first
	// bytes: the headers are decoded and checked against xl_tot_len, the
	// payloads (block data, images, main data) are left nil.
	remaining := len(c.b)
	partial := int(rec.Header.TotLen) > len(rec.Raw)
	if partial {
		remaining = int(rec.Header.TotLen) - xlog.RecordHeaderSize
	}
	datatotal := 0
	mainLen := 0
	maxID := -1
	var lastRel *RelFileLocator
	fail := func(format string, args ...any) (*Record, error) {
		return nil, &Error{LSN: rec.LSN, Msg: fmt.Sprintf(format, args...)}
	}
	short := func() (*Record, error) {
		return fail("record with invalid length at %s", prevLSN)
	}
	compressedName := "BKPIMAGE_COMPRESSED"
	if v < xlog.V15 {
		compressedName = "BKPIMAGE_IS_COMPRESSED"
	}
headers:
	for remaining-c.off > datatotal {
		id := c.u8()
		if c.bad {
			return short()
		}
		switch {
		case id == blockIDDataShort:
			mainLen = int(c.u8())
			datatotal += mainLen
			break headers
		case id == blockIDDataLong:
			mainLen = int(c.u32())
			if mainLen < 0 || mainLen > remaining {
				return short()
			}
			datatotal += mainLen
			break headers
		case id == blockIDOrigin:
			out.Origin = c.u16()
			out.HasOrigin = true
		case id == blockIDToplevelXID && v >= xlog.V14:
			out.ToplevelXID = xlog.XID(c.u32())
		case id <= MaxBlockID:
			if int(id) <= maxID {
				return fail("out-of-order block_id %d at %s", id, prevLSN)
			}
			maxID = int(id)
			out.Blocks = out.Blocks[:len(out.Blocks)+1]
			b := &out.Blocks[len(out.Blocks)-1]
			*b = BlockRef{ID: id}
			ff := c.u8()
			b.ForkFlags = ff
			dlen := c.u16()
			if c.bad {
				return short()
			}
			hasData := ff&BlockHasData != 0
			if hasData && dlen == 0 {
				return fail("BKPBLOCK_HAS_DATA set, but no data included at %s", prevLSN)
			}
			if !hasData && dlen != 0 {
				return fail("BKPBLOCK_HAS_DATA not set, but data length is %d at %s", dlen, prevLSN)
			}
			datatotal += int(dlen)
			b.DataLen = dlen
			if ff&BlockHasImage != 0 {
				b.HasImage = true
				b.ImageLen = c.u16()
				b.HoleOffset = c.u16()
				b.ImageInfo = c.u8()
				b.Apply, b.Compression = imageFlags(v, b.ImageInfo)
				b.HasHole = b.ImageInfo&imgHasHole != 0
				compressed := b.Compression != CompressNone
				if v >= xlog.V15 && !compressed && b.ImageInfo&(imgPGLZ15|imgLZ415|imgZstd15) != 0 {
					compressed = true
				}
				if compressed {
					if b.HasHole {
						b.HoleLength = c.u16()
					}
				} else {
					b.HoleLength = uint16(blcksz - int(b.ImageLen))
				}
				if c.bad {
					return short()
				}
				datatotal += int(b.ImageLen)
				out.FPILen += uint32(b.ImageLen)
				if b.HasHole && (b.HoleOffset == 0 || b.HoleLength == 0 || int(b.ImageLen) == blcksz) {
					return fail("BKPIMAGE_HAS_HOLE set, but hole offset %d length %d block image length %d at %s",
						b.HoleOffset, b.HoleLength, b.ImageLen, prevLSN)
				}
				if !b.HasHole && (b.HoleOffset != 0 || b.HoleLength != 0) {
					return fail("BKPIMAGE_HAS_HOLE not set, but hole offset %d length %d at %s",
						b.HoleOffset, b.HoleLength, prevLSN)
				}
				if compressed && int(b.ImageLen) == blcksz {
					return fail("%s set, but block image length %d at %s", compressedName, b.ImageLen, prevLSN)
				}
				if !b.HasHole && !compressed && int(b.ImageLen) != blcksz {
					return fail("neither BKPIMAGE_HAS_HOLE nor %s set, but block image length is %d at %s",
						compressedName, dlen, prevLSN)
				}
			}
			if ff&BlockSameRel == 0 {
				b.Rel = RelFileLocator{c.u32(), c.u32(), c.u32()}
				lastRel = &b.Rel
			} else {
				if lastRel == nil {
					return fail("BKPBLOCK_SAME_REL set but no previous rel at %s", prevLSN)
				}
				b.Rel = *lastRel
			}
			b.Block = c.u32()
			if c.bad {
				return short()
			}
		default:
			return fail("invalid block_id %d at %s", id, prevLSN)
		}
	}
	if c.bad || remaining-c.off != datatotal {
		return short()
	}
	if partial {
		return out, nil
	}
	p := c.off
	for i := range out.Blocks {
		b := &out.Blocks[i]
		if b.HasImage {
			b.Image = c.b[p : p+int(b.ImageLen) : p+int(b.ImageLen)]
			p += int(b.ImageLen)
		}
		if b.DataLen > 0 {
			b.Data = c.b[p : p+int(b.DataLen) : p+int(b.DataLen)]
			p += int(b.DataLen)
		}
	}
	out.MainData = c.b[p : p+mainLen : p+mainLen]
	return out, nil
}
