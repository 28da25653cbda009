package xactstate

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/walscope/walscope/xlog"
)

// Prepared transactions (src/backend/access/transam/twophase.c). A PREPARE
// record's main data is the 2PC state a pg_twophase file holds, without the
// file's trailing CRC-32C:
//
//	TwoPhaseFileHeader (xl_xact_prepare, xact.h), MAXALIGNed
//	GID (gidlen bytes, NUL included), MAXALIGNed
//	TransactionId[nsubxacts], MAXALIGNed
//	... (relations, stats, invalidations, rmgr records)
//	pg_crc32c over everything before it (files only)
//
// xl_xact_prepare: magic u32 @0, total_len u32 @4 (the file's length, CRC
// included), xid u32 @8, database @12, prepared_at i64 @16, owner @24,
// nsubxacts i32 @28, ncommitrels @32, nabortrels @36, then in 15+
// ncommitstats @40 and nabortstats @44, ninvalmsgs, initfileinval (bool),
// gidlen u16, and from 11 origin_lsn and origin_timestamp. Per version
// (TwoPhaseFileHeader in twophase.c before 13, xl_xact_prepare in xact.h
// from 13; checked against the pg_twophase files of real servers 10 to 18):
//
//	10     magic 0x57F94533, 48 bytes, gidlen @46 (no origin fields)
//	11-14  magic 0x57F94534, 64 bytes, gidlen @46
//	15-18  magic 0x57F94534, 72 bytes, gidlen @54
//
// File names: "%08X" of the xid up to 17, "%08X%08X" of the epoch and xid
// (a FullTransactionId) in 18 (TwoPhaseFilePath); both are accepted in any
// version.
const (
	twoPhaseMagic10 = 0x57F94533 // TWOPHASE_MAGIC of 10's twophase.c
	twoPhaseMagic   = 0x57F94534 // TWOPHASE_MAGIC from 11 (origin_lsn and origin_timestamp added)
)

// twoPhaseHeader is the magic of a 2PC state in version v, its header's
// size (sizeof(TwoPhaseFileHeader)) and the offset of its gidlen.
func twoPhaseHeader(v xlog.Version) (magic uint32, size, gidlenAt int) {
	switch {
	case v >= xlog.V15:
		return twoPhaseMagic, 72, 54
	case v >= xlog.V11:
		return twoPhaseMagic, 64, 46
	}
	return twoPhaseMagic10, 48, 46
}

// preparedXact is what a prepared transaction's state tells the commit
// state: its xid, its subtransactions and its GID.
type preparedXact struct {
	XID      xlog.XID
	Subxacts []xlog.XID
	GID      string
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parseTwoPhaseFile reads a pg_twophase file as ReadTwoPhaseFile and
// ProcessTwoPhaseBuffer check it: its size, magic, total_len equal to the
// file's size, and the CRC-32C of everything before the last four bytes.
func parseTwoPhaseFile(v xlog.Version, data []byte) (preparedXact, error) {
	_, hdr, _ := twoPhaseHeader(v)
	// MAXALIGN(header) + MAXALIGN(TwoPhaseRecordOnDisk) + CRC at least.
	if len(data) < hdr+8+4 {
		return preparedXact{}, fmt.Errorf("%w: a 2PC state file of %d bytes is too short", ErrCorrupt, len(data))
	}
	body := data[:len(data)-4]
	want := binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return preparedXact{}, fmt.Errorf("%w: 2PC state file CRC-32C %08X, stored %08X", ErrCorrupt, got, want)
	}
	if tl := binary.LittleEndian.Uint32(data[4:]); int64(tl) != int64(len(data)) {
		return preparedXact{}, fmt.Errorf("%w: 2PC state total_len %d, the file has %d bytes", ErrCorrupt, tl, len(data))
	}
	return parseTwoPhaseState(v, body)
}

// parseTwoPhaseState reads the header, GID and subtransactions of a 2PC
// state (a PREPARE record's main data, or a file without its CRC).
func parseTwoPhaseState(v xlog.Version, data []byte) (preparedXact, error) {
	magic, hdr, gidlenAt := twoPhaseHeader(v)
	if len(data) < hdr {
		return preparedXact{}, fmt.Errorf("%w: a 2PC state of %d bytes is shorter than its %d-byte header", ErrCorrupt, len(data), hdr)
	}
	if m := binary.LittleEndian.Uint32(data); m != magic {
		return preparedXact{}, fmt.Errorf("%w: 2PC state magic %08X, want %08X (%v)", ErrCorrupt, m, magic, v)
	}
	p := preparedXact{XID: xlog.XID(binary.LittleEndian.Uint32(data[8:]))}
	nsub := int32(binary.LittleEndian.Uint32(data[28:]))
	gidlen := int(binary.LittleEndian.Uint16(data[gidlenAt:]))
	off := hdr
	if gidlen > len(data)-off {
		return preparedXact{}, fmt.Errorf("%w: 2PC state GID of %d bytes runs past its end", ErrCorrupt, gidlen)
	}
	gid := data[off : off+gidlen]
	for i, c := range gid {
		if c == 0 {
			gid = gid[:i]
			break
		}
	}
	p.GID = string(gid)
	off += xlog.Maxalign(gidlen)
	if nsub < 0 || int64(nsub)*4 > int64(len(data)-min(off, len(data))) {
		return preparedXact{}, fmt.Errorf("%w: 2PC state announces %d subtransactions in %d bytes", ErrCorrupt, nsub, len(data)-min(off, len(data)))
	}
	if nsub > 0 {
		p.Subxacts = make([]xlog.XID, nsub)
		for i := range p.Subxacts {
			p.Subxacts[i] = xlog.XID(binary.LittleEndian.Uint32(data[off+4*i:]))
		}
	}
	return p, nil
}

// twoPhaseFileXID returns the xid a pg_twophase file name gives: 8 hex
// digits (10-17) or 16 (18: epoch and xid).
func twoPhaseFileXID(name string) (xlog.XID, bool) {
	if len(name) != 8 && len(name) != 16 {
		return 0, false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return 0, false
		}
	}
	x, err := strconv.ParseUint(name[len(name)-8:], 16, 32)
	if err != nil {
		return 0, false
	}
	return xlog.XID(x), true
}
