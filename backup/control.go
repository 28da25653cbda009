package backup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/walscope/walscope/xlog"
)

// ControlFile is global/pg_control: ControlFileData of
// src/include/catalog/pg_control.h, read for each pg_control_version of
// PostgreSQL 10 to 18 (1002, 1100, 1201, 1300 for 13 to 16, 1700, 1800).
type ControlFile struct {
	SystemID       uint64 // system_identifier
	ControlVersion uint32 // pg_control_version
	CatalogVersion uint32 // catalog_version_no
	State          DBState
	Time           time.Time // time of the last update of pg_control
	Checkpoint     xlog.LSN  // checkPoint: the last checkpoint record
	PrevCheckpoint xlog.LSN  // prevCheckPoint (PostgreSQL 10 only)
	CheckPointCopy CheckPoint
	UnloggedLSN    xlog.LSN

	MinRecoveryPoint    xlog.LSN
	MinRecoveryPointTLI xlog.TimeLineID
	BackupStartPoint    xlog.LSN
	BackupEndPoint      xlog.LSN
	BackupEndRequired   bool

	WALLevel             WALLevel
	WALLogHints          bool
	MaxConnections       int32
	MaxWorkerProcesses   int32
	MaxWALSenders        int32 // 12+ (0 before)
	MaxPreparedXacts     int32
	MaxLocksPerXact      int32
	TrackCommitTimestamp bool

	MaxAlign          uint32
	FloatFormat       float64 // 1234567.0 on a readable file
	BlockSize         uint32  // blcksz (BLCKSZ)
	RelSegSize        uint32  // relseg_size: blocks per segment file of a relation
	XLogBlockSize     uint32  // xlog_blcksz
	XLogSegSize       uint32  // xlog_seg_size
	NameDataLen       uint32
	IndexMaxKeys      uint32
	ToastMaxChunkSize uint32
	LOBlockSize       uint32 // loblksize

	Float4ByVal           bool // 10-12 only
	Float8ByVal           bool
	DataChecksumVersion   uint32 // 0: data checksums off
	DefaultCharSignedness bool   // 18+
	MockAuthNonce         [32]byte
	CRC                   uint32 // checked against the bytes before it
}

// CheckPoint is the checkpoint record's body as pg_control keeps a copy of
// it: CheckPoint of pg_control.h.
type CheckPoint struct {
	Redo              xlog.LSN
	ThisTimeLineID    xlog.TimeLineID
	PrevTimeLineID    xlog.TimeLineID
	FullPageWrites    bool
	WALLevel          WALLevel // 17+ (0 before)
	NextXID           uint64   // epoch<<32 | xid (nextXid, nextXidEpoch before 12)
	NextOID           uint32
	NextMulti         uint32
	NextMultiOffset   uint32
	OldestXID         uint32
	OldestXIDDB       uint32
	OldestMulti       uint32
	OldestMultiDB     uint32
	Time              time.Time
	OldestCommitTsXID uint32
	NewestCommitTsXID uint32
	OldestActiveXID   uint32
}

// DBState is pg_control's DBState.
type DBState uint32

// DBState values (pg_control.h, the same in 10 to 18).
const (
	DBStartup DBState = iota
	DBShutdowned
	DBShutdownedInRecovery
	DBShutdowning
	DBInCrashRecovery
	DBInArchiveRecovery
	DBInProduction
)

// String is pg_controldata's wording (dbState in pg_controldata.c).
func (s DBState) String() string {
	switch s {
	case DBStartup:
		return "starting up"
	case DBShutdowned:
		return "shut down"
	case DBShutdownedInRecovery:
		return "shut down in recovery"
	case DBShutdowning:
		return "shutting down"
	case DBInCrashRecovery:
		return "in crash recovery"
	case DBInArchiveRecovery:
		return "in archive recovery"
	case DBInProduction:
		return "in production"
	}
	return "unrecognized status code"
}

// WALLevel is the wal_level enum (src/include/access/xlog.h).
type WALLevel int32

// WALLevel values.
const (
	WALLevelMinimal WALLevel = iota
	WALLevelReplica
	WALLevelLogical
)

// String is pg_controldata's wording (wal_level_str in xlogdesc.c).
func (l WALLevel) String() string {
	switch l {
	case WALLevelMinimal:
		return "minimal"
	case WALLevelReplica:
		return "replica"
	case WALLevelLogical:
		return "logical"
	}
	return "unrecognized wal_level"
}

// cField is one member of a C struct: its size and alignment on the 64-bit
// platforms PostgreSQL is built for (int64, double and structs holding them
// aligned on 8).
type cField struct {
	name        string
	size, align int
}

func u8f(n string) cField  { return cField{n, 1, 1} }
func u32f(n string) cField { return cField{n, 4, 4} }
func u64f(n string) cField { return cField{n, 8, 8} }
func nested(n string, size int) cField {
	return cField{n, size, 8}
}

// cLayout places fields as a C compiler does and returns each one's offset
// and the struct's size.
func cLayout(fields []cField) (map[string]int, int) {
	off := map[string]int{}
	pos, maxAlign := 0, 1
	for _, f := range fields {
		pos = (pos + f.align - 1) / f.align * f.align
		off[f.name] = pos
		pos += f.size
		maxAlign = max(maxAlign, f.align)
	}
	return off, (pos + maxAlign - 1) / maxAlign * maxAlign
}

// checkPointFields is CheckPoint for pg_control_version cv.
func checkPointFields(cv uint32) []cField {
	f := []cField{u64f("redo"), u32f("ThisTimeLineID"), u32f("PrevTimeLineID"), u8f("fullPageWrites")}
	if cv >= 1700 {
		f = append(f, u32f("wal_level"))
	}
	if cv >= 1201 {
		f = append(f, u64f("nextXid")) // FullTransactionId
	} else {
		f = append(f, u32f("nextXidEpoch"), u32f("nextXid"))
	}
	return append(f, u32f("nextOid"), u32f("nextMulti"), u32f("nextMultiOffset"),
		u32f("oldestXid"), u32f("oldestXidDB"), u32f("oldestMulti"), u32f("oldestMultiDB"),
		u64f("time"), u32f("oldestCommitTsXid"), u32f("newestCommitTsXid"), u32f("oldestActiveXid"))
}

// controlFields is ControlFileData for pg_control_version cv, checkpoint
// the size of its CheckPoint.
func controlFields(cv uint32, checkpoint int) []cField {
	f := []cField{u64f("system_identifier"), u32f("pg_control_version"), u32f("catalog_version_no"),
		u32f("state"), u64f("time"), u64f("checkPoint")}
	if cv < 1100 {
		f = append(f, u64f("prevCheckPoint"))
	}
	f = append(f, nested("checkPointCopy", checkpoint), u64f("unloggedLSN"),
		u64f("minRecoveryPoint"), u32f("minRecoveryPointTLI"), u64f("backupStartPoint"), u64f("backupEndPoint"),
		u8f("backupEndRequired"), u32f("wal_level"), u8f("wal_log_hints"), u32f("MaxConnections"),
		u32f("max_worker_processes"))
	if cv >= 1201 {
		f = append(f, u32f("max_wal_senders"))
	}
	f = append(f, u32f("max_prepared_xacts"), u32f("max_locks_per_xact"), u8f("track_commit_timestamp"),
		u32f("maxAlign"), u64f("floatFormat"), u32f("blcksz"), u32f("relseg_size"), u32f("xlog_blcksz"),
		u32f("xlog_seg_size"), u32f("nameDataLen"), u32f("indexMaxKeys"), u32f("toast_max_chunk_size"),
		u32f("loblksize"))
	if cv < 1300 {
		f = append(f, u8f("float4ByVal"))
	}
	f = append(f, u8f("float8ByVal"), u32f("data_checksum_version"))
	if cv >= 1800 {
		f = append(f, u8f("default_char_signedness"))
	}
	return append(f, cField{"mock_authentication_nonce", 32, 1}, u32f("crc"))
}

// knownControlVersion: the pg_control_version of each PostgreSQL 10 to 18.
func knownControlVersion(cv uint32) bool {
	switch cv {
	case 1002, 1100, 1201, 1300, 1700, 1800:
		return true
	}
	return false
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ParseControlFile reads the bytes of a global/pg_control file (8192 bytes,
// PG_CONTROL_FILE_SIZE; at least the struct is needed) and checks its CRC.
// Errors wrap ErrDamaged (short, CRC mismatch) or ErrUnsupported (a
// pg_control_version other than 10 to 18's).
func ParseControlFile(b []byte) (*ControlFile, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: pg_control is %d bytes", ErrDamaged, len(b))
	}
	le := binary.LittleEndian
	cv := le.Uint32(b[8:])
	if !knownControlVersion(cv) {
		if bs := binary.BigEndian.Uint32(b[8:]); knownControlVersion(bs) {
			return nil, fmt.Errorf("%w: pg_control_version %d big-endian", ErrUnsupported, bs)
		}
		return nil, fmt.Errorf("%w: pg_control_version %d (not PostgreSQL 10 to 18's)", ErrUnsupported, cv)
	}
	cpOff, cpSize := cLayout(checkPointFields(cv))
	off, _ := cLayout(controlFields(cv, cpSize))
	crcAt := off["crc"]
	if len(b) < crcAt+4 {
		return nil, fmt.Errorf("%w: pg_control is %d bytes, pg_control_version %d needs %d", ErrDamaged, len(b), cv, crcAt+4)
	}
	c := &ControlFile{ControlVersion: cv}
	c.CRC = le.Uint32(b[crcAt:])
	if got := crc32.Checksum(b[:crcAt], crc32c); got != c.CRC {
		return nil, fmt.Errorf("%w: pg_control CRC is %08X, computed %08X", ErrDamaged, c.CRC, got)
	}
	u32 := func(n string) uint32 { return le.Uint32(b[off[n]:]) }
	u64 := func(n string) uint64 { return le.Uint64(b[off[n]:]) }
	bl := func(n string) bool { return b[off[n]] != 0 }
	c.SystemID = u64("system_identifier")
	c.CatalogVersion = u32("catalog_version_no")
	c.State = DBState(u32("state"))
	c.Time = time.Unix(int64(u64("time")), 0).UTC()
	c.Checkpoint = xlog.LSN(u64("checkPoint"))
	if cv < 1100 {
		c.PrevCheckpoint = xlog.LSN(u64("prevCheckPoint"))
	}
	cp := b[off["checkPointCopy"]:]
	cu32 := func(n string) uint32 { return le.Uint32(cp[cpOff[n]:]) }
	cu64 := func(n string) uint64 { return le.Uint64(cp[cpOff[n]:]) }
	k := &c.CheckPointCopy
	k.Redo = xlog.LSN(cu64("redo"))
	k.ThisTimeLineID = xlog.TimeLineID(cu32("ThisTimeLineID"))
	k.PrevTimeLineID = xlog.TimeLineID(cu32("PrevTimeLineID"))
	k.FullPageWrites = cp[cpOff["fullPageWrites"]] != 0
	if cv >= 1700 {
		k.WALLevel = WALLevel(int32(cu32("wal_level")))
	}
	if cv >= 1201 {
		k.NextXID = cu64("nextXid")
	} else {
		k.NextXID = uint64(cu32("nextXidEpoch"))<<32 | uint64(cu32("nextXid"))
	}
	k.NextOID = cu32("nextOid")
	k.NextMulti = cu32("nextMulti")
	k.NextMultiOffset = cu32("nextMultiOffset")
	k.OldestXID = cu32("oldestXid")
	k.OldestXIDDB = cu32("oldestXidDB")
	k.OldestMulti = cu32("oldestMulti")
	k.OldestMultiDB = cu32("oldestMultiDB")
	k.Time = time.Unix(int64(cu64("time")), 0).UTC()
	k.OldestCommitTsXID = cu32("oldestCommitTsXid")
	k.NewestCommitTsXID = cu32("newestCommitTsXid")
	k.OldestActiveXID = cu32("oldestActiveXid")

	c.UnloggedLSN = xlog.LSN(u64("unloggedLSN"))
	c.MinRecoveryPoint = xlog.LSN(u64("minRecoveryPoint"))
	c.MinRecoveryPointTLI = xlog.TimeLineID(u32("minRecoveryPointTLI"))
	c.BackupStartPoint = xlog.LSN(u64("backupStartPoint"))
	c.BackupEndPoint = xlog.LSN(u64("backupEndPoint"))
	c.BackupEndRequired = bl("backupEndRequired")
	c.WALLevel = WALLevel(int32(u32("wal_level")))
	c.WALLogHints = bl("wal_log_hints")
	c.MaxConnections = int32(u32("MaxConnections"))
	c.MaxWorkerProcesses = int32(u32("max_worker_processes"))
	if cv >= 1201 {
		c.MaxWALSenders = int32(u32("max_wal_senders"))
	}
	c.MaxPreparedXacts = int32(u32("max_prepared_xacts"))
	c.MaxLocksPerXact = int32(u32("max_locks_per_xact"))
	c.TrackCommitTimestamp = bl("track_commit_timestamp")
	c.MaxAlign = u32("maxAlign")
	c.FloatFormat = math.Float64frombits(u64("floatFormat"))
	c.BlockSize = u32("blcksz")
	c.RelSegSize = u32("relseg_size")
	c.XLogBlockSize = u32("xlog_blcksz")
	c.XLogSegSize = u32("xlog_seg_size")
	c.NameDataLen = u32("nameDataLen")
	c.IndexMaxKeys = u32("indexMaxKeys")
	c.ToastMaxChunkSize = u32("toast_max_chunk_size")
	c.LOBlockSize = u32("loblksize")
	if cv < 1300 {
		c.Float4ByVal = bl("float4ByVal")
	}
	c.Float8ByVal = bl("float8ByVal")
	c.DataChecksumVersion = u32("data_checksum_version")
	if cv >= 1800 {
		c.DefaultCharSignedness = bl("default_char_signedness")
	}
	copy(c.MockAuthNonce[:], b[off["mock_authentication_nonce"]:])
	// what the blocks of this package rely on must be sane even under a
	// matching CRC (a file made by hand)
	if c.BlockSize < 1024 || c.BlockSize > 32768 || c.BlockSize&(c.BlockSize-1) != 0 {
		return nil, fmt.Errorf("%w: pg_control blcksz %d", ErrDamaged, c.BlockSize)
	}
	if c.RelSegSize == 0 {
		return nil, fmt.Errorf("%w: pg_control relseg_size 0", ErrDamaged)
	}
	return c, nil
}

// MajorVersion is the PostgreSQL major version that writes this
// pg_control_version and catalog version (13 to 16 share 1300: the catalog
// version tells them apart).
func (c *ControlFile) MajorVersion() int {
	switch c.ControlVersion {
	case 1002:
		return 10
	case 1100:
		return 11
	case 1201:
		return 12
	case 1700:
		return 17
	case 1800:
		return 18
	}
	// a catalog version above the last release's final one belongs to the
	// next release's development cycle (betas included)
	switch {
	case c.CatalogVersion > 202307071: // 16.0's
		return 17
	case c.CatalogVersion > 202209061: // 15.0's
		return 16
	case c.CatalogVersion > 202107181: // 14.0's
		return 15
	case c.CatalogVersion > 202007201: // 13.0's
		return 14
	}
	return 13
}
