package incident

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// EventKind names what happened.
type EventKind string

// The event kinds, as `walscope events --kind` takes them.
const (
	EventCreate          EventKind = "create"          // a relation file created (smgr CREATE), not replacing another
	EventDrop            EventKind = "drop"            // a relation file dropped at commit, or at the abort of the transaction that created it
	EventTruncate        EventKind = "truncate"        // TRUNCATE (a new empty file replaces the old) or smgr TRUNCATE (cut to N blocks)
	EventRewrite         EventKind = "rewrite"         // VACUUM FULL, CLUSTER, ALTER TABLE rewrite, REINDEX: a new file replaces the old
	EventDelete          EventKind = "delete"          // rows deleted by one transaction in one relation (at least MinRows)
	EventUpdate          EventKind = "update"          // rows updated by one transaction in one relation (at least MinRows)
	EventCreateDatabase  EventKind = "create_database" // Database CREATE (CREATE_FILE_COPY, CREATE_WAL_LOG)
	EventDropDatabase    EventKind = "drop_database"   // Database DROP
	EventDropSchema      EventKind = "drop_schema"     // rows deleted from pg_namespace by a committed transaction
	EventCheckpoint      EventKind = "checkpoint"      // CHECKPOINT_SHUTDOWN, CHECKPOINT_ONLINE
	EventTimelineSwitch  EventKind = "timeline_switch" // END_OF_RECOVERY, or a checkpoint whose timeline differs from its previous one
	EventRestorePoint    EventKind = "restore_point"   // pg_create_restore_point: XLOG RESTORE_POINT
	EventBackupStart     EventKind = "backup_start"    // the checkpoint a backup started from (BACKUP_END names its redo point)
	EventBackupEnd       EventKind = "backup_end"      // XLOG BACKUP_END
	EventParameterChange EventKind = "parameter_change"
	EventWALSwitch       EventKind = "wal_switch" // XLOG SWITCH (pg_switch_wal, archive_timeout)
)

// EventKinds lists every kind, in the order the documentation gives them.
var EventKinds = []EventKind{EventCreate, EventDrop, EventTruncate, EventRewrite, EventDelete, EventUpdate,
	EventCreateDatabase, EventDropDatabase, EventDropSchema, EventCheckpoint, EventTimelineSwitch,
	EventRestorePoint, EventBackupStart, EventBackupEnd, EventParameterChange, EventWALSwitch}

// Outcomes of the transaction an event belongs to.
const (
	OutcomeCommit = "commit"
	OutcomeAbort  = "abort"
	OutcomeOpen   = "open" // the transaction's end is not in the WAL read
)

// Event is one thing that happened, as the WAL shows it.
type Event struct {
	Kind EventKind
	// Rel is the relation file (the new one of a rewrite or truncation);
	// HasRel tells whether there is one. Database events set SpcOID and
	// DBOID only.
	Rel    decode.RelFileLocator
	HasRel bool
	// Replaced is the file a rewrite or TRUNCATE replaced (zero otherwise).
	Replaced decode.RelFileLocator
	// XID is the top-level transaction (0: none, or not known).
	XID xlog.XID
	// Outcome is the transaction's: OutcomeCommit, OutcomeAbort,
	// OutcomeOpen, or "" for events outside transactions.
	Outcome string
	// FirstLSN is the first record of the event: the file's creation, the
	// first row deleted, the transaction's first record (drops), the
	// checkpoint's redo point.
	FirstLSN xlog.LSN
	// LSN is the record that settled it: the commit or abort record, or
	// the event's own record.
	LSN xlog.LSN
	// Time is the time the WAL gives the event (its commit or abort, the
	// checkpoint, the restore point, the end of recovery); zero if none.
	Time time.Time
	// AsOf is the last timestamp the WAL carried at or before LSN (commit,
	// checkpoint, restore point and end-of-recovery times): Time where the
	// event has one, else a lower bound of when it happened. Zero if the
	// WAL read carries none before it.
	AsOf time.Time
	TLI  xlog.TimeLineID
	// Rows is the rows deleted or updated (delete, update, drop_schema).
	Rows uint64
	// Detail says more, in words: the command that does this, the
	// checkpoint's redo point, the parameters, the restore point's name.
	Detail string
	// DeletedRows are, for drop_schema, the pg_namespace rows deleted
	// (WALNames.NamespaceAt names them).
	DeletedRows []DeletedRow
	// RestorePoint is the name of a restore point.
	RestorePoint string
	// Redo is a checkpoint's redo point; BackupStart the start LSN a
	// BACKUP_END names.
	Redo        xlog.LSN
	BackupStart xlog.LSN
}

// EventsConfig configures an Events accumulator.
type EventsConfig struct {
	// MinRows is the least number of rows deleted (or updated) by one
	// transaction in one relation that makes an event; 0 means 1000.
	MinRows uint64
}

// Events collects the timeline of a stream: relations created, dropped,
// truncated and rewritten, large deletes and updates, databases created and
// dropped, checkpoints, timeline switches, restore points, backups and
// parameter changes.
//
// Feed decoded records in WAL order with Add. A stream read in parallel
// spans takes a part per span (NewPart), filled concurrently and merged in
// WAL order (Merge): what belongs to a transaction is kept per transaction
// and settled at its end record; a transaction and its subtransactions may
// cross the cuts, and the merge settles each end as it reaches it, with
// what every earlier span held for it. The result is exactly that of one
// reader (TestEventsPartsEqualSequential).
type Events struct {
	cfg     EventsConfig
	part    bool
	open    map[xlog.XID]*evXact
	tops    map[xlog.XID]xlog.XID // subtransaction -> top level, as the WAL named them
	ends    []evEnd               // a part's transaction ends, in WAL order
	out     []Event               // settled events, in the order made
	renamed map[decode.RelFileLocator]decode.RelFileLocator
	// lastTime is the last timestamp read; a part's events before its
	// first timestamp get the earlier parts' last (at Merge).
	lastTime time.Time
	lead     int // a part: the events of out made before its first timestamp
	dated    bool
	finished bool
	backups  []Event // BACKUP_END events, for the start checkpoints
}

// evXact is what one transaction did, as far as read.
type evXact struct {
	first   xlog.LSN
	created []evCreated
	rels    map[decode.RelFileLocator]*evRel
	dbs     []evDB
	lastRel decode.RelFileLocator
	lastRS  *evRel
	// locks are the relation OIDs the transaction locked in
	// AccessExclusiveLock (Standby LOCK records, wal_level replica and up)
	locks []uint32
	// cancelled are files created by subtransactions that aborted (their
	// aborts dropped them): not created by the transaction
	cancelled map[decode.RelFileLocator]bool
}

type evCreated struct {
	rel  decode.RelFileLocator
	fork decode.ForkNumber
	lsn  xlog.LSN
}

// evRel is what a transaction did to one relation file.
type evRel struct {
	written              bool // a record of the transaction references a block of it
	deletes, updates     uint64
	firstDel, firstUpd   xlog.LSN
	firstWrite           xlog.LSN
	namespaceRowsDeleted bool
	// nsDeleted are the positions of the pg_namespace rows deleted (a
	// DROP SCHEMA), for naming the schemas from the WAL.
	nsDeleted []DeletedRow
}

// DeletedRow is a heap row a DELETE record removed: its position and the
// DELETE's LSN.
type DeletedRow struct {
	names.TupleID
	LSN xlog.LSN
}

type evDB struct {
	drop   bool
	spc    uint32
	db     uint32
	lsn    xlog.LSN
	detail string
}

// evEnd is a transaction's end record, with what the part read of the
// transaction before it.
type evEnd struct {
	xid     xlog.XID
	lsn     xlog.LSN
	tli     xlog.TimeLineID
	version xlog.Version
	end     rmgr.XactEndInfo
	st      *evXact
}

// NewEvents returns an empty accumulator.
func NewEvents(cfg EventsConfig) *Events {
	if cfg.MinRows == 0 {
		cfg.MinRows = 1000
	}
	return &Events{cfg: cfg, open: map[xlog.XID]*evXact{}, tops: map[xlog.XID]xlog.XID{},
		renamed: map[decode.RelFileLocator]decode.RelFileLocator{}}
}

// NewPart returns an empty accumulator for one span of e's stream, to be
// merged into e with Merge, span after span in WAL order.
func (e *Events) NewPart() *Events {
	p := NewEvents(e.cfg)
	p.part = true
	return p
}

// namespaceRelNumber is pg_namespace's relfilenode as initdb makes it (a
// VACUUM FULL of pg_namespace would give it another).
const namespaceRelNumber = 2615

// Heap info values (src/include/access/heapam_xlog.h).
const (
	evHeapOpMask    = 0x70
	evHeapDelete    = 0x10
	evHeapUpdate    = 0x20
	evHeapHotUpdate = 0x40
)

// Add reads one record.
func (e *Events) Add(rec *decode.Record) {
	if e.finished {
		panic("analyze: Events.Add after Finish")
	}
	switch rec.Header.Rmid {
	case xlog.RmgrXLOG:
		e.addXLOG(rec)
	case xlog.RmgrStorage:
		e.addSmgrTruncate(rec)
	}
	end, isEnd := rmgr.XactEnd(rec)
	xid := rec.Header.XID
	if rec.ToplevelXID != 0 && xid != 0 {
		e.tops[xid] = rec.ToplevelXID
	}
	if isEnd {
		e.setTime(end.Time)
		e.addEnd(rec, end)
		return
	}
	if xid == 0 {
		if d, ok := dbaseEvent(rec); ok && rec.Header.Rmid == xlog.RmgrDatabase {
			kind := EventCreateDatabase
			if d.drop {
				kind = EventDropDatabase
			}
			e.emit(Event{Kind: kind, Rel: decode.RelFileLocator{SpcOID: d.spc, DBOID: d.db}, HasRel: true, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI, Detail: d.detail})
			return
		}
		if rel, fork, ok := rmgr.SmgrCreate(rec); ok && (fork == decode.ForkMain || fork == decode.ForkInit) {
			// a file created before its transaction had an xid (CREATE
			// INDEX does so): settled now, its transaction unknown
			ev := Event{Kind: EventCreate, Rel: rel, HasRel: true, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI,
				Detail: "created before its transaction had an xid"}
			if fork == decode.ForkInit {
				ev.Detail += "; unlogged (init fork)"
			}
			e.emit(ev)
		}
		return
	}
	if t, ok := e.tops[xid]; ok && t != xid {
		xid = t
	}
	x := e.xact(xid, rec.LSN)
	if rel, fork, ok := rmgr.SmgrCreate(rec); ok {
		if fork == decode.ForkMain || fork == decode.ForkInit {
			x.created = append(x.created, evCreated{rel: rel, fork: fork, lsn: rec.LSN})
		}
		return
	}
	if rec.Header.Rmid == xlog.RmgrStandby && rec.Header.Info&0xF0 == 0 && len(rec.MainData) >= 4 {
		// xl_standby_locks: int nlocks, then {xid, dbOid, relOid} each
		m := rec.MainData
		n := int(int32(binary.LittleEndian.Uint32(m)))
		for i := 0; i < n && 4+12*(i+1) <= len(m); i++ {
			x.locks = append(x.locks, binary.LittleEndian.Uint32(m[4+12*i+8:]))
		}
		return
	}
	if rec.Header.Rmid == xlog.RmgrDatabase {
		if d, ok := dbaseEvent(rec); ok {
			d.lsn = rec.LSN
			x.dbs = append(x.dbs, d)
		}
		return
	}
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if b.Fork() != decode.ForkMain {
			continue
		}
		rs := x.rel(b.Rel)
		if !rs.written {
			rs.written, rs.firstWrite = true, rec.LSN
		}
	}
	if rec.Header.Rmid == xlog.RmgrHeap && len(rec.Blocks) > 0 {
		rs := x.rel(rec.Blocks[0].Rel)
		switch rec.Header.Info & evHeapOpMask {
		case evHeapDelete:
			if rs.deletes == 0 {
				rs.firstDel = rec.LSN
			}
			rs.deletes++
			// xl_heap_delete: xmax (4 bytes), offnum (2), ...
			if b := &rec.Blocks[0]; b.Rel.RelNumber == namespaceRelNumber && len(rec.MainData) >= 6 && len(rs.nsDeleted) < 64 {
				rs.nsDeleted = append(rs.nsDeleted, DeletedRow{names.TupleID{Rel: b.Rel, Block: b.Block, Offset: binary.LittleEndian.Uint16(rec.MainData[4:])}, rec.LSN})
			}
		case evHeapUpdate, evHeapHotUpdate:
			if rs.updates == 0 {
				rs.firstUpd = rec.LSN
			}
			rs.updates++
		}
	}
}

func (e *Events) xact(xid xlog.XID, lsn xlog.LSN) *evXact {
	x := e.open[xid]
	if x == nil {
		x = &evXact{first: lsn}
		e.open[xid] = x
	}
	return x
}

func (x *evXact) rel(r decode.RelFileLocator) *evRel {
	if x.lastRS != nil && x.lastRel == r {
		return x.lastRS
	}
	if x.rels == nil {
		x.rels = map[decode.RelFileLocator]*evRel{}
	}
	rs := x.rels[r]
	if rs == nil {
		rs = &evRel{}
		x.rels[r] = rs
	}
	x.lastRel, x.lastRS = r, rs
	return rs
}

// absorb adds o, what the same transaction did elsewhere (an earlier span,
// a subtransaction), to x.
func (x *evXact) absorb(o *evXact) {
	if o == nil {
		return
	}
	if o.first != 0 && (x.first == 0 || o.first < x.first) {
		x.first = o.first
	}
	x.created = append(x.created, o.created...)
	x.dbs = append(x.dbs, o.dbs...)
	x.locks = append(x.locks, o.locks...)
	for r := range o.cancelled {
		if x.cancelled == nil {
			x.cancelled = map[decode.RelFileLocator]bool{}
		}
		x.cancelled[r] = true
	}
	for r, os := range o.rels {
		rs := x.rel(r)
		if os.written && (!rs.written || os.firstWrite < rs.firstWrite) {
			rs.written, rs.firstWrite = true, os.firstWrite
		}
		if os.deletes > 0 && (rs.deletes == 0 || os.firstDel < rs.firstDel) {
			rs.firstDel = os.firstDel
		}
		if os.updates > 0 && (rs.updates == 0 || os.firstUpd < rs.firstUpd) {
			rs.firstUpd = os.firstUpd
		}
		rs.deletes += os.deletes
		rs.updates += os.updates
		rs.nsDeleted = append(rs.nsDeleted, os.nsDeleted...)
	}
}

// addEnd takes a transaction's end: what the accumulator holds of it (and
// of the subtransactions it lists) goes with the end, settled now or, in a
// part, at Merge.
func (e *Events) addEnd(rec *decode.Record, end rmgr.XactEndInfo) {
	st := &evXact{first: rec.LSN}
	ids := append([]xlog.XID{end.XID}, end.Subxacts...)
	for _, id := range ids {
		if x := e.open[id]; x != nil {
			st.absorb(x)
			delete(e.open, id)
		}
	}
	ev := evEnd{xid: end.XID, lsn: rec.LSN, tli: rec.TLI, version: rec.Version, end: end, st: st}
	if e.part {
		e.ends = append(e.ends, ev)
		for _, s := range end.Subxacts {
			e.tops[s] = end.XID
		}
		return
	}
	e.settle(&ev)
}

// settle applies an end record against the transactions the accumulator
// holds (a root's, or one reading the whole stream).
func (e *Events) settle(ev *evEnd) {
	top := ev.xid
	sub := false
	if t, ok := e.tops[ev.xid]; ok && t != ev.xid {
		// the abort of a subtransaction whose top level the WAL named
		// (wal_level logical): it ends nothing
		top, sub = t, true
	}
	st := ev.st
	for _, id := range append([]xlog.XID{ev.xid}, ev.end.Subxacts...) {
		if x := e.open[id]; x != nil {
			st.absorb(x)
			delete(e.open, id)
		}
	}
	for _, s := range ev.end.Subxacts {
		e.tops[s] = top
	}
	sort.SliceStable(st.created, func(i, j int) bool { return st.created[i].lsn < st.created[j].lsn })
	sort.SliceStable(st.dbs, func(i, j int) bool { return st.dbs[i].lsn < st.dbs[j].lsn })
	base := Event{XID: top, LSN: ev.lsn, Time: ev.end.Time, AsOf: ev.end.Time, TLI: ev.tli, Outcome: OutcomeCommit}
	if !ev.end.Commit {
		base.Outcome = OutcomeAbort
	}
	prepared := ""
	if ev.end.Prepared {
		prepared = " (prepared transaction " + quoteGID(ev.end.GID) + ")"
	}
	if sub {
		// Its files are dropped; what it did stays with the top level,
		// which goes on (its records may have been attributed to the top
		// level already, through the top-level xid they carry).
		tx := e.open[top]
		if tx == nil {
			tx = &evXact{first: st.first}
			e.open[top] = tx
		}
		tx.absorb(st)
		for _, r := range ev.end.DroppedRels {
			if tx.cancelled == nil {
				tx.cancelled = map[decode.RelFileLocator]bool{}
			}
			tx.cancelled[r] = true
		}
		for _, r := range ev.end.DroppedRels {
			x := base
			// (its creation may be in a span not merged yet: the abort is
			// the event's first record)
			x.Kind, x.Rel, x.HasRel, x.FirstLSN = EventDrop, r, true, ev.lsn
			x.Detail = "created by a subtransaction, dropped at its abort (ROLLBACK TO SAVEPOINT)"
			e.emit(x)
		}
		return
	}
	newDB := map[uint32]bool{}
	for _, d := range st.dbs {
		x := base
		x.Rel, x.HasRel, x.FirstLSN, x.Detail = decode.RelFileLocator{SpcOID: d.spc, DBOID: d.db}, true, d.lsn, d.detail+prepared
		x.Kind = EventCreateDatabase
		if d.drop {
			x.Kind = EventDropDatabase
		} else {
			if newDB[d.db] {
				continue // one event per database (CREATE_FILE_COPY writes one record per tablespace)
			}
			newDB[d.db] = true
		}
		e.emit(x)
	}
	if ev.end.Commit {
		e.settleCommit(ev, st, base, prepared, newDB)
	} else {
		for _, r := range ev.end.DroppedRels {
			x := base
			x.Kind, x.Rel, x.HasRel, x.FirstLSN = EventDrop, r, true, createdAt(st, r)
			x.Detail = "created by this transaction, dropped at its abort" + prepared
			e.emit(x)
		}
		e.abortedDrops(st, base, prepared)
	}
	e.rowEvents(st, base, prepared)
}

// settleCommit makes the events of a commit's files: pairs of replaced
// files (PairRewrites, the pairing the relation breakdown names files by),
// files created and files dropped.
func (e *Events) settleCommit(ev *evEnd, st *evXact, base Event, prepared string, newDB map[uint32]bool) {
	// the files created, each once (main fork, or the init fork of an
	// unlogged relation), less those a subtransaction's abort dropped
	var mains []decode.RelFileLocator
	created := map[decode.RelFileLocator]evCreated{}
	var order []decode.RelFileLocator
	for _, c := range st.created {
		if st.cancelled[c.rel] {
			continue
		}
		o, dup := created[c.rel]
		if !dup {
			order = append(order, c.rel)
			created[c.rel] = c
		}
		if c.fork == decode.ForkMain && (!dup || o.fork != decode.ForkMain) {
			mains = append(mains, c.rel)
			if dup {
				c.lsn = o.lsn
				created[c.rel] = c
			}
		}
	}
	pairs := stats.PairRewrites(mains, ev.end, ev.version)
	replaced := map[decode.RelFileLocator]decode.RelFileLocator{}
	for nw, old := range pairs {
		replaced[old] = nw
		e.renamed[nw] = old
	}
	// VACUUM FULL, CLUSTER and ALTER TABLE's rewrites go through a
	// transient relation, named by OID in the commit's dropped statistics
	// (15+); the files replaced one by one (RelationSetNewRelfilenumber) are
	// TRUNCATE's or REINDEX's: TRUNCATE leaves some new file (the table's)
	// without WAL in the transaction, REINDEX writes every index it builds.
	transient := map[uint32]bool{}
	for _, s := range ev.end.DroppedStats {
		if s.Kind == rmgr.StatsKindRelation {
			transient[uint32(s.ObjID)] = true
		}
	}
	hasTransient, emptyNew := false, false
	for nw := range pairs {
		if transient[nw.RelNumber] && len(mains) > 1 {
			hasTransient = true
		} else if rs := st.rels[nw]; rs == nil || !rs.written {
			emptyNew = true
		}
	}
	for _, r := range order {
		c := created[r]
		x := base
		x.Rel, x.HasRel, x.FirstLSN = c.rel, true, c.lsn
		if old, ok := pairs[c.rel]; ok {
			x.Replaced = old
			switch {
			case transient[c.rel.RelNumber] && len(mains) > 1:
				x.Kind, x.Detail = EventRewrite, "VACUUM FULL, CLUSTER or ALTER TABLE rewrite: new file replaces "+relNumber(old)
			case hasTransient:
				x.Kind, x.Detail = EventRewrite, "index rebuilt by VACUUM FULL, CLUSTER or ALTER TABLE: new file replaces "+relNumber(old)
			case emptyNew:
				x.Kind, x.Detail = EventTruncate, "TRUNCATE: new empty file replaces "+relNumber(old)
			default:
				x.Kind, x.Detail = EventRewrite, "REINDEX or table rewrite: new file replaces "+relNumber(old)
			}
			x.Detail += prepared
			e.emit(x)
			continue
		}
		if newDB[c.rel.DBOID] {
			continue // the files of a database created in this transaction (CREATE DATABASE ... STRATEGY WAL_LOG)
		}
		x.Kind = EventCreate
		if c.fork == decode.ForkInit {
			x.Detail = "unlogged (init fork)"
		}
		x.Detail += prepared
		e.emit(x)
	}
	for _, r := range ev.end.DroppedRels {
		if _, ok := replaced[r]; ok {
			continue
		}
		x := base
		x.Kind, x.Rel, x.HasRel, x.FirstLSN = EventDrop, r, true, st.first
		if c, ok := created[r]; ok {
			x.FirstLSN, x.Detail = c.lsn, "created and dropped in this transaction"
		}
		x.Detail += prepared
		e.emit(x)
	}
	// Schemas: rows deleted from pg_namespace.
	var nsRels []decode.RelFileLocator
	for r, rs := range st.rels {
		if r.RelNumber == namespaceRelNumber && rs.deletes > 0 {
			nsRels = append(nsRels, r)
		}
	}
	sortRels(nsRels)
	for _, r := range nsRels {
		rs := st.rels[r]
		x := base
		x.Kind, x.Rel, x.HasRel, x.FirstLSN, x.Rows = EventDropSchema, r, true, rs.firstDel, rs.deletes
		x.Detail = fmt.Sprintf("%d row(s) deleted from pg_namespace (file %d, initdb's): the schema's name is not in the WAL read", rs.deletes, namespaceRelNumber) + prepared
		x.DeletedRows = slices.Clone(rs.nsDeleted)
		e.emit(x)
	}
}

// classRelNumber is pg_class's relfilenode as initdb maps it.
const classRelNumber = 1259

// abortedDrops reports the rows an aborted transaction deleted from
// pg_class: relations it dropped, which the abort undid (a rolled-back
// DROP TABLE). The WAL does not name them; the OIDs the transaction locked
// in AccessExclusiveLock are given.
func (e *Events) abortedDrops(st *evXact, base Event, prepared string) {
	var rels []decode.RelFileLocator
	for r, rs := range st.rels {
		if r.RelNumber == classRelNumber && rs.deletes > 0 {
			rels = append(rels, r)
		}
	}
	sortRels(rels)
	for _, r := range rels {
		rs := st.rels[r]
		x := base
		x.Kind, x.Rel, x.HasRel, x.FirstLSN, x.Rows = EventDrop, decode.RelFileLocator{SpcOID: r.SpcOID, DBOID: r.DBOID}, true, rs.firstDel, rs.deletes
		x.Detail = fmt.Sprintf("%d pg_class row(s) deleted and rolled back: a DROP that did not happen", rs.deletes)
		if locks := lockList(st.locks); locks != "" {
			x.Detail += "; relation OIDs locked: " + locks
		}
		x.Detail += prepared
		e.emit(x)
	}
}

// lockList lists the OIDs once each, in the order locked.
func lockList(locks []uint32) string {
	seen := map[uint32]bool{}
	var out []string
	for _, l := range locks {
		if !seen[l] {
			seen[l] = true
			out = append(out, fmt.Sprint(l))
		}
	}
	return strings.Join(out, " ")
}

// rowEvents makes the delete and update events of a settled transaction,
// in the order of their first row.
func (e *Events) rowEvents(st *evXact, base Event, prepared string) {
	type row struct {
		kind  EventKind
		rel   decode.RelFileLocator
		n     uint64
		first xlog.LSN
	}
	var rows []row
	for r, rs := range st.rels {
		if rs.deletes >= e.cfg.MinRows {
			rows = append(rows, row{EventDelete, r, rs.deletes, rs.firstDel})
		}
		if rs.updates >= e.cfg.MinRows {
			rows = append(rows, row{EventUpdate, r, rs.updates, rs.firstUpd})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].first != rows[j].first {
			return rows[i].first < rows[j].first
		}
		return rows[i].kind < rows[j].kind
	})
	for _, r := range rows {
		x := base
		x.Kind, x.Rel, x.HasRel, x.FirstLSN, x.Rows = r.kind, r.rel, true, r.first, r.n
		verb := "deleted"
		if r.kind == EventUpdate {
			verb = "updated"
		}
		x.Detail = fmt.Sprintf("%d rows %s", r.n, verb)
		if base.Outcome == OutcomeAbort {
			x.Detail += ", rolled back"
		}
		x.Detail += prepared
		e.emit(x)
	}
}

func createdAt(st *evXact, r decode.RelFileLocator) xlog.LSN {
	for _, c := range st.created {
		if c.rel == r {
			return c.lsn
		}
	}
	return st.first
}

func relNumber(r decode.RelFileLocator) string { return fmt.Sprint(r.RelNumber) }

func sortRels(rs []decode.RelFileLocator) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.SpcOID != b.SpcOID {
			return a.SpcOID < b.SpcOID
		}
		if a.DBOID != b.DBOID {
			return a.DBOID < b.DBOID
		}
		return a.RelNumber < b.RelNumber
	})
}

func quoteGID(g string) string { return "'" + strings.ReplaceAll(g, "'", "''") + "'" }

// emit adds a settled event.
func (e *Events) emit(ev Event) {
	if ev.AsOf.IsZero() {
		ev.AsOf = e.lastTime
	}
	if e.part && !e.dated {
		e.lead = len(e.out) + 1
	}
	e.out = append(e.out, ev)
}

func (e *Events) setTime(t time.Time) {
	if t.IsZero() {
		return
	}
	e.lastTime, e.dated = t, true
}

// addXLOG reads the XLOG records that are events.
func (e *Events) addXLOG(rec *decode.Record) {
	if c, ok := rmgr.Checkpoint(rec); ok {
		e.setTime(c.Time)
		kind := "shutdown"
		if c.Online {
			kind = "online"
		}
		e.emit(Event{Kind: EventCheckpoint, FirstLSN: c.Redo, LSN: rec.LSN, Time: c.Time, AsOf: c.Time, TLI: rec.TLI, Redo: c.Redo,
			Detail: fmt.Sprintf("%s, redo %s, timeline %d, full_page_writes %s", kind, c.Redo, c.ThisTLI, onOff(c.FullPageWrites))})
		if c.ThisTLI != c.PrevTLI {
			e.emit(Event{Kind: EventTimelineSwitch, FirstLSN: rec.LSN, LSN: rec.LSN, Time: c.Time, AsOf: c.Time, TLI: rec.TLI,
				Detail: fmt.Sprintf("checkpoint: timeline %d to %d", c.PrevTLI, c.ThisTLI)})
		}
		return
	}
	if r, ok := rmgr.EndOfRecovery(rec); ok {
		e.setTime(r.Time)
		e.emit(Event{Kind: EventTimelineSwitch, FirstLSN: rec.LSN, LSN: rec.LSN, Time: r.Time, AsOf: r.Time, TLI: rec.TLI,
			Detail: fmt.Sprintf("END_OF_RECOVERY: timeline %d to %d", r.PrevTLI, r.ThisTLI)})
		return
	}
	if p, ok := rmgr.ParameterChange(rec); ok {
		e.emit(Event{Kind: EventParameterChange, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI,
			Detail: fmt.Sprintf("max_connections=%d max_worker_processes=%d max_wal_senders=%d max_prepared_transactions=%d max_locks_per_transaction=%d wal_level=%s wal_log_hints=%s track_commit_timestamp=%s",
				p.MaxConnections, p.MaxWorkerProcesses, p.MaxWalSenders, p.MaxPreparedXacts, p.MaxLocksPerXact, p.WalLevel, onOff(p.WalLogHints), onOff(p.TrackCommitTimestamp))})
		return
	}
	if name, t, ok := rmgr.RestorePoint(rec); ok {
		e.setTime(t)
		e.emit(Event{Kind: EventRestorePoint, FirstLSN: rec.LSN, LSN: rec.LSN, Time: t, AsOf: t, TLI: rec.TLI,
			RestorePoint: name, Detail: "restore point " + quoteGID(name)})
		return
	}
	if start, ok := rmgr.BackupEnd(rec); ok {
		e.emit(Event{Kind: EventBackupEnd, FirstLSN: start, LSN: rec.LSN, TLI: rec.TLI, BackupStart: start,
			Detail: "backup started at " + start.String()})
		return
	}
	if rmgr.IsWALSwitch(rec) {
		e.emit(Event{Kind: EventWALSwitch, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI, Detail: "switch to a new segment after " + rec.EndLSN.String()})
		return
	}
	if on, ok := rmgr.FPWChange(rec); ok {
		e.emit(Event{Kind: EventParameterChange, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI,
			Detail: "full_page_writes=" + onOff(on)})
	}
}

// addSmgrTruncate reads a Storage TRUNCATE record (xl_smgr_truncate:
// BlockNumber blkno, RelFileLocator, int flags): VACUUM cutting empty pages
// off a table's end, or TRUNCATE of a table created in the same
// transaction.
func (e *Events) addSmgrTruncate(rec *decode.Record) {
	rel, blocks, ok := rmgr.SmgrTruncate(rec)
	if !ok {
		return
	}
	xid := rec.Header.XID
	if t, ok := e.tops[xid]; ok && xid != 0 {
		xid = t
	}
	e.emit(Event{Kind: EventTruncate, Rel: rel, HasRel: true, XID: xid, FirstLSN: rec.LSN, LSN: rec.LSN, TLI: rec.TLI,
		Detail: fmt.Sprintf("file cut to %d blocks (smgr TRUNCATE: VACUUM, or TRUNCATE of a table created in its transaction)", blocks)})
}

// dbaseEvent decodes a Database CREATE or DROP record.
func dbaseEvent(rec *decode.Record) (evDB, bool) {
	m := rec.MainData
	le := binary.LittleEndian
	u32 := func(off int) uint32 {
		if off+4 > len(m) {
			return 0
		}
		return le.Uint32(m[off:])
	}
	info := rec.Header.Info & 0xF0
	v := rec.Version
	switch {
	case info == 0x00 && len(m) >= 16: // CREATE, CREATE_FILE_COPY (15+): db, spc, src db, src spc
		return evDB{db: u32(0), spc: u32(4), detail: fmt.Sprintf("copy of database %d (tablespace %d)", u32(8), u32(12))}, true
	case info == 0x10 && v >= xlog.V15 && len(m) >= 8: // CREATE_WAL_LOG: db, spc
		return evDB{db: u32(0), spc: u32(4), detail: "STRATEGY WAL_LOG"}, true
	case info == 0x10 && v <= xlog.V12 && len(m) >= 8: // DROP of one tablespace: db, spc
		return evDB{drop: true, db: u32(0), spc: u32(4)}, true
	case (info == 0x10 && v <= xlog.V14 || info == 0x20 && v >= xlog.V15) && len(m) >= 8: // DROP: db, n, tablespaces
		d := evDB{drop: true, db: u32(0)}
		if n := int32(u32(4)); n > 0 && len(m) >= 12 {
			d.spc = u32(8)
			if n > 1 {
				d.detail = fmt.Sprintf("%d tablespaces", n)
			}
		}
		return d, true
	}
	return evDB{}, false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Merge adds part p, the span of the stream that follows what e holds, and
// settles its transaction ends.
func (e *Events) Merge(p *Events) {
	// events made before the part's first timestamp are dated by the
	// earlier parts' last
	for i := 0; i < p.lead && i < len(p.out); i++ {
		if p.out[i].AsOf.IsZero() {
			p.out[i].AsOf = e.lastTime
		}
	}
	for k, v := range p.tops {
		if _, ok := e.tops[k]; !ok {
			e.tops[k] = v
		}
	}
	// the part's immediate events (XLOG, smgr TRUNCATE) and its ends are
	// in WAL order each; settled events are sorted by LSN at Finish
	e.out = append(e.out, p.out...)
	for i := range p.ends {
		e.settle(&p.ends[i])
	}
	// what the part read of transactions not ended in it
	xids := make([]xlog.XID, 0, len(p.open))
	for xid := range p.open {
		xids = append(xids, xid)
	}
	sort.Slice(xids, func(i, j int) bool { return xids[i] < xids[j] })
	for _, xid := range xids {
		top := xid
		if t, ok := e.tops[xid]; ok && t != xid {
			top = t
		}
		x := e.open[top]
		if x == nil {
			x = &evXact{}
			e.open[top] = x
		}
		x.absorb(p.open[xid])
	}
	if p.dated {
		e.lastTime, e.dated = p.lastTime, true
	}
}

// Finish settles what is left (the transactions whose end is not in the
// WAL read: their files created and rows changed, as OutcomeOpen; the
// backups' start checkpoints) and returns every event in WAL order (by
// LSN, the record that settled it).
func (e *Events) Finish() []Event {
	if e.finished {
		return e.out
	}
	e.finished = true
	xids := make([]xlog.XID, 0, len(e.open))
	for xid := range e.open {
		xids = append(xids, xid)
	}
	sort.Slice(xids, func(i, j int) bool { return xids[i] < xids[j] })
	for _, xid := range xids {
		st := e.open[xid]
		sort.SliceStable(st.created, func(i, j int) bool { return st.created[i].lsn < st.created[j].lsn })
		seen := map[decode.RelFileLocator]bool{}
		for _, c := range st.created {
			if seen[c.rel] {
				continue
			}
			seen[c.rel] = true
			ev := Event{Kind: EventCreate, Rel: c.rel, HasRel: true, XID: xid, Outcome: OutcomeOpen, FirstLSN: c.lsn, LSN: c.lsn,
				Detail: "its transaction's end is not in the WAL read"}
			e.out = append(e.out, ev)
		}
		base := Event{XID: xid, Outcome: OutcomeOpen}
		n := len(e.out)
		e.rowEvents(st, base, "")
		for i := n; i < len(e.out); i++ {
			e.out[i].LSN = e.out[i].FirstLSN
			e.out[i].Detail += " (its transaction's end is not in the WAL read)"
		}
	}
	e.open = map[xlog.XID]*evXact{}
	sort.SliceStable(e.out, func(i, j int) bool { return e.out[i].LSN < e.out[j].LSN })
	// Backups: BACKUP_END names the redo point of the checkpoint the backup
	// started from.
	var starts []Event
	for _, b := range e.out {
		if b.Kind != EventBackupEnd {
			continue
		}
		found := false
		for _, c := range e.out {
			if c.Kind == EventCheckpoint && c.Redo == b.BackupStart && c.LSN < b.LSN {
				s := c
				s.Kind, s.Detail = EventBackupStart, fmt.Sprintf("backup start checkpoint (redo %s), the backup ended at %s", c.Redo, b.LSN)
				starts = append(starts, s)
				found = true
			}
		}
		if !found {
			starts = append(starts, Event{Kind: EventBackupStart, FirstLSN: b.BackupStart, LSN: b.BackupStart, TLI: b.TLI,
				Detail: fmt.Sprintf("backup start point; its checkpoint is not in the WAL read; the backup ended at %s", b.LSN)})
		}
	}
	if len(starts) > 0 {
		e.out = append(e.out, starts...)
		sort.SliceStable(e.out, func(i, j int) bool { return e.out[i].LSN < e.out[j].LSN })
	}
	return e.out
}

// Renamed maps a relation file that replaced another in one transaction to
// the file it replaced, as the events found them (settled commits).
func (e *Events) Renamed() map[decode.RelFileLocator]decode.RelFileLocator { return e.renamed }

// NameSchemas rewrites a drop_schema event's detail with the names of the
// schemas whose pg_namespace rows it deleted, where w saw them.
func NameSchemas(w *names.WALNames, ev *Event) {
	if ev.Kind != EventDropSchema || w == nil {
		return
	}
	var names []string
	for _, d := range ev.DeletedRows {
		if n, ok := w.NamespaceAt(d.TupleID, d.LSN); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 || len(names) != len(ev.DeletedRows) {
		return
	}
	ev.Detail = fmt.Sprintf("schema %s dropped (%d row(s) deleted from pg_namespace, named from the WAL)", strings.Join(names, ", "), ev.Rows)
}

// EventName names an event's relation through n: the name of its file or,
// for a file that replaced another, of the file replaced (and so on back),
// as the catalog may predate the rewrite; "" if n does not know it.
func (e *Events) EventName(n names.RelNamer, ev *Event) string {
	if n == nil || !ev.HasRel || ev.Rel.RelNumber == 0 {
		return ""
	}
	if s := n.Name(ev.Rel); s != "" {
		return s
	}
	r := ev.Rel
	if ev.Replaced.RelNumber != 0 {
		r = ev.Replaced
		if s := n.Name(r); s != "" {
			return s
		}
	}
	for i := 0; i < 64; i++ {
		o, ok := e.renamed[r]
		if !ok {
			break
		}
		r = o
		if s := n.Name(r); s != "" {
			return s
		}
	}
	return ""
}
