package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Relation mapper files (src/backend/utils/cache/relmapper.c): the
// relfilenodes of the catalogs whose pg_class.relfilenode is 0, kept in
// global/pg_filenode.map (shared catalogs) and each database directory's
// pg_filenode.map:
//
//	RelMapFile { int32 magic (RELMAPPER_FILEMAGIC 0x592717);
//	             int32 num_mappings;
//	             RelMapping mappings[MAX_MAPPINGS] { Oid mapoid; Oid mapfilenode; };
//	             pg_crc32c crc;   (CRC-32C of all above)
//	             int32 pad; }     (10 to 15 only)
//
// MAX_MAPPINGS is 62 from 10 to 15 (512 bytes) and 64 from 16 (524 bytes,
// no pad). The XLOG_RELMAP_UPDATE record's main data is xl_relmap_update
// { Oid dbid; Oid tsid; int32 nbytes; char data[] } with data a RelMapFile.
const (
	relMapMagic       = 0x592717
	relMapSizeTo15    = 512 // 4 + 4 + 62*8 + 4 + 4
	relMapSizeFrom16  = 524 // 4 + 4 + 64*8 + 4
	maxMappingsTo15   = 62
	maxMappingsFrom16 = 64
)

// ErrRelMap wraps the errors of a relation mapper file or record.
var ErrRelMap = errors.New("bad relation map")

// Mapping is one RelMapping: a mapped catalog's oid and its relfilenode.
type Mapping struct {
	OID      uint32
	FileNode uint32
}

// RelMap is a RelMapFile.
type RelMap struct {
	Mappings []Mapping
	CRC      uint32
	// MaxMappings is MAX_MAPPINGS of the version that wrote it (62 or 64),
	// told by the file's size.
	MaxMappings int
}

// FileNode returns the relfilenode mapped for oid.
func (m *RelMap) FileNode(oid uint32) (uint32, bool) {
	if m == nil {
		return 0, false
	}
	for _, x := range m.Mappings {
		if x.OID == oid {
			return x.FileNode, true
		}
	}
	return 0, false
}

// ParseRelMap reads a pg_filenode.map file (or a RELMAP UPDATE's data),
// checking its size, magic, count and CRC as read_relmap_file does.
func ParseRelMap(b []byte) (*RelMap, error) {
	var maxm int
	switch len(b) {
	case relMapSizeTo15:
		maxm = maxMappingsTo15
	case relMapSizeFrom16:
		maxm = maxMappingsFrom16
	default:
		return nil, fmt.Errorf("relation map of %d bytes, not %d (10 to 15) or %d (16 on): %w", len(b), relMapSizeTo15, relMapSizeFrom16, ErrRelMap)
	}
	le := binary.LittleEndian
	magic, n := le.Uint32(b), int32(le.Uint32(b[4:]))
	if magic != relMapMagic {
		return nil, fmt.Errorf("relation map magic %#x, not %#x: %w", magic, relMapMagic, ErrRelMap)
	}
	if n < 0 || int(n) > maxm {
		return nil, fmt.Errorf("relation map with %d mappings (at most %d): %w", n, maxm, ErrRelMap)
	}
	crcAt := 8 + 8*maxm
	m := &RelMap{CRC: le.Uint32(b[crcAt:]), MaxMappings: maxm}
	if got := crc32.Checksum(b[:crcAt], crc32.MakeTable(crc32.Castagnoli)); got != m.CRC {
		return nil, fmt.Errorf("relation map CRC %#08x, computed %#08x: %w", m.CRC, got, ErrRelMap)
	}
	for i := 0; i < int(n); i++ {
		m.Mappings = append(m.Mappings, Mapping{OID: le.Uint32(b[8+8*i:]), FileNode: le.Uint32(b[12+8*i:])})
	}
	return m, nil
}

// RelMapUpdate is an XLOG_RELMAP_UPDATE record's main data (xl_relmap_update,
// src/include/utils/relmapper.h).
type RelMapUpdate struct {
	DBID uint32 // 0 for the shared map
	TSID uint32 // the database's tablespace, or pg_global
	Map  *RelMap
}

// ParseRelMapUpdate reads an XLOG_RELMAP_UPDATE record's main data.
func ParseRelMapUpdate(main []byte) (RelMapUpdate, error) {
	var u RelMapUpdate
	if len(main) < 12 {
		return u, fmt.Errorf("relmap update of %d bytes: %w", len(main), ErrRelMap)
	}
	le := binary.LittleEndian
	u.DBID, u.TSID = le.Uint32(main), le.Uint32(main[4:])
	nbytes := int32(le.Uint32(main[8:]))
	if nbytes < 0 || int(nbytes) != len(main)-12 {
		return u, fmt.Errorf("relmap update of database %d: nbytes %d, %d bytes follow: %w", u.DBID, nbytes, len(main)-12, ErrRelMap)
	}
	m, err := ParseRelMap(main[12:])
	if err != nil {
		return u, fmt.Errorf("relmap update of database %d: %w", u.DBID, err)
	}
	u.Map = m
	return u, nil
}
