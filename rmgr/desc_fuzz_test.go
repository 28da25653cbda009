package rmgr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// FuzzDesc describes arbitrary records of every resource manager, every
// record type and every version, the way a pg_waldump line is built: the
// record type name (AppendRecordType) and the description (AppendDesc), plus
// the structured decoders that read the same payloads. The input is
//
//	ver    the version: 10 to 18 as is, any other byte 10 + ver%9
//	rmid   the resource manager: rmid%24 (0 to 21 built in, 22 and 23 unknown)
//	info   xl_info, all 8 bits (record type and XLR_INFO_MASK bits)
//	flags  the block references and header extras (descFz* below)
//	main   the main data
//	block  block 0's data (cut to 65535 bytes)
//
// and the target lays it out as a WAL record body and decodes it with
// decode.Decoder, so the description reads a decode.Record exactly as it
// would when dumping real WAL. The seeds in testdata/fuzz/FuzzDesc are one
// real record of every (version, resource manager, record type) found in
// fixtures/ and ../shared/corpora (TestDescRealWAL writes them), and the
// malformed and truncated records the old no-panic tests fed in. The
// invariants are those of descCheck.
func FuzzDesc(f *testing.F) {
	// A few hand-made seeds; the committed corpus holds the rest.
	f.Add(uint8(18), uint8(xlog.RmgrHeap), uint8(0x00), uint8(descFzBlock0),
		descLE(uint16(3), uint8(0)), descLE(uint16(0), uint16(0), uint8(0)))
	f.Add(uint8(16), uint8(xlog.RmgrBtree), uint8(0xC0), uint8(descFzBlock0),
		descLE(uint16(3), uint16(1)), descLE(uint16(2), uint16(4)))
	f.Add(uint8(13), uint8(xlog.RmgrTransaction), uint8(0x00), uint8(0),
		descLE(int64(0)), []byte(nil))
	f.Fuzz(func(t *testing.T, ver, rmid, info, flags uint8, main, block []byte) {
		descCheck(t, descInput{ver, rmid, info, flags, main, block})
	})
}

// Bits of FuzzDesc's flags argument.
const (
	descFzBlock0 = 0x01 // block 0 is referenced (also whenever block data is given)
	descFzImage  = 0x02 // block 0 carries a full-page image (16 stored bytes and a hole)
	descFzApply  = 0x04 // the image has BKPIMAGE_APPLY
	descFzBlock1 = 0x08 // a second block reference, id 1, without data
	descFzOrigin = 0x10 // the record names replication origin descFzOriginID
	descFzXID    = 0x20 // xl_xid is descFzXIDValue (else 0)
	// Bits 6 and 7 are block 0's fork number.
	descFzForkShift = 6
)

const (
	descFzOriginID = 7
	descFzXIDValue = 1000
	descFzBlcksz   = 8192
	descFzImageLen = 16
	descFzHoleOff  = 8
)

// descInput is one FuzzDesc input.
type descInput struct {
	ver, rmid, info, flags uint8
	main, block            []byte
}

func (in descInput) version() xlog.Version {
	if in.ver >= 10 && in.ver <= 18 {
		return xlog.Version(in.ver)
	}
	return xlog.Version(10 + in.ver%9)
}

func (in descInput) rmgrID() xlog.RmgrID { return xlog.RmgrID(in.rmid % 24) }

// blockData is block 0's data as the record holds it.
func (in descInput) blockData() []byte {
	if len(in.block) > 0xFFFF {
		return in.block[:0xFFFF]
	}
	return in.block
}

// raw lays the input out as a whole WAL record, header included, in the
// order XLogRecordAssemble writes it: block headers, origin, main data
// header, then block images and data, then main data.
func (in descInput) raw() []byte {
	v := in.version()
	block := in.blockData()
	hasBlock0 := in.flags&descFzBlock0 != 0 || len(block) > 0
	hasImage := hasBlock0 && in.flags&descFzImage != 0
	b := make([]byte, xlog.RecordHeaderSize, xlog.RecordHeaderSize+64+len(block)+len(in.main))
	rel := descLE(uint32(defaultTablespaceOID), uint32(5), uint32(16384))
	if hasBlock0 {
		ff := in.flags >> descFzForkShift
		if len(block) > 0 {
			ff |= decode.BlockHasData
		}
		if hasImage {
			ff |= decode.BlockHasImage
		}
		b = append(b, 0, ff)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(block)))
		if hasImage {
			bimg := uint8(0x01) // BKPIMAGE_HAS_HOLE
			if in.flags&descFzApply != 0 {
				if v >= xlog.V15 {
					bimg |= 0x02
				} else {
					bimg |= 0x04
				}
			}
			b = binary.LittleEndian.AppendUint16(b, descFzImageLen)
			b = binary.LittleEndian.AppendUint16(b, descFzHoleOff)
			b = append(b, bimg)
		}
		b = append(b, rel...)
		b = binary.LittleEndian.AppendUint32(b, 10)
	}
	if in.flags&descFzBlock1 != 0 {
		if hasBlock0 {
			b = append(b, 1, decode.BlockSameRel, 0, 0)
		} else {
			b = append(b, 1, 0, 0, 0)
			b = append(b, rel...)
		}
		b = binary.LittleEndian.AppendUint32(b, 11)
	}
	if in.flags&descFzOrigin != 0 {
		b = append(b, 253)
		b = binary.LittleEndian.AppendUint16(b, descFzOriginID)
	}
	switch n := len(in.main); {
	case n > 255:
		b = append(b, 254)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
	case n > 0:
		b = append(b, 255, uint8(n))
	}
	if hasImage {
		b = append(b, make([]byte, descFzImageLen)...)
	}
	b = append(b, block...)
	b = append(b, in.main...)

	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	if in.flags&descFzXID != 0 {
		binary.LittleEndian.PutUint32(b[4:], descFzXIDValue)
	}
	binary.LittleEndian.PutUint64(b[8:], 0x1000000)
	b[16] = in.info
	b[17] = uint8(in.rmgrID())
	return b
}

// descDecode decodes raw as a record of version v with dec.
func descDecode(t testing.TB, dec *decode.Decoder, raw []byte, v xlog.Version) *decode.Record {
	xr := &xlog.Record{LSN: 0x1000028, EndLSN: 0x1000028 + xlog.LSN(len(raw)), Raw: raw,
		Header: xlog.ParseRecordHeader(raw), Version: v, PageSize: descFzBlcksz, SegSize: 16 << 20}
	rec, err := dec.Decode(xr)
	if err != nil {
		t.Fatalf("decoding the record the target built: %v", err)
	}
	return rec
}

// descMaxLen is the bound on a description's length for a record with n
// bytes of main and block data. Every description prints a fixed part of at
// most a few hundred bytes (CHECKPOINT and PARAMETER_CHANGE print all their
// fields even for empty data: 212 bytes at most, seen over the seeds and
// what the fuzzer found), and every part that repeats reads at least 2 bytes
// of data per repetition and prints at most ~42 characters for them. The
// worst cases, from the code: Btree's VACUUM and DELETE (16+) print
// "{ off: 65535, nptids: 65535, ptids: [] }, " per updated tuple, reading 2
// bytes of offsets and 2 of counts that overlap, at most ~10.5 characters per
// byte; freeze plans ~7.5 (90 per 12-byte plan), Gin's " 255 (delete)" 6.5,
// Generic's "offset 65535, length 0; " 6, relation paths ~5 (60 per 12
// bytes). Real WAL gives at most 8.2 characters per byte (records of 16 bytes
// or more), the fuzzer at most ~7 beyond the fixed part. descPerByte is more
// than twice the worst case, and far below what a loop driven by an
// unchecked count (up to 2^31 repetitions) or re-reading the same bytes
// prints.
func descMaxLen(n int) int { return descMaxFixed + descPerByte*n }

const (
	descMaxFixed = 512
	descPerByte  = 24
)

var descTypeName = regexp.MustCompile(`^[A-Za-z0-9_+]+$`)

// descShared is the decoder and output buffer that every check reuses, so a
// description that depended on what the decoder or the buffer held before
// would differ from the one made with fresh ones.
var descShared struct {
	sync.Mutex
	dec *decode.Decoder
	dst []byte
}

// descCheck describes in's record and checks the invariants:
//
//  1. nothing panics (AppendRecordType, AppendDesc, Name, StatsBucket and the
//     structured decoders Checkpoint, ParameterChange, EndOfRecovery,
//     XactEnd, HeapSummarize and SmgrCreate);
//  2. the description is at most descMaxLen(len(main)+len(block data));
//  3. determinism: a fresh decoder and buffer and the shared, reused ones
//     (over a copy of the record's bytes) give the same type name,
//     description and structured results, and describing leaves the
//     record's bytes as they were;
//  4. AppendDesc appends: what dst held is kept;
//  5. the description holds no NUL byte, and every byte outside printable
//     ASCII comes from the record's data (only C strings of the record,
//     such as a restore point's or a 2PC gid's, are copied);
//  6. the record type name is the manager's Identify name, which is
//     letters, digits, '_' and '+', or "UNKNOWN (%x)" of
//     info&0xF0 where Identify gives "" (never empty); the manager name
//     is the registry's; the stats bucket is 0..15;
//  7. the structured decoders accept only their own manager and record
//     types, and what XactEnd returns fits in the main data.
func descCheck(t testing.TB, in descInput) {
	v, id := in.version(), in.rmgrID()
	raw := in.raw()
	orig := bytes.Clone(raw)
	rec := descDecode(t, decode.NewDecoder(descFzBlcksz), raw, v)
	dataLen := len(in.main) + len(in.blockData())

	// 6. Names.
	typ := string(AppendRecordType(nil, v, id, in.info))
	m := Lookup(id)
	ident := ""
	if m != nil && m.Identify != nil {
		ident = m.Identify(v, in.info)
		if again := m.Identify(v, in.info); again != ident {
			t.Fatalf("Identify(%d, %#02x) gave %q, then %q", v, in.info, ident, again)
		}
	}
	switch {
	case ident != "":
		if typ != ident || !descTypeName.MatchString(ident) {
			t.Fatalf("record type %q, Identify %q", typ, ident)
		}
	case typ != fmt.Sprintf("UNKNOWN (%x)", in.info&0xF0):
		t.Fatalf("record type %q where Identify knows none", typ)
	}
	name := Name(id)
	if m != nil && name != m.Name || m == nil && name != fmt.Sprintf("custom%03d", id) || name == "" {
		t.Fatalf("Name(%d) = %q", id, name)
	}
	if b := StatsBucket(id, in.info); b > 15 {
		t.Fatalf("StatsBucket(%d, %#02x) = %d", id, in.info, b)
	}

	// 2. Bounded output; 5. no NUL, non-printable bytes only from the data.
	desc := AppendDesc(nil, rec)
	if max := descMaxLen(dataLen); len(desc) > max {
		t.Fatalf("%s %s (v%d, info %#02x): description of %d bytes for %d bytes of data (bound %d): %.300q",
			name, typ, v, in.info, len(desc), dataLen, max, desc)
	}
	var inData [256]bool
	for _, c := range in.main {
		inData[c] = true
	}
	for _, c := range in.blockData() {
		inData[c] = true
	}
	for i, c := range desc {
		if c == 0 || (c < 0x20 || c > 0x7E) && !inData[c] {
			t.Fatalf("%s %s (v%d): byte %#02x at %d of the description, not from the data: %.300q",
				name, typ, v, c, i, desc)
		}
	}
	st := descStructured(t, rec, len(in.main))

	// 3. Determinism, with the shared decoder and buffer; 4. append.
	descShared.Lock()
	defer descShared.Unlock()
	if descShared.dec == nil {
		descShared.dec = decode.NewDecoder(descFzBlcksz)
	}
	raw2 := bytes.Clone(raw)
	rec2 := descDecode(t, descShared.dec, raw2, v)
	prefix := "rmgr: " + name + " desc: " + typ + " "
	dst := append(descShared.dst[:0], prefix...)
	dst = AppendDesc(dst, rec2)
	descShared.dst = dst
	if string(dst[:len(prefix)]) != prefix {
		t.Fatalf("AppendDesc changed dst's contents: %q", dst[:len(prefix)])
	}
	if got := dst[len(prefix):]; !bytes.Equal(got, desc) {
		t.Fatalf("%s %s (v%d): described twice:\n%q\n%q", name, typ, v, desc, got)
	}
	if typ2 := AppendRecordType(dst[:0], v, id, in.info); string(typ2) != typ {
		t.Fatalf("record type %q, then %q", typ, typ2)
	}
	if st2 := descStructured(t, rec2, len(in.main)); !reflect.DeepEqual(st, st2) {
		t.Fatalf("structured decoders gave\n%+v\nthen\n%+v", st, st2)
	}
	if !bytes.Equal(raw, orig) || !bytes.Equal(raw2, orig) {
		t.Fatalf("describing changed the record's bytes")
	}
}

// descStructuredResults are the structured decoders' results for one record.
type descStructuredResults struct {
	Checkpoint      CheckpointInfo
	CheckpointOK    bool
	Param           ParameterChangeInfo
	ParamOK         bool
	EndOfRecovery   EndOfRecoveryInfo
	EndOfRecoveryOK bool
	Xact            XactEndInfo
	XactOK          bool
	Heap            HeapSummary
	HeapOK          bool
	Rel             decode.RelFileLocator
	Fork            decode.ForkNumber
	SmgrOK          bool
	RestorePoint    string
	RestorePointAt  time.Time
	RestorePointOK  bool
	BackupStart     xlog.LSN
	BackupEndOK     bool
	FPW, FPWOK      bool
	Switch          bool
	Truncated       decode.RelFileLocator
	TruncBlocks     uint32
	TruncateOK      bool
}

// descStructured runs the structured decoders over rec and checks that each
// accepts only its own records (invariant 7).
func descStructured(t testing.TB, rec *decode.Record, mainLen int) descStructuredResults {
	var r descStructuredResults
	r.Checkpoint, r.CheckpointOK = Checkpoint(rec)
	r.Param, r.ParamOK = ParameterChange(rec)
	r.EndOfRecovery, r.EndOfRecoveryOK = EndOfRecovery(rec)
	r.Xact, r.XactOK = XactEnd(rec)
	r.Heap, r.HeapOK = HeapSummarize(rec)
	r.Rel, r.Fork, r.SmgrOK = SmgrCreate(rec)
	r.RestorePoint, r.RestorePointAt, r.RestorePointOK = RestorePoint(rec)
	r.BackupStart, r.BackupEndOK = BackupEnd(rec)
	r.FPW, r.FPWOK = FPWChange(rec)
	r.Switch = IsWALSwitch(rec)
	r.Truncated, r.TruncBlocks, r.TruncateOK = SmgrTruncate(rec)

	id, op := rec.Header.Rmid, rec.Header.Info&0xF0
	if r.CheckpointOK && (id != xlog.RmgrXLOG || op != xlogCheckpointShutdown && op != xlogCheckpointOnline) {
		t.Fatalf("Checkpoint accepted rmgr %d info %#02x", id, rec.Header.Info)
	}
	if r.ParamOK && (id != xlog.RmgrXLOG || op != xlogParameterChange) {
		t.Fatalf("ParameterChange accepted rmgr %d info %#02x", id, rec.Header.Info)
	}
	if r.EndOfRecoveryOK && (id != xlog.RmgrXLOG || op != xlogEndOfRecovery) {
		t.Fatalf("EndOfRecovery accepted rmgr %d info %#02x", id, rec.Header.Info)
	}
	if r.HeapOK != (id == xlog.RmgrHeap || id == xlog.RmgrHeap2) {
		t.Fatalf("HeapSummarize ok %v for rmgr %d", r.HeapOK, id)
	}
	if r.SmgrOK && (id != xlog.RmgrStorage || op != smgrCreate || mainLen < 16) {
		t.Fatalf("SmgrCreate accepted rmgr %d info %#02x with %d bytes", id, rec.Header.Info, mainLen)
	}
	if r.RestorePointOK && (id != xlog.RmgrXLOG || op != xlogRestorePoint || len(r.RestorePoint) > 64 || strings.IndexByte(r.RestorePoint, 0) >= 0) {
		t.Fatalf("RestorePoint accepted rmgr %d info %#02x, name %q", id, rec.Header.Info, r.RestorePoint)
	}
	if r.BackupEndOK && (id != xlog.RmgrXLOG || op != xlogBackupEnd || mainLen < 8) {
		t.Fatalf("BackupEnd accepted rmgr %d info %#02x with %d bytes", id, rec.Header.Info, mainLen)
	}
	if r.FPWOK && (id != xlog.RmgrXLOG || op != xlogFPWChange) {
		t.Fatalf("FPWChange accepted rmgr %d info %#02x", id, rec.Header.Info)
	}
	if r.Switch && (id != xlog.RmgrXLOG || op != xlogSwitch) {
		t.Fatalf("IsWALSwitch accepted rmgr %d info %#02x", id, rec.Header.Info)
	}
	if r.TruncateOK && (id != xlog.RmgrStorage || op != smgrTruncate || mainLen < 20) {
		t.Fatalf("SmgrTruncate accepted rmgr %d info %#02x with %d bytes", id, rec.Header.Info, mainLen)
	}
	if r.XactOK {
		x := &r.Xact
		if id != xlog.RmgrTransaction {
			t.Fatalf("XactEnd accepted rmgr %d", id)
		}
		if n := 4*len(x.Subxacts) + xactRelSize*len(x.DroppedRels) + 12*len(x.DroppedStats); n > mainLen {
			t.Fatalf("XactEnd found %d subxacts, %d rels and %d stats in %d bytes",
				len(x.Subxacts), len(x.DroppedRels), len(x.DroppedStats), mainLen)
		}
		if len(x.GID) >= xactGIDSize || bytes.IndexByte([]byte(x.GID), 0) >= 0 {
			t.Fatalf("XactEnd gid %q", x.GID)
		}
		if op := rec.Header.Info & xactOpMask; op != xactCommit && op != xactCommitPrepared && op != xactAbort && op != xactAbortPrepared {
			t.Fatalf("XactEnd accepted info %#02x", rec.Header.Info)
		}
		// Aborts carry no invalidation messages.
		if x.Invalidations < 0 || !x.Commit && x.Invalidations != 0 {
			t.Fatalf("XactEnd: %d invalidations for info %#02x", x.Invalidations, rec.Header.Info)
		}
	}
	return r
}

// descLE lays out C struct fields little-endian, in order.
func descLE(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch x := f.(type) {
		case uint8:
			b = append(b, x)
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, x)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, x)
		case int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		case string:
			b = append(b, x...)
		case []byte:
			b = append(b, x...)
		default:
			panic(fmt.Sprintf("descLE: %T", f))
		}
	}
	return b
}

// descFakeTB records descCheck's first failure and stops the check there.
type descFakeTB struct {
	testing.TB
	failed string
}

func (f *descFakeTB) Helper() {}

func (f *descFakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestDescCheckCatches swaps broken managers into the registry and checks
// that descCheck, FuzzDesc's body, fails on each: the invariants are not
// vacuous.
func TestDescCheckCatches(t *testing.T) {
	calls := 0
	for _, c := range []struct {
		name string
		m    Manager
		want string
	}{
		{"runaway loop", Manager{Desc: func(dst []byte, rec *decode.Record) []byte {
			for range 256 + len(rec.MainData)*descPerByte {
				dst = append(dst, "x, "...)
			}
			return dst
		}}, "bound"},
		{"state kept between calls", Manager{Desc: func(dst []byte, _ *decode.Record) []byte {
			calls++
			return appendInt(dst, int64(calls))
		}}, "described twice"},
		{"NUL", Manager{Desc: func(dst []byte, _ *decode.Record) []byte { return append(dst, "a\x00b"...) }}, "not from the data"},
		{"dst overwritten", Manager{Desc: func(dst []byte, _ *decode.Record) []byte { return append(dst[:0], "x"...) }}, "changed dst"},
		{"data changed", Manager{Desc: func(dst []byte, rec *decode.Record) []byte {
			rec.MainData[0]++
			return dst
		}}, "changed the record"},
		{"empty type name", Manager{Identify: func(xlog.Version, uint8) string { return "bad name" }}, "record type"},
	} {
		saved := builtin[xlog.RmgrSequence]
		m := c.m
		m.ID, m.Name = xlog.RmgrSequence, "Sequence"
		builtin[xlog.RmgrSequence] = &m
		f := &descFakeTB{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			descCheck(f, descInput{18, uint8(xlog.RmgrSequence), 0, 0, []byte("data"), nil})
		}()
		<-done
		builtin[xlog.RmgrSequence] = saved
		if !strings.Contains(f.failed, c.want) {
			t.Errorf("%s: descCheck failed with %q, want a failure about %q", c.name, f.failed, c.want)
		}
	}
}
