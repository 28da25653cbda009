package xactstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Status is a transaction's outcome as of the records added so far.
type Status uint8

// Transaction statuses.
const (
	// InProgress: neither committed nor aborted by the records added so far
	// (nor in the backup's pg_xact), and not prepared. Only before Finish:
	// recovery ending at the target aborts such transactions.
	InProgress Status = iota
	Committed
	Aborted
	// Prepared: PREPARE TRANSACTION'd and neither COMMIT PREPARED nor
	// ROLLBACK PREPARED; it stays prepared (and invisible) after Finish.
	Prepared
)

func (s Status) String() string {
	switch s {
	case InProgress:
		return "in progress"
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	case Prepared:
		return "prepared"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Special transaction ids (src/include/access/transam.h).
const (
	invalidXID   = 0 // InvalidTransactionId
	bootstrapXID = 1 // BootstrapTransactionId
	frozenXID    = 2 // FrozenTransactionId
)

// xidPrecedes is TransactionIdPrecedes for normal xids: modulo-2^32.
func xidPrecedes(a, b uint32) bool { return int32(a-b) < 0 }

// State is the commit state of every transaction as recovery leaves it at
// a target: the backup's pg_xact, pg_subtrans, pg_multixact and pg_twophase
// (read lazily, a few segments at a time) advanced by the WAL's records. It
// holds in memory only what the WAL changed: the outcome, commit LSN and
// time of each transaction the WAL ends, parents, multixacts created and
// the SLRU pages zeroed. It mirrors the redo routines xact_redo
// (xact.c), clog_redo (clog.c), multixact_redo (multixact.c) and
// PrepareRedoAdd/PrepareRedoRemove (twophase.c).
//
// A State is not safe for concurrent use.
type State struct {
	v     xlog.Version
	geo   geometry
	files Files

	xact, subtrans, offsets, members *slru

	chunks   map[uint32]*xactChunk // outcomes the WAL gave, by xid / chunkSize
	parents  map[xlog.XID]xlog.XID // subtransaction -> its parent
	prepared map[xlog.XID]xlog.XID // xid (top or sub) of a prepared transaction -> its top
	multis   map[MultiXactID]multiEntry
	// twoPhaseRead: pg_twophase was read into prepared (NewDeferred
	// reads it when first needed)
	twoPhaseRead bool

	// From the first checkpoint record: pg_subtrans is only trusted below
	// its oldestActiveXid (StartupSUBTRANS zeroes the rest).
	haveCheckpoint bool
	oldestActive   xlog.XID
	// oldestClog is ShmemVariableCache->oldestClogXid: the first
	// checkpoint's oldestXid, advanced by CLOG TRUNCATE records.
	haveOldestClog bool
	oldestClog     xlog.XID

	// nextMulti and nextOffset: MultiXactState's, from the checkpoints and
	// CREATE_ID records (the end of the newest multixact's members).
	haveNextMulti bool
	nextMulti     MultiXactID
	nextOffset    uint32
	// oldestMulti is the oldest multixact after a TRUNCATE_ID record.
	haveOldestMulti bool
	oldestMulti     MultiXactID

	finished bool
	err      error

	// assumed are xids Status answers Committed for (AssumeCommitted).
	assumed map[xlog.XID]bool
}

// chunkSize is how many consecutive xids one xactChunk covers.
const chunkSize = 1024

// xactChunk holds the outcomes the WAL gave to chunkSize consecutive xids:
// dense, since a WAL's transactions are consecutive ids (17 bytes each,
// against some 50 in a map).
type xactChunk struct {
	state [chunkSize]uint8    // walNone, walCommitted, walAborted
	lsn   [chunkSize]xlog.LSN // the ending record's start
	time  [chunkSize]int64    // xact_time, Unix microseconds
}

const (
	walNone uint8 = iota
	walCommitted
	walAborted
)

// New returns the state of the backup f (a data directory as of its
// start) for WAL of version v and BLCKSZ blockSize (0: 8192). It reads the
// prepared transactions of pg_twophase; the SLRU pages are read when asked
// for. Records are then given to Add in WAL order from the backup's start
// (its redo point).
func New(f Files, v xlog.Version, blockSize int) (*State, error) {
	s, err := NewDeferred(f, v, blockSize)
	if err != nil {
		return nil, err
	}
	if err := s.readTwoPhase(); err != nil {
		return nil, err
	}
	return s, nil
}

// NewDeferred is New reading pg_twophase only when it is first needed (a
// PREPARE or a prepared transaction's end added, Status, PreparedXIDs; its
// problems then given by Err): for the files of a backup still being
// opened (a compressed tar read to its end), so that the records before
// are added meanwhile.
func NewDeferred(f Files, v xlog.Version, blockSize int) (*State, error) {
	if blockSize == 0 {
		blockSize = 8192
	}
	if blockSize < 1024 || blockSize > 32768 || blockSize&(blockSize-1) != 0 {
		return nil, &Error{Err: fmt.Errorf("%w: BLCKSZ %d (a power of 2 from 1024 to 32768)", ErrSetup, blockSize)}
	}
	if v < xlog.V10 || v > xlog.V18 {
		return nil, &Error{Err: fmt.Errorf("%w: %v (10 to 18 are read)", ErrSetup, v)}
	}
	g := geometry{blockSize: blockSize}
	s := &State{
		v: v, geo: g, files: f,
		xact:     newSLRU(f, dirXact, g),
		subtrans: newSLRU(f, dirSubtrans, g),
		offsets:  newSLRU(f, dirOffsets, g),
		members:  newSLRU(f, dirMembers, g),
		chunks:   map[uint32]*xactChunk{},
		parents:  map[xlog.XID]xlog.XID{},
		prepared: map[xlog.XID]xlog.XID{},
		multis:   map[MultiXactID]multiEntry{},
	}
	return s, nil
}

// readTwoPhase reads the prepared transactions of pg_twophase, once.
func (s *State) readTwoPhase() error {
	if s.twoPhaseRead {
		return nil
	}
	s.twoPhaseRead = true
	f, v := s.files, s.v
	names, err := f.ReadDir(dirTwoPhase)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &Error{File: dirTwoPhase, Err: err}
	}
	for _, name := range names {
		xid, ok := twoPhaseFileXID(name)
		if !ok {
			continue // restoreTwoPhaseData looks at names of 8 (16) hex digits only
		}
		file := dirTwoPhase + "/" + name
		data, err := f.ReadFile(file)
		if err != nil {
			return &Error{File: file, XID: xid, Err: err}
		}
		p, err := parseTwoPhaseFile(v, data)
		if err == nil && p.XID != xid {
			err = fmt.Errorf("%w: the state is of transaction %d", ErrCorrupt, p.XID)
		}
		if err != nil {
			return &Error{File: file, XID: xid, Err: err}
		}
		s.addPrepared(p)
	}
	return nil
}

// Err returns the first problem met while adding records or reading the
// backup's files (a damaged SLRU segment, a record shorter than its layout),
// or nil. Answers given after a problem read the damaged part as zeros.
func (s *State) Err() error { return s.err }

// needTwoPhase reads pg_twophase if NewDeferred did not.
func (s *State) needTwoPhase() {
	if !s.twoPhaseRead {
		s.fail(s.readTwoPhase())
	}
}

func (s *State) fail(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// Finish says the target is reached: transactions still in progress count
// as aborted, as when recovery ends there; prepared ones stay prepared.
func (s *State) Finish() { s.finished = true }

func (s *State) chunk(xid xlog.XID, create bool) (*xactChunk, int) {
	k := uint32(xid) / chunkSize
	c := s.chunks[k]
	if c == nil && create {
		c = new(xactChunk)
		s.chunks[k] = c
	}
	return c, int(uint32(xid) % chunkSize)
}

func (s *State) setOutcome(xid xlog.XID, state uint8, lsn xlog.LSN, t time.Time) {
	if xid == invalidXID {
		return
	}
	c, i := s.chunk(xid, true)
	c.state[i] = state
	c.lsn[i] = lsn
	c.time[i] = t.UnixMicro()
}

func (s *State) addPrepared(p preparedXact) {
	s.prepared[p.XID] = p.XID
	for _, sub := range p.Subxacts {
		s.prepared[sub] = p.XID
		s.parents[sub] = p.XID
	}
}

// XLOG and resource manager info values read here (pg_control.h, xact.h,
// clog.h, multixact.h).
const (
	xactOpMask         = 0x70 // XLOG_XACT_OPMASK
	xactPrepare        = 0x10 // XLOG_XACT_PREPARE
	xactAssignment     = 0x50 // XLOG_XACT_ASSIGNMENT
	clogZeroPage       = 0x00 // CLOG_ZEROPAGE
	clogTruncate       = 0x10 // CLOG_TRUNCATE
	multiZeroOffPage   = 0x00 // XLOG_MULTIXACT_ZERO_OFF_PAGE
	multiZeroMemPage   = 0x10 // XLOG_MULTIXACT_ZERO_MEM_PAGE
	multiCreateID      = 0x20 // XLOG_MULTIXACT_CREATE_ID
	multiTruncateID    = 0x30 // XLOG_MULTIXACT_TRUNCATE_ID
	xlogCheckpointShut = 0x00 // XLOG_CHECKPOINT_SHUTDOWN
	xlogCheckpointOnl  = 0x10 // XLOG_CHECKPOINT_ONLINE
)

// Add applies one record. Records must come in WAL order, from the
// backup's start (its redo point) to the target; records of other resource
// managers are ignored, except that a record's top-level xid (14+, logical
// WAL) gives a subtransaction its parent. A record that cannot be read is
// remembered (Err) and skipped, where PostgreSQL's redo would stop.
func (s *State) Add(rec *decode.Record) { s.AddEnd(rec, nil) }

// AddEnd is Add for a caller that decoded rec's transaction end already
// (end, from rmgr.XactEnd; nil: decoded here if rec is one): a replay reads
// it for its targets too, and decoding it once spares the commit records,
// a sixth of a busy server's, a second decoding.
func (s *State) AddEnd(rec *decode.Record, end *rmgr.XactEndInfo) {
	if rec == nil || rec.Record == nil {
		return
	}
	if rec.ToplevelXID != 0 && rec.Header.XID != 0 && rec.ToplevelXID != rec.Header.XID {
		s.parents[rec.Header.XID] = rec.ToplevelXID
	}
	info := rec.Header.Info &^ xlog.InfoMask
	switch rec.Header.Rmid {
	case xlog.RmgrTransaction:
		s.addXact(rec, end)
	case xlog.RmgrCLOG:
		s.addCLOG(rec, info)
	case xlog.RmgrMultiXact:
		s.addMultiXact(rec, info)
	case xlog.RmgrXLOG:
		if info == xlogCheckpointShut || info == xlogCheckpointOnl {
			s.addCheckpoint(rec)
		}
	}
}

func (s *State) recordError(rec *decode.Record, format string, args ...any) {
	s.fail(&Error{LSN: rec.LSN, Err: fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)})
}

// addXact mirrors xact_redo: commits and aborts (prepared or not) set the
// transaction and its subtransactions in pg_xact (TransactionIdCommitTree,
// TransactionIdAbortTree) and end a prepared transaction
// (PrepareRedoRemove); PREPARE adds one (PrepareRedoAdd); ASSIGNMENT sets
// pg_subtrans parents (ProcArrayApplyXidAssignment).
func (s *State) addXact(rec *decode.Record, end *rmgr.XactEndInfo) {
	switch rec.Header.Info & xactOpMask {
	case xactPrepare:
		s.needTwoPhase()
		p, err := parseTwoPhaseState(rec.Version, rec.MainData)
		if err != nil {
			s.fail(&Error{LSN: rec.LSN, XID: rec.Header.XID, Err: err})
			return
		}
		s.addPrepared(p)
		return
	case xactAssignment:
		// xl_xact_assignment: xtop @0, int nsubxacts @4, xsub[] @8.
		d := rec.MainData
		if len(d) < 8 {
			s.recordError(rec, "ASSIGNMENT of %d bytes", len(d))
			return
		}
		top := xlog.XID(binary.LittleEndian.Uint32(d))
		n := int32(binary.LittleEndian.Uint32(d[4:]))
		if n < 0 || int64(n)*4 > int64(len(d)-8) {
			s.recordError(rec, "ASSIGNMENT of %d subtransactions in %d bytes", n, len(d))
			return
		}
		for i := 0; i < int(n); i++ {
			s.parents[xlog.XID(binary.LittleEndian.Uint32(d[8+4*i:]))] = top
		}
		return
	}
	var e rmgr.XactEndInfo
	ok := end != nil
	if ok {
		e = *end
	} else {
		e, ok = rmgr.XactEnd(rec)
	}
	if !ok {
		switch rec.Header.Info & xactOpMask {
		case 0x00, 0x20, 0x30, 0x40: // the four ends
			s.recordError(rec, "a transaction end record (info %#02x) shorter than its layout", rec.Header.Info)
		}
		return // INVALIDATION and unknown infos change no state
	}
	state := walAborted
	if e.Commit {
		state = walCommitted
	}
	s.setOutcome(e.XID, state, rec.LSN, e.Time)
	for _, sub := range e.Subxacts {
		s.setOutcome(sub, state, rec.LSN, e.Time)
		s.parents[sub] = e.XID
	}
	if e.Prepared {
		s.needTwoPhase()
		top := s.prepared[e.XID]
		if top == 0 {
			top = e.XID
		}
		for x, t := range s.prepared {
			if t == top {
				delete(s.prepared, x)
			}
		}
		delete(s.prepared, e.XID)
	}
}

// readPageno reads an SLRU page number: an int up to 16, an int64 from 17.
func readPageno(v xlog.Version, d []byte) (pageno int64, n int, ok bool) {
	if v >= xlog.V17 {
		if len(d) < 8 {
			return 0, 0, false
		}
		return int64(binary.LittleEndian.Uint64(d)), 8, true
	}
	if len(d) < 4 {
		return 0, 0, false
	}
	return int64(int32(binary.LittleEndian.Uint32(d))), 4, true
}

// addCLOG mirrors clog_redo: ZEROPAGE zeroes a pg_xact page; TRUNCATE
// (xl_clog_truncate {pageno, oldestXact, oldestXactDb}) removes the
// segments wholly before the cutoff page (SimpleLruTruncate with
// CLOGPagePrecedes).
func (s *State) addCLOG(rec *decode.Record, info uint8) {
	pageno, n, ok := readPageno(rec.Version, rec.MainData)
	if !ok {
		s.recordError(rec, "CLOG record of %d bytes", len(rec.MainData))
		return
	}
	switch info {
	case clogZeroPage:
		s.xact.zero(pageno)
	case clogTruncate:
		if len(rec.MainData) < n+4 {
			s.recordError(rec, "CLOG TRUNCATE of %d bytes", len(rec.MainData))
			return
		}
		// AdvanceOldestClogXid(xlrec.oldestXact)
		if x := xlog.XID(binary.LittleEndian.Uint32(rec.MainData[n:])); !s.haveOldestClog || xidPrecedes(uint32(s.oldestClog), uint32(x)) {
			s.haveOldestClog, s.oldestClog = true, x
		}
		per := s.geo.clogXactsPerPage()
		cutoff := pageno
		// CLOGPagePrecedes: compare the xids page*per + FirstNormalTransactionId + 1.
		precedes := func(p1, p2 int64) bool {
			x1 := uint32(p1)*per + 4
			x2 := uint32(p2)*per + 4
			return xidPrecedes(x1, x2) && xidPrecedes(x1, x2+per-1)
		}
		s.xact.truncateBefore(cutoff, precedes)
	}
}

// truncateBefore mirrors SimpleLruTruncate: a segment is removed when its
// first and last pages precede cutoff (SlruScanDirCbDeleteCutoff). Cutoffs
// only advance, so the latest one stands for all.
func (s *slru) truncateBefore(cutoff int64, precedes func(p1, p2 int64) bool) {
	s.truncated = func(page int64) bool {
		first := page - page%slruPagesPerSegment
		return precedes(first, cutoff) && precedes(first+slruPagesPerSegment-1, cutoff)
	}
	for segno := range s.segments {
		if s.truncated(segno * slruPagesPerSegment) {
			delete(s.segments, segno)
		}
	}
}

// addCheckpoint keeps the first checkpoint's oldestActiveXid, and every
// checkpoint's nextMulti and nextMultiOffset (CheckPoint, pg_control.h:
// @32 and @36 in 10-11, @36 and @40 from 12, where nextXid became a
// FullTransactionId).
func (s *State) addCheckpoint(rec *decode.Record) {
	c, ok := rmgr.Checkpoint(rec)
	if !ok {
		s.recordError(rec, "CHECKPOINT of %d bytes", len(rec.MainData))
		return
	}
	if !s.haveCheckpoint {
		s.haveCheckpoint = true
		s.oldestActive = xlog.XID(c.OldestActiveXID)
	}
	if !s.haveOldestClog {
		// StartupXLOG: AdvanceOldestClogXid(checkPoint.oldestXid), from the
		// checkpoint recovery starts at; later checkpoints do not move it.
		s.haveOldestClog, s.oldestClog = true, xlog.XID(c.OldestXID)
	}
	at := 36
	if rec.Version <= xlog.V11 {
		at = 32
	}
	d := rec.MainData
	if len(d) >= at+8 {
		multi := MultiXactID(binary.LittleEndian.Uint32(d[at:]))
		off := binary.LittleEndian.Uint32(d[at+4:])
		if !s.haveNextMulti || multiPrecedes(s.nextMulti, multi) {
			s.haveNextMulti, s.nextMulti, s.nextOffset = true, multi, off
		}
	}
}

// Status returns xid's status as of the records added so far, as
// TransactionIdDidCommit and TransactionIdIsInProgress of a server recovered
// to that point answer: a subtransaction pg_xact marks sub-committed is
// resolved through its parent; xids 1 (bootstrap) and 2 (frozen) are
// committed and 0 aborted; a transaction nothing ended is InProgress before
// Finish and Aborted after.
func (s *State) Status(xid xlog.XID) Status {
	s.needTwoPhase()
	for range 64 { // a chain of parents longer than this is damage
		if s.assumed[xid] {
			return Committed
		}
		switch xid {
		case invalidXID:
			return Aborted
		case bootstrapXID, frozenXID:
			return Committed
		}
		if c, i := s.chunk(xid, false); c != nil {
			switch c.state[i] {
			case walCommitted:
				return Committed
			case walAborted:
				return Aborted
			}
		}
		if _, ok := s.prepared[xid]; ok {
			return Prepared
		}
		switch s.clogStatus(xid) {
		case clogCommitted:
			return Committed
		case clogAborted:
			return Aborted
		case clogSubCommitted:
			// TransactionIdDidCommit: a sub-committed xid committed if its
			// parent did; without a parent it "crashed while committing".
			p := s.Parent(xid)
			if p == invalidXID || p == xid {
				return s.unfinished()
			}
			xid = p
			continue
		}
		return s.unfinished()
	}
	return s.unfinished()
}

// AssumeCommitted makes Status answer Committed for xids, until it is
// called again (with none: no assumption): a transaction and the
// subtransactions its commit record lists, before that record is added,
// seen as the transaction saw its own work once all its commands were
// done (TransactionIdIsCurrentTransactionId in HeapTupleSatisfiesMVCC
// makes its own rows visible). The catalog as a transaction left it, for
// the tables it created or altered, is read this way. xids an abort
// record ended stay aborted: the commit record lists none of them.
func (s *State) AssumeCommitted(xids ...xlog.XID) {
	s.assumed = nil
	for _, x := range xids {
		if c, i := s.chunk(x, false); c != nil && c.state[i] == walAborted {
			continue
		}
		if s.assumed == nil {
			s.assumed = map[xlog.XID]bool{}
		}
		s.assumed[x] = true
	}
}

func (s *State) unfinished() Status {
	if s.finished {
		return Aborted
	}
	return InProgress
}

// clogStatus reads xid's 2 bits from the backup's pg_xact as the WAL left
// the page (zeroed or truncated pages read as zeros).
func (s *State) clogStatus(xid xlog.XID) uint8 {
	pageno := int64(uint32(xid) / s.geo.clogXactsPerPage())
	page, err := s.xact.page(pageno)
	if err != nil {
		s.fail(err)
	}
	return clogStatusOnPage(page, s.geo, uint32(xid))
}

// CommitLSN returns the start of the record that committed xid (COMMIT or
// COMMIT_PREPARED, its own or its top-level transaction's), if a record
// added committed it; transactions committed before the backup have none.
func (s *State) CommitLSN(xid xlog.XID) (xlog.LSN, bool) {
	if c, i := s.chunk(xid, false); c != nil && c.state[i] == walCommitted {
		return c.lsn[i], true
	}
	return 0, false
}

// CommitTime returns the commit record's xact_time (UTC) of xid, if a record
// added committed it.
func (s *State) CommitTime(xid xlog.XID) (time.Time, bool) {
	if c, i := s.chunk(xid, false); c != nil && c.state[i] == walCommitted {
		return time.UnixMicro(c.time[i]).UTC(), true
	}
	return time.Time{}, false
}

// Parent returns a subtransaction's parent as pg_subtrans holds it after
// recovery to this point: from XACT_ASSIGNMENT records, the subtransactions
// of commit, abort and PREPARE records and records' top-level xids; for
// xids before the first checkpoint's oldestActiveXid, from the backup's
// pg_subtrans (StartupSUBTRANS zeroes the pages from there on). 0 for a
// top-level transaction or one nothing names.
func (s *State) Parent(xid xlog.XID) xlog.XID {
	if p, ok := s.parents[xid]; ok {
		return p
	}
	if !s.haveCheckpoint || uint32(xid) < 3 {
		return 0
	}
	per := s.geo.subtransXactsPerPage()
	pageno := int64(uint32(xid) / per)
	if pageno >= int64(uint32(s.oldestActive)/per) || !xidPrecedes(uint32(xid), uint32(s.oldestActive)) {
		return 0
	}
	page, err := s.subtrans.page(pageno)
	if err != nil {
		s.fail(err)
	}
	return xlog.XID(subtransParentOnPage(page, s.geo, uint32(xid)))
}

// OldestClogXID returns the oldest transaction whose status recovery
// vouches for (oldestClogXid): the oldestXid of the checkpoint replay
// started from, advanced by CLOG TRUNCATE records. pg_xact_status answers
// NULL below it; Status still answers from what pg_xact holds (pages
// truncated away read as zeros). ok is false before a checkpoint or
// truncation record was added.
func (s *State) OldestClogXID() (xid xlog.XID, ok bool) { return s.oldestClog, s.haveOldestClog }

// PreparedXIDs returns the top-level xids of the transactions prepared as
// of the records added so far, in increasing order.
func (s *State) PreparedXIDs() []xlog.XID {
	s.needTwoPhase()
	var out []xlog.XID
	for x, top := range s.prepared {
		if x == top {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
