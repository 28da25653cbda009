package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// Backup is what replay reads of a base backup (backup.Backup implements
// it): its label, system identifier and block size, its relation files'
// blocks, and its other files (pg_xact, pg_filenode.map, ...).
type Backup interface {
	xactstate.Files
	StartLSN() xlog.LSN
	SystemID() uint64
	BlockSize() uint32
	NBlocks(loc decode.RelFileLocator, fork decode.ForkNumber) (uint32, error)
	ReadBlock(loc decode.RelFileLocator, fork decode.ForkNumber, blk uint32, dst []byte) error
}

// Errors, each wrapped in an *Error naming where.
var (
	// ErrBeforeConsistent: the target comes before the backup is
	// consistent ("requested recovery stop point is before consistent
	// recovery point").
	ErrBeforeConsistent = errors.New("recovery target before the backup's consistent point")
	// ErrNotReached: the WAL ends before the target ("recovery ended
	// before configured recovery target was reached").
	ErrNotReached = errors.New("recovery target not reached: the WAL ends before it")
	// ErrWALMissing: the WAL read does not begin at the backup's start
	// or stops with a gap before the backup is consistent.
	ErrWALMissing = errors.New("WAL missing between the backup and the target")
	// ErrOtherSystem: the WAL was written by another cluster.
	ErrOtherSystem = errors.New("WAL and backup of different database systems")
	// ErrNoRelation: a relation file that does not exist at the target.
	ErrNoRelation = errors.New("no such relation file at the target")
	// ErrRedoFailed: a record could not be replayed onto a page.
	ErrRedoFailed = errors.New("redo failed")
)

// Error is a replay error: what, and where in the WAL or the backup.
type Error struct {
	LSN xlog.LSN // the record, where one is concerned
	Msg string
	Err error // a sentinel above, and the cause
}

func (e *Error) Error() string {
	if e.LSN != 0 {
		return fmt.Sprintf("%s at %s: %s", e.Err, e.LSN, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Err, e.Msg)
}
func (e *Error) Unwrap() error { return e.Err }

// Config is a replay.
type Config struct {
	Backup Backup
	// WAL is the WAL from the backup's start (an archive, pg_wal, ...);
	// Options are its reader's (Start is set to the backup's start;
	// FollowHistory follows timelines as recovery_target_timeline =
	// 'latest' does).
	WAL     xlog.Source
	Options xlog.Options
	Target  Target
	// Hold says which relation files' blocks are held (nil: all): the
	// catalogs need their database's and the shared ones. It is called
	// from several goroutines at once (a replay holding some files reads
	// the WAL on every core: spans.go).
	Hold func(decode.RelFileLocator) bool
	// HoldCatalogs holds, besides what Hold says, the blocks of shared
	// relations, of the files numbered below FirstNormalObjectId (the
	// system catalogs as initdb made them) and of every file the WAL makes
	// (catalogs rewritten by VACUUM FULL, tables created since the
	// backup): what Catalog and Resolve read, with a Hold of the files a
	// name had at the backup's start (FilesNamed).
	HoldCatalogs bool
	// MemoryBytes bounds the pages held in memory (0: 256 MiB); beyond,
	// they go to a file of ours in TempDir ("" is os.TempDir()).
	MemoryBytes int64
	TempDir     string
	// WatchXID, when set, has the replay keep the rows this transaction
	// and its subtransactions change (WatchedChanges, WatchedEnd;
	// changes.go, changelog.go).
	WatchXID xlog.XID
	// ChangeMemoryBytes bounds the watched changes held in memory (0: 4
	// MiB); beyond, they go to a file of ours in TempDir (changelog.go).
	ChangeMemoryBytes int64
	// WatchSubxacts, when not nil, are WatchXID's subtransactions (its
	// commit record's list, read beforehand): only these and WatchXID
	// are watched, instead of every xid from WatchXID on until their end
	// says whose they are (less memory beside concurrent transactions).
	WatchSubxacts []xlog.XID
	// NoBackup replays the WAL alone (Backup is then not read): the WAL
	// is read from Start (0: its first segment), a page is known only
	// from an image or an initialisation in it (walonly.go), the others
	// stay unknown, and watched changes carry what their records log
	// (Change.Logged). BlockSize is then BLCKSZ (0: 8192).
	NoBackup  bool
	Start     xlog.LSN
	BlockSize uint32
	// Workers is how many goroutines read the WAL of a replay with a Hold
	// (0: GOMAXPROCS; 1: one reader, every record replayed in turn).
	Workers int

	// tests: the WAL each span covers (0: xlog/stream's default), every
	// span after the first replayed by rereadSpan, the bytes of records a
	// span keeps (0: maxKeptBytes)
	spanBytes   int
	forceReread bool
	maxKept     int
}

// Stop is where the replay ended.
type Stop struct {
	// LSN is the record recovery stopped at: before it (After false, the
	// record not applied) or after it (After true). At the end of the WAL
	// (no target) it is the end.
	LSN        xlog.LSN
	After      bool
	XID        xlog.XID // the transaction whose end stopped it, if one did
	EndOfWAL   bool
	Consistent xlog.LSN // where the backup became consistent
	Records    int64    // records replayed
}

// relKey is one fork of one relation file.
type relKey struct {
	rel  decode.RelFileLocator
	fork decode.ForkNumber
}

// relState is what the WAL did to a relation fork's file: created (its
// contents are the WAL's alone), cut (base: blocks at most read from the
// backup), its size in blocks, dropped.
type relState struct {
	created  bool
	dropped  bool
	base     uint32 // blocks the backup's file may give (math.MaxUint32: its own size)
	size     uint32 // the file's size in blocks, where known (sized)
	sized    bool
	extent   uint32  // the highest block the WAL wrote since the file was made or cut, plus one
	notHeap  bool    // pages that are not heap pages (an index's FPIs): not held
	copyFrom *relKey // a CREATE DATABASE copy: untouched blocks read from there
}

// Replay holds the pages of the relations replayed to a target, and the
// commit state and relation maps as of it.
type Replay struct {
	cfg       Config
	blockSize int
	store     *store
	rels      map[relKey]*relState
	xacts     *xactstate.State
	version   xlog.Version
	// relation maps as of the target: (database, 0 for the shared one)
	relmaps  map[uint32]*catalog.RelMap
	dbCopies map[uint32]uint32 // database -> the template it was copied from (file copy)
	dec      *decode.Decoder
	stop     Stop
	start    xlog.LSN // the backup's start, where the reading begins
	rereads  int      // spans read again (spans.go)
	// sequential: where the spans' reading went on with one reader (a
	// span kept too much: maxKeptBytes), 0 if it did not
	sequential xlog.LSN
	// walSystemID, when not 0, is the WAL's system identifier, to be
	// compared with the backup's at the end (a PendingBackup)
	walSystemID uint64
	// leftOut are the files of heap and image records not redone (not
	// held): a file not in it has no such record in the WAL replayed
	leftOut map[decode.RelFileLocator]bool
	scratch []byte

	// WatchXID's changes (changes.go)
	changes       *changeLog
	watchSeq      int
	watchedEnd    *rmgr.XactEndInfo
	watchedEndLSN xlog.LSN
	watchPage     []byte
	tuples        []rmgr.HeapTuple
	watchSet      map[xlog.XID]bool // WatchXID and WatchSubxacts

	ended map[xlog.XID]bool // without a backup: xids whose end the WAL read gave, committed or not (walonly.go)
}

// Run replays cfg.WAL from the backup's start to the target, in one
// reading, and returns the pages and state as of the target.
func Run(cfg Config) (*Replay, error) {
	if cfg.NoBackup {
		if cfg.BlockSize == 0 {
			cfg.BlockSize = 8192
		}
		cfg.Backup = noBackup{start: cfg.Start, blockSize: cfg.BlockSize}
	}
	b := cfg.Backup
	bs := int(b.BlockSize())
	if bs == 0 {
		bs = 8192
	}
	mem := cfg.MemoryBytes
	if mem <= 0 {
		mem = 256 << 20
	}
	r := &Replay{cfg: cfg, blockSize: bs, store: newStore(bs, mem, cfg.TempDir), rels: map[relKey]*relState{},
		relmaps: map[uint32]*catalog.RelMap{}, dbCopies: map[uint32]uint32{}, dec: decode.NewDecoder(bs), scratch: make([]byte, bs),
		leftOut: map[decode.RelFileLocator]bool{}}
	if cfg.Target.kinds() > 1 {
		return nil, &Error{Msg: "give at most one of the LSN, XID, time and name targets", Err: ErrTarget}
	}
	err := r.run()
	if r.walSystemID != 0 {
		// the backup was still being opened: its system identifier is
		// compared now, and another system's WAL is the error to tell
		if serr := r.checkSystem(r.walSystemID); serr != nil {
			err = serr
		}
	}
	if err != nil {
		r.store.close()
		r.changes.close()
		return nil, err
	}
	return r, nil
}

// Close releases the pages (and removes the spill file).
func (r *Replay) Close() error {
	err := r.store.close()
	if cerr := r.changes.close(); err == nil {
		err = cerr
	}
	return err
}

// LeftOut tells whether the replay left out (did not redo, the file not
// being held) a heap or full-page-image record of rel's main fork: if not,
// holding rel would have given the same pages (its backup's, or those the
// WAL made).
func (r *Replay) LeftOut(rel decode.RelFileLocator) bool { return r.leftOut[rel] }

// Stop tells where the replay ended.
func (r *Replay) Stop() Stop { return r.stop }

// Xacts is the commit state as of the target (finished: transactions
// still running there count as aborted).
func (r *Replay) Xacts() *xactstate.State { return r.xacts }

// Version is the PostgreSQL version that wrote the WAL.
func (r *Replay) Version() xlog.Version { return r.version }

// BlockSize is the pages' size (BLCKSZ).
func (r *Replay) BlockSize() int { return r.blockSize }

// Spilled tells how many pages went to the spill file and were read back.
func (r *Replay) Spilled() (written, reloaded int64) { return r.store.Spilled, r.store.Reloaded }

func (r *Replay) run() error {
	cfg := r.cfg
	start := cfg.Backup.StartLSN()
	r.start = start
	opts := cfg.Options
	opts.Start = start
	rd, err := xlog.NewReader(cfg.WAL, opts)
	if err != nil {
		// Another system's WAL rarely holds the backup's start: say it is
		// another system's, as recovery would on reading its first page.
		from := opts
		from.Start = 0
		if any, aerr := xlog.NewReader(cfg.WAL, from); aerr == nil {
			id := any.SystemID()
			any.Close()
			if oerr := r.checkSystem(id); oerr != nil {
				return oerr
			}
		}
		if errors.Is(err, xlog.ErrSegmentNotFound) {
			return &Error{LSN: start, Msg: fmt.Sprintf("the segment of the backup's start %s: %v", start, err), Err: ErrWALMissing}
		}
		return err
	}
	defer rd.Close()
	r.version = rd.Version()
	if p, ok := cfg.Backup.(*PendingBackup); ok && !p.Ready() {
		// what the backup must give is asked for when needed (the
		// relation maps, pg_twophase) or at the end (the system)
		r.walSystemID = rd.SystemID()
		if r.xacts, err = xactstate.NewDeferred(cfg.Backup, r.version, r.blockSize); err != nil {
			return err
		}
	} else {
		if err := r.checkSystem(rd.SystemID()); err != nil {
			return err
		}
		if r.xacts, err = xactstate.New(cfg.Backup, r.version, r.blockSize); err != nil {
			return err
		}
		if err := r.loadRelMaps(); err != nil && !cfg.NoBackup {
			return err
		}
	}
	if r.parallel() {
		if err := r.runSpans(start); err != nil {
			return err
		}
	} else if err := r.readAll(rd, start, true); err != nil {
		return err
	}
	if r.stop.Consistent == 0 {
		return &Error{LSN: r.stop.LSN, Msg: fmt.Sprintf("%s stops at %s, before the backup that started at %s is consistent", cfg.Target, r.stop.LSN, start), Err: ErrBeforeConsistent}
	}
	if err := r.xacts.Err(); err != nil {
		return err
	}
	r.xacts.Finish()
	return nil
}

// readAll is run's reading with one reader: every record in turn. first:
// rd begins at the backup's start (else it goes on from a record spans
// read: runSpans).
func (r *Replay) readAll(rd *xlog.Reader, start xlog.LSN, first bool) error {
	none := first
	for {
		rec, err := rd.Next()
		if err != nil {
			return r.readEnd(err, rd.EndLSN(), none, start)
		}
		none = false
		if first {
			if err := r.firstRecord(rec, start, xlog.LSN(rd.PageSize())); err != nil {
				return err
			}
			first = false
		}
		if stop, err := r.step(rec); err != nil || stop {
			return err
		}
	}
}

// firstRecord checks that the first record read is the backup's start.
func (r *Replay) firstRecord(rec *xlog.Record, start, pageSize xlog.LSN) error {
	if r.cfg.NoBackup {
		// no backup to be consistent with: the WAL read is all there is
		r.stop.Consistent = rec.LSN
		return nil
	}
	if rec.LSN > start+pageSize {
		return &Error{LSN: rec.LSN, Msg: fmt.Sprintf("the first record read is at %s, the backup starts at %s", rec.LSN, start), Err: ErrWALMissing}
	}
	return nil
}

// readEnd says how a reading that ended with err at end (before reaching
// a target) ends the replay: at the end of the WAL when no target was
// given and the backup is consistent, else an error. none: no record was
// read.
func (r *Replay) readEnd(err error, end xlog.LSN, none bool, start xlog.LSN) error {
	cfg := r.cfg
	if errors.Is(err, xlog.ErrSegmentNotFound) {
		// a gap: later segments are there, this one is not (the
		// reader says so only below the highest segment present)
		return &Error{LSN: end, Msg: fmt.Sprintf("%s: %v", cfg.Target, err), Err: ErrWALMissing}
	}
	if err != io.EOF && !xlog.IsEndOfWAL(err) {
		return err
	}
	if none {
		return &Error{LSN: start, Msg: fmt.Sprintf("the WAL read holds no record from the backup's start %s", start), Err: ErrWALMissing}
	}
	if r.stop.Consistent == 0 {
		return &Error{LSN: end, Msg: fmt.Sprintf("the WAL ends at %s before the backup that started at %s is consistent (its BACKUP_END record)", end, start), Err: ErrWALMissing}
	}
	if cfg.Target.kinds() > 0 {
		return &Error{LSN: end, Msg: fmt.Sprintf("%s: the WAL read ends at %s", cfg.Target, end), Err: ErrNotReached}
	}
	r.stop.LSN, r.stop.EndOfWAL = end, true
	return nil
}

// step replays one record; stop says the target was reached (at it).
func (r *Replay) step(rec *xlog.Record) (stop bool, err error) {
	cfg := r.cfg
	d, err := r.dec.Decode(rec)
	if err != nil {
		return false, err
	}
	// a transaction's end, decoded once for all that read it
	var end *rmgr.XactEndInfo
	if d.Header.Rmid == xlog.RmgrTransaction {
		if e, ok := rmgr.XactEnd(d); ok {
			end = &e
		}
	}
	r.watchEnd(d, end)
	if cfg.Target.kinds() > 0 && cfg.Target.stopsBefore(d, end) {
		r.stop.LSN = d.LSN
		if end != nil {
			r.stop.XID = end.XID
		}
		return true, nil
	}
	var pend []pendingChange
	if cfg.WatchXID != 0 && (d.Header.Rmid == xlog.RmgrHeap || d.Header.Rmid == xlog.RmgrHeap2) {
		pend = r.watchBefore(d)
	}
	if cfg.WatchXID != 0 && d.Header.Rmid == xlog.RmgrStorage {
		r.watchTruncate(d) // before: it keeps the pages cut
	}
	if err := r.apply(d, end); err != nil {
		return false, err
	}
	if pend != nil {
		r.watchAfter(pend)
	}
	r.xacts.AddEnd(d, end)
	if cfg.NoBackup && d.Header.Rmid == xlog.RmgrTransaction {
		r.noteEnd(d)
	}
	r.stop.Records++
	if s, ok := rmgr.BackupEnd(d); ok && s == r.start && r.stop.Consistent == 0 {
		r.stop.Consistent = d.EndLSN
	}
	if cfg.Target.kinds() > 0 && cfg.Target.stopsAfter(d, end) {
		r.stop.LSN, r.stop.After = d.LSN, true
		if end != nil {
			r.stop.XID = end.XID
		}
		return true, nil
	}
	return false, nil
}

// checkSystem compares the WAL's system identifier with the backup's.
func (r *Replay) checkSystem(id uint64) error {
	if b := r.cfg.Backup.SystemID(); id != 0 && b != 0 && id != b {
		return &Error{Msg: fmt.Sprintf("the WAL's system identifier is %d, the backup's %d", id, b), Err: ErrOtherSystem}
	}
	return nil
}

// loadRelMaps reads the backup's shared relation map (the databases' are
// read when asked for).
func (r *Replay) loadRelMaps() error {
	b, err := r.cfg.Backup.ReadFile("global/pg_filenode.map")
	if err != nil {
		return err
	}
	m, err := catalog.ParseRelMap(b)
	if err != nil {
		return fmt.Errorf("global/pg_filenode.map: %w", err)
	}
	r.relmaps[0] = m
	return nil
}

// RelMap returns database db's relation map as of the target (0: the
// shared one).
func (r *Replay) RelMap(db uint32) (*catalog.RelMap, error) {
	if m := r.relmaps[db]; m != nil {
		return m, nil
	}
	if db == 0 && !r.cfg.NoBackup {
		// not read at the start (a PendingBackup), nor given by the WAL
		if err := r.loadRelMaps(); err != nil {
			return nil, err
		}
		return r.relmaps[0], nil
	}
	src := db
	if t, ok := r.dbCopies[db]; ok {
		src = t
		if m := r.relmaps[t]; m != nil {
			return m, nil
		}
	}
	for _, dir := range r.dbDirs(src) {
		b, err := r.cfg.Backup.ReadFile(dir + "/pg_filenode.map")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := catalog.ParseRelMap(b)
		if err != nil {
			return nil, fmt.Errorf("%s/pg_filenode.map: %w", dir, err)
		}
		r.relmaps[db] = m
		return m, nil
	}
	return nil, &Error{Msg: fmt.Sprintf("database %d has no pg_filenode.map in the backup nor in the WAL", db), Err: ErrNoRelation}
}

// dbDirs are where a database's files may be (its default tablespace is not
// known before its catalog is read: base/ first).
func (r *Replay) dbDirs(db uint32) []string {
	return []string{fmt.Sprintf("base/%d", db)}
}

func (r *Replay) rel(k relKey) *relState {
	s := r.rels[k]
	if s == nil {
		s = &relState{base: math.MaxUint32}
		r.rels[k] = s
	}
	return s
}

func (r *Replay) holds(rel decode.RelFileLocator) bool {
	if r.cfg.Hold == nil || r.cfg.Hold(rel) {
		return true
	}
	if !r.cfg.HoldCatalogs {
		return false
	}
	if rel.DBOID == 0 || rel.RelNumber < firstNormalObjectID {
		return true // a shared or a system catalog's first file
	}
	st := r.rels[relKey{rel, decode.ForkMain}]
	return st != nil && st.created // made by the WAL: a rewritten catalog, or a table made since the backup
}

// apply replays rec's changes to the held pages and the relation states.
// end is d's transaction end (rmgr.XactEnd), nil if it is none.
func (r *Replay) apply(d *decode.Record, end *rmgr.XactEndInfo) error {
	switch d.Header.Rmid {
	case xlog.RmgrHeap, xlog.RmgrHeap2:
		return r.redoBlocks(d, false)
	case xlog.RmgrXLOG:
		switch d.Header.Info & 0xF0 {
		case xlogFPIForHint, xlogFPI:
			return r.redoBlocks(d, true)
		}
	case xlog.RmgrStorage:
		if rel, fork, ok := rmgr.SmgrCreate(d); ok {
			k := relKey{rel, fork}
			r.store.drop(func(b blockKey) bool { return b.rel == rel && b.fork == fork })
			r.rels[k] = &relState{created: true, sized: true}
		} else if rel, blocks, ok := rmgr.SmgrTruncate(d); ok {
			flags := uint32(0)
			if len(d.MainData) >= 20 {
				flags = binary.LittleEndian.Uint32(d.MainData[16:])
			}
			if flags&1 != 0 { // SMGR_TRUNCATE_HEAP
				r.truncate(relKey{rel, decode.ForkMain}, blocks)
			}
		}
	case xlog.RmgrRelMap:
		u, err := catalog.ParseRelMapUpdate(d.MainData)
		if err != nil {
			return &Error{LSN: d.LSN, Msg: err.Error(), Err: ErrRedoFailed}
		}
		r.relmaps[u.DBID] = u.Map
	case xlog.RmgrDatabase:
		r.applyDatabase(d)
	case xlog.RmgrTransaction:
		if e := end; e != nil && e.Commit {
			for _, rel := range e.DroppedRels {
				for f := decode.ForkNumber(0); f <= decode.MaxForkNumber; f++ {
					r.dropRel(relKey{rel, f})
				}
			}
		}
	}
	return nil
}

func (r *Replay) truncate(k relKey, blocks uint32) {
	s := r.rel(k)
	if s.base > blocks {
		s.base = blocks
	}
	s.size, s.sized = blocks, true
	s.extent = min(s.extent, blocks)
	r.store.drop(func(b blockKey) bool { return b.rel == k.rel && b.fork == k.fork && b.blk >= blocks })
}

func (r *Replay) dropRel(k relKey) {
	r.store.drop(func(b blockKey) bool { return b.rel == k.rel && b.fork == k.fork })
	r.rels[k] = &relState{dropped: true, sized: true}
}

// applyDatabase follows CREATE DATABASE (file copy: the new database's
// files are the template's as of now) and DROP DATABASE.
func (r *Replay) applyDatabase(d *decode.Record) {
	m := d.MainData
	u32 := func(off int) uint32 {
		if off+4 > len(m) {
			return 0
		}
		return binary.LittleEndian.Uint32(m[off:])
	}
	info, v := d.Header.Info&0xF0, d.Version
	switch {
	case info == 0x00 && len(m) >= 16: // CREATE (10-14), CREATE_FILE_COPY (15+): db, spc, src db, src spc
		db, spc, src, srcSpc := u32(0), u32(4), u32(8), u32(12)
		r.copyDatabase(src, srcSpc, db, spc)
	case (info == 0x10 && v <= xlog.V14 || info == 0x20 && v >= xlog.V15) && len(m) >= 4: // DROP
		db := u32(0)
		r.store.drop(func(b blockKey) bool { return b.rel.DBOID == db })
		for k := range r.rels {
			if k.rel.DBOID == db {
				r.rels[k] = &relState{dropped: true, sized: true}
			}
		}
		delete(r.relmaps, db)
		delete(r.dbCopies, db)
	}
}

// copyDatabase makes database dst (tablespace dstSpc) a copy of src's files
// in srcSpc as they are now: the blocks held, and for the others the
// template's files in the backup.
func (r *Replay) copyDatabase(src, srcSpc, dst, dstSpc uint32) {
	for k, h := range r.store.blocks {
		if k.rel.DBOID != src || k.rel.SpcOID != srcSpc {
			continue
		}
		hk := h
		if hk.page == nil {
			if got, err := r.store.get(k); err == nil && got != nil {
				hk = got
			} else {
				continue
			}
		}
		nk := k
		nk.rel.DBOID, nk.rel.SpcOID = dst, dstSpc
		if r.holds(nk.rel) {
			if nh, err := r.store.add(nk, hk.page); err == nil {
				nh.lastLSN = hk.lastLSN
			}
		}
	}
	for k, s := range r.rels {
		if k.rel.DBOID == src && k.rel.SpcOID == srcSpc {
			nk := k
			nk.rel.DBOID, nk.rel.SpcOID = dst, dstSpc
			c := *s
			r.rels[nk] = &c
		}
	}
	r.dbCopies[dst] = src
	if m := r.relmaps[src]; m != nil {
		r.relmaps[dst] = m
	}
}

// redoBlocks replays each main-fork block reference of a held relation.
func (r *Replay) redoBlocks(d *decode.Record, imagesOnly bool) error {
	for i := range d.Blocks {
		b := &d.Blocks[i]
		if b.Fork() != decode.ForkMain {
			continue
		}
		if !r.holds(b.Rel) {
			r.leftOut[b.Rel] = true
			continue
		}
		if imagesOnly && !b.HasImage {
			continue
		}
		k := relKey{b.Rel, decode.ForkMain}
		st := r.rels[k]
		if st != nil && st.notHeap {
			continue
		}
		init := b.WillInit() || b.HasImage && b.Apply
		if r.cfg.NoBackup && !init && r.store.blocks[blockKey{b.Rel, decode.ForkMain, b.Block}] == nil {
			continue // a page the WAL read has not shown: it stays unknown
		}
		h, err := r.block(blockKey{b.Rel, decode.ForkMain, b.Block}, init)
		if err != nil {
			return &Error{LSN: d.LSN, Msg: err.Error(), Err: ErrRedoFailed}
		}
		out, err := heap.Redo(d, b.ID, h.page, r.dec)
		if err != nil {
			return &Error{LSN: d.LSN, Msg: err.Error(), Err: errors.Join(ErrRedoFailed, err)}
		}
		if imagesOnly && !isHeapPage(h.page, r.blockSize) {
			// an index's (or another access method's) page: the file is
			// not a heap
			r.rel(k).notHeap = true
			r.store.drop(func(x blockKey) bool { return x.rel == b.Rel && x.fork == decode.ForkMain })
			continue
		}
		if out == heap.Applied || out == heap.Restored {
			h.lastLSN = d.LSN
		}
	}
	return nil
}

// isHeapPage: a heap page has no special space (pd_special = BLCKSZ); an
// all-zero page says nothing.
func isHeapPage(pg []byte, blockSize int) bool {
	special := int(binary.LittleEndian.Uint16(pg[16:]))
	return special == blockSize || special == 0
}

// block returns held block k, holding it first: from the backup, or a
// zero page for a block the backup's file does not give (new, or beyond
// a truncation) or that the record initialises.
func (r *Replay) block(k blockKey, init bool) (*held, error) {
	h, err := r.store.get(k)
	if err != nil || h != nil {
		return h, err
	}
	rk := relKey{k.rel, k.fork}
	st := r.rel(rk)
	page := r.scratch
	clear(page)
	if !init && !st.created && !st.dropped {
		if err := r.readBase(rk, st, k.blk, page); err != nil {
			return nil, err
		}
	}
	if st.dropped {
		st.dropped = false // a file of that number made again
		st.created, st.sized, st.size = true, true, 0
	}
	h, err = r.store.add(k, page)
	if err != nil {
		return nil, err
	}
	if st.sized && k.blk >= st.size {
		st.size = k.blk + 1
	}
	st.extent = max(st.extent, k.blk+1)
	return h, nil
}

// readBase reads block blk of a relation's file as the backup (or the
// template database it was copied from) has it, zeros beyond its end.
func (r *Replay) readBase(k relKey, st *relState, blk uint32, dst []byte) error {
	if blk >= st.base {
		return nil
	}
	src := k
	if t, ok := r.dbCopies[k.rel.DBOID]; ok {
		src.rel.DBOID = t
	}
	n, err := r.cfg.Backup.NBlocks(src.rel, src.fork)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !st.sized {
		st.size, st.sized = n, true
	}
	if blk >= n {
		return nil
	}
	if err := r.cfg.Backup.ReadBlock(src.rel, src.fork, blk, dst); err != nil {
		return err
	}
	return r.checkPage(src.rel, src.fork, blk, dst)
}

// NBlocks is the number of blocks of a relation fork's file at the target.
func (r *Replay) NBlocks(rel decode.RelFileLocator, fork decode.ForkNumber) (uint32, error) {
	k := relKey{rel, fork}
	st := r.rels[k]
	if st != nil && st.dropped {
		return 0, &Error{Msg: fmt.Sprintf("relation file %d/%d/%d was dropped before the target", rel.SpcOID, rel.DBOID, rel.RelNumber), Err: ErrNoRelation}
	}
	if st == nil || !st.sized {
		src := rel
		if t, ok := r.dbCopies[rel.DBOID]; ok {
			src.DBOID = t
		}
		n, err := r.cfg.Backup.NBlocks(src, fork)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && st != nil {
				n = 0
			} else if errors.Is(err, fs.ErrNotExist) {
				return 0, &Error{Msg: fmt.Sprintf("relation file %d/%d/%d is neither in the backup nor made by the WAL", rel.SpcOID, rel.DBOID, rel.RelNumber), Err: errors.Join(ErrNoRelation, err)}
			} else {
				return 0, err
			}
		}
		st = r.rel(k)
		if st.base < n {
			n = st.base
		}
		st.size, st.sized = max(st.size, n), true
	}
	return max(st.size, st.extent), nil
}

// Page returns block blk of a relation fork as of the target (appended to
// dst) and the LSN of the record that last changed it (0: the backup's
// page, unchanged by the WAL replayed).
func (r *Replay) Page(dst []byte, rel decode.RelFileLocator, fork decode.ForkNumber, blk uint32) ([]byte, xlog.LSN, error) {
	n, err := r.NBlocks(rel, fork)
	if err != nil {
		return dst, 0, err
	}
	if blk >= n {
		return dst, 0, &Error{Msg: fmt.Sprintf("block %d of relation file %d/%d/%d: the file has %d blocks at the target", blk, rel.SpcOID, rel.DBOID, rel.RelNumber, n), Err: ErrNoRelation}
	}
	k := blockKey{rel, fork, blk}
	h, err := r.store.get(k)
	if err != nil {
		return dst, 0, err
	}
	if h != nil {
		return append(dst, h.page...), h.lastLSN, nil
	}
	page := r.scratch
	clear(page)
	st := r.rel(relKey{rel, fork})
	if !st.created {
		if err := r.readBase(relKey{rel, fork}, st, blk, page); err != nil {
			return dst, 0, err
		}
	}
	return append(dst, page...), 0, nil
}
