package xlog

import (
	"encoding/binary"
	"hash/crc32"
)

// RecordHeaderSize is SizeOfXLogRecord.
const RecordHeaderSize = 24

// MaxRecordSize is XLogRecordMaxSize of PostgreSQL 16 and later (1020 MB); the
// reader refuses longer records unless Options.MaxRecordSize says otherwise.
const MaxRecordSize = 1020 * 1024 * 1024

// Generic xl_info bits (src/include/access/xlogrecord.h).
const (
	InfoMask              = 0x0F // XLR_INFO_MASK
	RmgrInfoMask          = 0xF0 // XLR_RMGR_INFO_MASK
	InfoSpecialRelUpdate  = 0x01 // XLR_SPECIAL_REL_UPDATE
	InfoCheckConsistency  = 0x02 // XLR_CHECK_CONSISTENCY
	xlogSwitch            = 0x40 // XLOG_SWITCH (src/include/catalog/pg_control.h)
	xlogOverwriteContrRec = 0xD0 // XLOG_OVERWRITE_CONTRECORD
)

// RecordHeader is XLogRecord (src/include/access/xlogrecord.h).
type RecordHeader struct {
	TotLen uint32
	XID    XID
	Prev   LSN
	Info   uint8
	Rmid   RmgrID
	CRC    uint32
}

// ParseRecordHeader decodes the first RecordHeaderSize bytes of b.
func ParseRecordHeader(b []byte) RecordHeader {
	p := (*[RecordHeaderSize]byte)(b)
	return RecordHeader{
		TotLen: binary.LittleEndian.Uint32(p[0:4]),
		XID:    XID(binary.LittleEndian.Uint32(p[4:8])),
		Prev:   LSN(binary.LittleEndian.Uint64(p[8:16])),
		Info:   p[16],
		Rmid:   RmgrID(p[17]),
		CRC:    binary.LittleEndian.Uint32(p[20:24]),
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RecordCRC computes a record's CRC-32C the way PostgreSQL does: first the
// bytes after the header, then the header up to xl_crc (ValidXLogRecord in
// src/backend/access/transam/xlogreader.c).
func RecordCRC(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[RecordHeaderSize:])
	return crc32.Update(c, castagnoli, rec[:20])
}

// Record is one WAL record as read from the stream. The Reader owns it: it and
// Raw are valid only until the next call to Next.
type Record struct {
	LSN    LSN // start of the record (ReadRecPtr)
	EndLSN LSN // where the next record starts (EndRecPtr)
	Header RecordHeader
	Raw    []byte // the whole record, xl_tot_len bytes, header included (see Options.HeadersOnly)

	TLI      TimeLineID // timeline of the segment file the record starts in
	Version  Version
	PageSize uint32
	SegSize  uint32
	// Segment is the path of the file the record starts in.
	Segment string
	// Aborted is, when not InvalidLSN, the start of a record whose continuation
	// was lost and overwritten (XLP_FIRST_IS_OVERWRITE_CONTRECORD) just before
	// this record: the reader dropped it, as xlogreader does.
	Aborted LSN
	// PrevRead is the start of the record read before this one in the
	// stream (xlogreader's ReadRecPtr while it decodes this record, which
	// decoding errors name): InvalidLSN for the first record a reading
	// returns, unless Options.Continues says the reading goes on from one
	// that ended at Options.Start.
	PrevRead LSN
}

// Type returns the record-type bits of xl_info.
func (r *Record) Type() uint8 { return r.Header.Info & RmgrInfoMask }
