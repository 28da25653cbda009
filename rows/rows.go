// Package rows gives the rows one transaction changed, from a base backup
// and the WAL, without a server: every row its heap records (and those of
// its subtransactions that committed with it) inserted, updated or
// deleted, in WAL order, with the old version as the page held it just
// before the record and the new one as it held it just after; a TRUNCATE
// or DROP TABLE as every row of the table as of just before it. Values are
// deformed with the catalog as of just before the transaction's commit (a
// version the transaction wrote of a table it created or altered: as it
// left the catalog; Relation.Before) and detoasted (old TOAST values from
// the TOAST table as of then, which still holds the chunks the transaction
// deleted, new ones from the chunks it inserted).
//
// One replay (package replay) runs from the backup's start to just before
// the transaction's commit record (recovery_target_xid with
// recovery_target_inclusive off): there the transaction's own changes are
// not yet visible, so the catalog, the TOAST tables and the rows of a
// truncated or dropped table are as they were before it, while the
// replay's watch (replay.Config.WatchXID) has kept each row it changed.
//
// Without a backup (Config.Backup nil; walonly.go), the rows are what the
// WAL alone carries: pages known from their images in the WAL read, the
// tuples records log (new rows; old rows or keys at wal_level logical),
// the columns from a catalog file (ReadCatalog) or the catalog pages the
// WAL read shows, and a count of the row
// versions the WAL does not hold, and why (Result.Missing).
package rows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// Op is what a change did.
type Op string

// Operations. Truncate and Drop give one change per row the table had just
// before the TRUNCATE or DROP TABLE, its old version.
const (
	Insert   Op = "insert"
	Update   Op = "update"
	Delete   Op = "delete"
	Truncate Op = "truncate"
	Drop     Op = "drop"
)

// Errors.
var (
	// ErrNotCommitted: the transaction ended in an abort (no row changed).
	ErrNotCommitted = errors.New("transaction did not commit")
	// ErrNoEnd: the WAL read has no commit or abort record of the
	// transaction.
	ErrNoEnd = errors.New("transaction has no commit or abort record in the WAL read")
	// ErrSubtransaction: the xid is a subtransaction's; its rows are its
	// top-level transaction's, asked for by that one's xid.
	ErrSubtransaction = errors.New("xid of a subtransaction")
)

// Config is what Changes reads.
type Config struct {
	Backup  replay.Backup
	WAL     xlog.Source
	Options xlog.Options
	XID     xlog.XID
	// Relation, if set, keeps only the changes of this relation (a name as
	// replay.Resolve takes it, as of just before the commit).
	Relation string
	// Database resolves Relation in this database only (0: any).
	Database uint32
	// MemoryBytes bounds the pages the replay holds in memory (0: 256
	// MiB), ChangeMemoryBytes the transaction's changes it keeps (0: 4
	// MiB); beyond, both go to files of ours in TempDir ("": the
	// system's).
	MemoryBytes       int64
	ChangeMemoryBytes int64
	TempDir           string
	// HoldAll has the replay hold every page the WAL changes, instead of
	// first reading the WAL once for the files the transaction needs.
	HoldAll bool
	// Prescan, if set, is that first reading started ahead of Open
	// (StartPrescan), while the backup was being opened.
	Prescan *Prescan

	// Without a backup (Backup nil), what the WAL alone carries
	// (walonly.go): the WAL is read from Start (0: its first segment),
	// pages are BlockSize bytes (0: 8192), and the relations' columns come
	// from Catalog (ReadCatalog), or with none from the catalog pages the
	// WAL read shows (ErrNoCatalog naming what it lacks).
	Start     xlog.LSN
	BlockSize uint32
	Catalog   *CatalogFile

	holdMore []decode.RelFileLocator // files held besides those prescan names
}

// Relation is a relation the transaction changed, as of just before its
// commit.
type Relation struct {
	*replay.Relation
	// Table gives its columns (Columns), name and CREATE TABLE.
	Table *table.Table
	// Key lists the columns (indexes into Table.Columns) that identify a
	// row: the primary key's, else the replica identity index's; nil when
	// there is neither (rows are then matched by all their columns).
	Key     []int
	KeyKind string // "primary key", "replica identity" or ""
	// Created: the transaction created the table (its columns are as the
	// transaction left them); the undo drops it.
	Created bool
	// Before is, for a table whose definition the transaction changed
	// (ALTER TABLE adding, dropping, renaming or retyping a column,
	// renaming the table, or rewriting it), the table as of before the
	// transaction; the Relation itself is then as the transaction left
	// it. A row version in the layout of before (Row.Rel) is read with
	// Before's columns. nil for the other tables.
	Before  *Relation
	desc    []tuple.Attr
	toastID uint32
	toast   *table.ToastIndex // its TOAST values (nil without a TOAST table)
}

// Name is the relation's schema-qualified, quoted name.
func (r *Relation) Name() string { return r.Table.QualifiedName() }

// Row is one version of a row: its ctid and its columns' values (the
// order of Relation.Table.Columns), plain datums (detoasted,
// decompressed; nil for NULL).
type Row struct {
	Block  uint32
	Offset uint16
	Values [][]byte
	Nulls  []bool
	// Unknown marks the columns the WAL does not give (without a backup:
	// the non-key columns of an old row logged as its replica identity
	// key); nil when all are known. An unknown column is also Nulls.
	Unknown []bool

	// Rel is the relation whose columns Values follow when they are not
	// the change's: Change.Rel.Before for a version of a table the
	// transaction altered that lies as it was before it (an old version
	// from before the transaction, or any in the file a rewrite replaced);
	// nil otherwise.
	Rel *Relation

	toastMissing, addedMissing bool // why columns are Unknown (walonly.go)
}

// layout is the relation whose columns the row's values follow.
func (r *Row) layout(rel *Relation) *Relation {
	if r.Rel != nil {
		return r.Rel
	}
	return rel
}

// Change is one row changed.
type Change struct {
	LSN xlog.LSN
	XID xlog.XID // the transaction or the subtransaction whose record it is
	Op  Op
	Rel *Relation
	Old *Row // Update, Delete, Truncate, Drop
	New *Row // Insert, Update
	// Err is set when the row could not be decoded (a damaged tuple, a
	// TOAST value missing): Old or New is then nil.
	Err error
	// Without a backup: where Old and New were read (Source), and why the
	// one that is not there is not in the WAL ("" with a backup).
	OldFrom, NewFrom       Source
	OldMissing, NewMissing string

	groupSize int // Truncate, Drop: how many rows the one TRUNCATE or DROP gives
}

// Result is the rows a transaction changed.
type Result struct {
	XID       xlog.XID
	CommitLSN xlog.LSN
	Subxacts  []xlog.XID // the subtransactions that committed with it
	// Changes are the changes, all in memory, as Changes (and a read
	// without a backup) gives them; nil from Open, whose changes are
	// read one at a time (All, Backward).
	Changes []Change
	// Relations are the relations changed, in the order of their first
	// change.
	Relations []*Relation
	// Skipped says what the transaction did that is not given as rows,
	// and why (a system catalog's rows, a table's columns it changed).
	Skipped []string
	// Created names (qualified, quoted) the tables and materialized views
	// the transaction created and did not drop, in the order it created
	// them, with "MATERIALIZED VIEW " before a view's name: their rows
	// are among Changes (inserts), and the undo drops them.
	Created []string
	// WALOnly: read without a backup; Missing then counts the rows whose
	// old or new version the WAL read does not hold, per relation,
	// operation and reason.
	WALOnly bool
	Missing []Missing
	// CatalogFromWAL: without a catalog file, the columns came from the
	// catalog pages the WAL read shows.
	CatalogFromWAL bool
	// Unlogged: the tables the transaction had unlogged for a while
	// (ALTER TABLE SET UNLOGGED), whose changes then are not in the WAL
	// (counted in Missing), and which rows they touched as far as it
	// tells.
	Unlogged []UnloggedRows
	// UnloggedTables are the tables unlogged throughout the transaction
	// (CREATE UNLOGGED TABLE, or SET UNLOGGED before it, and not SET
	// LOGGED by it) in the databases it wrote, or --relation's alone: no
	// change of theirs is WAL-logged, so whatever the transaction did to
	// them is neither given nor undone, and the WAL cannot tell whether it
	// did anything.
	UnloggedTables []string

	r *replay.Replay
	// the tables the transaction altered (Relation.Before), as the undo
	// script puts them back: their rows as of before it read from the
	// pages by pages (kept when Changes has read the changes)
	alters []*alteration
	pages  *builder
	// from Open (stream): the replay's changes, read back and decoded by
	// b (with a backup) or w (without) as All and Backward yield them;
	// total is how many they yield
	stream bool
	list   *replay.ChangeList
	b      *builder
	w      *walBuilder
	total  int
}

// Close releases the replay's pages and the changes it kept.
func (res *Result) Close() error { return res.r.Close() }

// Len is how many changes All yields.
func (res *Result) Len() int {
	if !res.stream {
		return len(res.Changes)
	}
	return res.total
}

// All yields the changes in WAL order (the rows of a TRUNCATE or DROP in
// their physical order, at the change of pg_class that made it), decoded
// one at a time: each is the caller's, and none is kept. An error is one
// reading the changes back (a change that cannot be decoded is a Change
// with Err); it ends the sequence.
func (res *Result) All() iter.Seq2[*Change, error] { return res.read(false) }

// Backward yields the changes of All in reverse order (what the undo
// script undoes first comes first), but for the rows of one TRUNCATE or
// DROP, which come in their physical order (as the undo inserts them
// back), read from the pages as they are given.
func (res *Result) Backward() iter.Seq2[*Change, error] { return res.read(true) }

func (res *Result) read(backward bool) iter.Seq2[*Change, error] {
	return func(yield func(*Change, error) bool) {
		if !res.stream {
			ch := res.Changes
			if !backward {
				for i := range ch {
					if !yield(&ch[i], nil) {
						return
					}
				}
				return
			}
			for i := len(ch) - 1; i >= 0; i-- {
				j := i
				if op := ch[i].Op; op == Truncate || op == Drop {
					// one TRUNCATE's or DROP's rows: in their order
					for j > 0 && ch[j-1].Op == op && ch[j-1].LSN == ch[i].LSN && ch[j-1].Rel == ch[i].Rel {
						j--
					}
				}
				for k := j; k <= i; k++ {
					if ch[k].Op == Truncate || ch[k].Op == Drop {
						ch[k].groupSize = i - j + 1
					}
					if !yield(&ch[k], nil) {
						return
					}
				}
				i = j
			}
			return
		}
		b := res.b
		seq, idx, step := res.list.All(), -1, 1
		if backward {
			seq, step = res.list.Backward(), -1
			if b != nil {
				idx = b.count
			}
		}
		group := func(i int) bool {
			if b == nil {
				return true
			}
			gs := b.groups[i]
			for n := range gs {
				g := gs[n]
				if backward {
					g = gs[len(gs)-1-n]
				}
				if !b.emit(g, yield) {
					return false
				}
			}
			return true
		}
		for c, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			idx += step
			if backward && !group(idx) {
				return
			}
			var ch *Change
			if res.w != nil {
				if cls := res.w.classOf(c); cls != nil {
					ch, err = res.w.change(c, cls)
				}
			} else if k, ok := b.rowKey(c); ok && b.wanted(k) {
				ch, err = b.rowChange(c, k)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if ch != nil && !yield(ch, nil) {
				return
			}
			if !backward && !group(idx) {
				return
			}
		}
	}
}

// Replay is the replay the changes were read from (stopped just before the
// transaction's commit).
func (res *Result) Replay() *replay.Replay { return res.r }

// firstNormalObjectID is FirstNormalObjectId (transam.h): relations below
// are the system's.
const firstNormalObjectID = 16384

// pgClassOID is pg_class's own oid (RelationRelationId).
const pgClassOID = 1259

// Changes replays the WAL to just before cfg.XID's commit and returns the
// rows it changed, all in memory (Result.Changes). Open gives the same one
// at a time, in bounded memory whatever the transaction's size.
func Changes(cfg Config) (*Result, error) {
	res, err := Open(cfg)
	if err != nil || !res.stream {
		return res, err
	}
	res.Changes = make([]Change, 0, res.total)
	for c, err := range res.All() {
		if err != nil {
			res.Close()
			return nil, err
		}
		res.Changes = append(res.Changes, *c)
	}
	res.stream, res.b, res.w, res.list = false, nil, nil, nil
	return res, nil
}

// Open replays the WAL to just before cfg.XID's commit and returns the
// transaction's relations, and its changes to be read one at a time
// (Result.All, Result.Backward): the replay keeps them in a file beyond
// cfg.ChangeMemoryBytes, and they are decoded as they are read; the rows
// of a table the transaction truncated or dropped are read from its pages
// when they are given (only the rows the transaction itself wrote to it
// before are held). Without a backup too, the changes are read back and
// decoded one at a time (once beforehand, to count what the WAL lacks).
func Open(cfg Config) (*Result, error) {
	if cfg.XID < 3 {
		return nil, fmt.Errorf("transaction %d: %w", cfg.XID, replay.ErrTarget)
	}
	if cfg.Backup == nil {
		return walOnly(cfg)
	}
	rc := replay.Config{Backup: cfg.Backup, WAL: cfg.WAL, Options: cfg.Options,
		Target: replay.Target{XID: cfg.XID}, MemoryBytes: cfg.MemoryBytes, ChangeMemoryBytes: cfg.ChangeMemoryBytes, TempDir: cfg.TempDir, WatchXID: cfg.XID}
	toastLater := false
	if !cfg.HoldAll {
		// a backup still being opened is not waited for: its TOAST
		// files are looked at after the replay
		pb, pending := cfg.Backup.(*replay.PendingBackup)
		toastLater = pending && !pb.Ready()
		hold, subxacts, endAt, checked, ok, err := prescan(cfg, toastLater)
		if err != nil {
			return nil, err
		}
		if ok {
			for _, f := range cfg.holdMore {
				hold[f] = true
			}
			rc.Hold, rc.HoldCatalogs = holdSet(hold), true
			rc.WatchSubxacts = subxacts
			if rc.Options.StopAt == 0 {
				// the replay stops at the end record: the WAL after it
				// is not read (its readers read ahead otherwise)
				rc.Options.StopAt = endAt
			}
			// if the prescan read from the backup's start, it checked
			// the CRC of every record the replay reads (to the
			// transaction's end, same files and options): once is enough
			rc.Options.SkipCRC = checked
		}
	}
	r, end, lsn, err := runToCommit(rc, cfg.XID)
	if err != nil {
		return nil, err
	}
	if rc.Hold != nil && toastLater {
		// a row changed may point to a TOAST value the transaction did
		// not touch: the TOAST files the replay did not hold must be as
		// the backup has them, no record of theirs left out; else it is
		// replayed again holding them (TOAST files made since the backup
		// are held anyway). Asked after the replay, so that a backup
		// still being opened (a compressed tar) was not waited for first.
		toast, err := replay.ToastFiles(cfg.Backup, r.Version())
		if err != nil {
			r.Close()
			return nil, err
		}
		var more []decode.RelFileLocator
		for _, f := range toast {
			if !r.Holds(f) && r.LeftOut(f) {
				more = append(more, f)
			}
		}
		if len(more) > 0 {
			r.Close()
			toastReplays.Add(1)
			return openHolding(cfg, append(slices.Clip(cfg.holdMore), more...))
		}
	}
	res := &Result{XID: cfg.XID, CommitLSN: lsn, Subxacts: end.Subxacts, r: r}
	b := &builder{res: res, r: r, added: table.PageReader{R: r}, cats: map[uint32]*dbState{}, rels: map[relKey]*Relation{},
		xids: append([]xlog.XID{cfg.XID}, end.Subxacts...)}
	if cfg.Relation != "" {
		rel, err := r.Resolve(cfg.Relation, cfg.Database)
		if errors.Is(err, replay.ErrNoRelation) {
			// a table the transaction created: as it left the catalog
			r.Xacts().AssumeCommitted(b.xids...)
			rel, err = r.Resolve(cfg.Relation, cfg.Database)
			r.Xacts().AssumeCommitted()
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		b.only = &relKey{rel.Database.OID, rel.Class.OID}
	}
	res.stream, res.list, res.b, res.pages = true, r.WatchedChanges().WithCuts(), b, b
	b.list = res.list
	if err := b.build(res.list); err != nil {
		r.Close()
		return nil, err
	}
	if err := b.unloggedTables(); err != nil {
		r.Close()
		return nil, err
	}
	if rc.Hold != nil {
		// a table the transaction altered without writing its rows (DROP
		// COLUMN): the undo reads its rows of before from a file the
		// first reading did not name; replayed again holding it
		var more []decode.RelFileLocator
		for _, a := range res.alters {
			if (!a.inPlace || len(a.restore) > 0) && !r.Holds(a.rel.Before.Locator) {
				more = append(more, a.rel.Before.Locator)
			}
		}
		if len(more) > 0 {
			r.Close()
			return openHolding(cfg, more)
		}
	}
	return res, nil
}

// openHolding is Open with the replay holding the files more besides
// those the first reading names.
func openHolding(cfg Config, more []decode.RelFileLocator) (*Result, error) {
	cfg.HoldAll = false
	cfg.holdMore = more
	return Open(cfg)
}

// runToCommit replays to just before xid's end, which must be a commit.
func runToCommit(rc replay.Config, xid xlog.XID) (*replay.Replay, rmgr.XactEndInfo, xlog.LSN, error) {
	r, err := replay.Run(rc)
	if errors.Is(err, replay.ErrNotReached) {
		return nil, rmgr.XactEndInfo{}, 0, fmt.Errorf("transaction %d: %w (%v)", xid, ErrNoEnd, err)
	}
	if err != nil {
		return nil, rmgr.XactEndInfo{}, 0, err
	}
	end, lsn, ok := r.WatchedEnd()
	if !ok {
		r.Close()
		return nil, end, 0, fmt.Errorf("transaction %d: %w", xid, ErrNoEnd)
	}
	if !end.Commit {
		r.Close()
		return nil, end, 0, fmt.Errorf("transaction %d, ended at %s: %w (it was rolled back: no row changed)", xid, lsn, ErrNotCommitted)
	}
	return r, end, lsn, nil
}

type relKey struct{ db, oid uint32 }

// dbState is a database's catalog as of just before the commit and which
// relation each file the transaction wrote belongs to.
type dbState struct {
	cat *catalog.Catalog
	// after is the catalog as the transaction left it (its own changes
	// visible), read for the relations it created (created)
	after   *catalog.Catalog
	created map[uint32]bool
	// transientToast: TOAST tables the transaction created and dropped
	transientToast map[uint32]bool
	files          map[decode.RelFileLocator]uint32 // file -> relation oid
	class          decode.RelFileLocator            // pg_class's file
	attr           decode.RelFileLocator            // pg_attribute's file
	toast          *insertedToast                   // the TOAST chunks the transaction inserted (where they lie)
}

type builder struct {
	res  *Result
	r    *replay.Replay
	xids []xlog.XID // the transaction and its committed subtransactions
	cats map[uint32]*dbState
	rels map[relKey]*Relation
	only *relKey
	// what the transaction did to the relations a TRUNCATE or DROP
	// empties, since its start or their last one
	live map[relKey]*window
	// the relations with a truncate or drop, and the files that are not
	// truncations (rewrites keeping the rows)
	events map[xlog.LSN][]event
	// the files an ALTER TABLE of the transaction rewrote a table into,
	// and the LSN of the switch to each: the inserts before it are the
	// rewrite's copies of the rows, not changes
	copies map[decode.RelFileLocator]xlog.LSN
	// cutRows: how many rows each TRUNCATE in place (a Storage TRUNCATE
	// of a file the transaction made: ChangeCut) gives, by its LSN: the
	// tuples of the pages it cut that the transaction, committed, leaves
	// visible
	cutRows map[xlog.LSN]int
	// list: the changes, read again for a TRUNCATE in place's pages
	list *replay.ChangeList
	// unlogged: the spans in which the transaction had a table unlogged
	// (ALTER TABLE SET UNLOGGED, to SET LOGGED or the commit), in WAL
	// order: its changes then are not in the WAL (Result.Missing)
	unlogged []unloggedSpan
	// the tables whose definition the transaction changed (as of before
	// it: Relation.Before), in the order of their first change
	altered map[relKey]*Relation
	// attrHist: the changes of the transaction to the columns of the
	// tables it altered (pg_attribute rows as each change left them), in
	// WAL order; layouts: the columns as of after the first n of them
	// (layoutAt), made once each
	attrHist map[relKey][]attrChange
	layouts  map[layoutKey]*Relation
	// the TRUNCATEs and DROPs, their rows given after the change of their
	// index among the changes read back (count of them)
	groups map[int][]*emptiedGroup
	count  int
	added  table.PageReader // the rows a TRUNCATE or DROP gives that the transaction wrote
}

// window is what the transaction did to a relation a TRUNCATE or DROP
// empties, since its start or the relation's previous TRUNCATE: the rows
// as of before the transaction it removed (while they are the table's:
// before), and where the rows it added that are still there lie (their
// file). It holds where the transaction's own changes of the table are,
// not rows.
type window struct {
	before  bool
	removed map[ctid]bool
	added   map[ctid]decode.RelFileLocator
	// file, when set, is a file a rewrite of the transaction copied the
	// table's rows into: the table's rows are then the versions in it
	// that the transaction, committed, leaves visible (once the table
	// has left a file, nothing changes in it), not before, removed and
	// added
	file decode.RelFileLocator
}

// emptiedGroup is one TRUNCATE or DROP: its rows are those as of before
// the transaction (if before), read from the pages when they are given,
// less those removed, and the rows added; n of them.
type emptiedGroup struct {
	lsn     xlog.LSN
	xid     xlog.XID
	op      Op
	rel     *Relation
	before  bool
	removed map[ctid]bool
	added   []ctid
	files   map[ctid]decode.RelFileLocator
	file    decode.RelFileLocator // of the added rows files does not name
	n       int
	// cut: a TRUNCATE in place of file: its rows are the visible tuples
	// of the pages it cut (ChangeCut), not read from the file
	cut bool
}

type ctid struct {
	blk uint32
	off uint16
}

type event struct {
	op  Op
	rel relKey
	// rewrite: a switch of the table to file, whose rows the
	// transaction's rewrite copied into it (op is then "")
	rewrite bool
	file    decode.RelFileLocator
	// cut: a TRUNCATE of the table's file in place (op Truncate): file
	// cut to nothing (heap_truncate_one_rel)
	cut bool
}

// attrChange is a pg_attribute row of a table as a change of the
// transaction left it.
type attrChange struct {
	lsn  xlog.LSN
	attr catalog.Attribute
}

type layoutKey struct {
	rel relKey
	n   int
}

// UnloggedRows is a table the transaction had unlogged from From (the
// pg_class update of ALTER TABLE SET UNLOGGED; 0: before it) to To (that of
// SET LOGGED; 0: the commit). With both, the rows its changes then touched:
// Gone, the rows as of From that To's copies do not hold (deleted, or the
// version an update replaced), in physical order; New, the copies that
// were not among them (inserted, or an update's new version), in the
// order copied. Without: nil, the WAL does not tell.
type UnloggedRows struct {
	Rel       *Relation
	From, To  xlog.LSN
	Gone, New []*Row
}

// unloggedSpan is a table made unlogged by the transaction: from the
// pg_class update of ALTER TABLE SET UNLOGGED (before: the file it left,
// its rows as of then) to that of SET LOGGED (to; after: the file whose
// rows it copied, as inserts, from the unlogged one), or to the commit (to
// 0).
type unloggedSpan struct {
	rel           relKey
	from, to      xlog.LSN
	before, after decode.RelFileLocator
}

// fileSwitch is a pg_class update giving a table a new, empty file: a
// TRUNCATE, or a rewrite that copied the rows into it first.
type fileSwitch struct {
	lsn  xlog.LSN
	rel  relKey
	file decode.RelFileLocator
}

func (b *builder) db(oid uint32) (*dbState, error) {
	if s := b.cats[oid]; s != nil {
		return s, nil
	}
	cat, err := b.r.Catalog(oid)
	if err != nil {
		return nil, err
	}
	s := &dbState{cat: cat, files: map[decode.RelFileLocator]uint32{}, toast: newInsertedToast(b.r),
		created: map[uint32]bool{}, transientToast: map[uint32]bool{}}
	for _, c := range cat.Classes() {
		switch c.Kind {
		case 'r', 'm', 't', 'p':
		default:
			continue
		}
		if loc, err := cat.Locator(c); err == nil {
			s.files[loc] = c.OID
		}
	}
	if pc := cat.Class(pgClassOID); pc != nil {
		s.class, _ = cat.Locator(pc)
	}
	if pa := cat.Class(catalog.AttributeRelationID); pa != nil {
		s.attr, _ = cat.Locator(pa)
	}
	b.cats[oid] = s
	return s, nil
}

// build reads the replay's changes (three times, none kept): the
// catalog's story, the TOAST chunks the transaction wrote, then the
// relations changed and the rows of TRUNCATEs and DROPs; All decodes the
// others as it reads them a fourth time.
func (b *builder) build(changes *replay.ChangeList) error {
	// first the catalog's story: files switched (TRUNCATE, or a rewrite),
	// tables dropped or made by the transaction
	b.events = map[xlog.LSN][]event{}
	b.attrHist = map[relKey][]attrChange{}
	altered := map[relKey]bool{}
	var alteredOrder []relKey
	var switches, transient []fileSwitch
	lastSwitch := map[relKey]xlog.LSN{}
	rewritten := map[xlog.LSN]bool{} // a switch of a rewrite (transient table)
	b.cutRows = map[xlog.LSN]int{}
	for c, err := range changes.All() {
		if err != nil {
			return err
		}
		if c.Op == replay.ChangeTruncate {
			continue // the pg_class update of the same TRUNCATE says which file replaced which
		}
		s, err := b.db(c.Rel.DBOID)
		if err != nil {
			return err
		}
		if c.Op == replay.ChangeCut {
			if err := b.noteCut(s, c); err != nil {
				return err
			}
			continue
		}
		if c.Rel == s.attr && c.Rel != (decode.RelFileLocator{}) {
			if k, a, ok := b.columnsChanged(s, c); ok {
				b.attrHist[k] = append(b.attrHist[k], attrChange{c.LSN, *a})
				if !altered[k] {
					altered[k] = true
					alteredOrder = append(alteredOrder, k)
				}
			}
			continue
		}
		if c.Rel != s.class {
			continue
		}
		dec := s.cat.Decoder()
		var oldC, newC *catalog.Class
		if c.Old != nil {
			if x, err := dec.Class(c.Old); err == nil {
				oldC = &x
			}
		}
		if c.New != nil {
			if x, err := dec.Class(c.New); err == nil {
				newC = &x
			}
		}
		if c.Op == replay.ChangeUpdate && oldC != nil && newC != nil && newC.OID >= firstNormalObjectID && s.cat.Class(newC.OID) != nil &&
			(newC.Kind == 'r' || newC.Kind == 'p' || newC.Kind == 'm') && (oldC.Name != newC.Name || oldC.Namespace != newC.Namespace) {
			// ALTER TABLE RENAME or SET SCHEMA
			if k := (relKey{c.Rel.DBOID, newC.OID}); !altered[k] {
				altered[k] = true
				alteredOrder = append(alteredOrder, k)
			}
		}
		if c.Op == replay.ChangeUpdate && oldC != nil && newC != nil && newC.OID >= firstNormalObjectID && s.cat.Class(newC.OID) != nil &&
			(newC.Kind == 'r' || newC.Kind == 'm') && oldC.Persistence != newC.Persistence && (oldC.Persistence == 'u' || newC.Persistence == 'u') {
			b.notePersistence(s, c, oldC, newC)
		}
		if c.Op == replay.ChangeInsert && newC != nil && strings.HasPrefix(newC.Name, "pg_temp_") {
			// make_new_heap's transient table of a rewrite (cluster.c:
			// "pg_temp_%u", the table's oid)
			if oid, err := strconv.ParseUint(newC.Name[len("pg_temp_"):], 10, 32); err == nil {
				transient = append(transient, fileSwitch{lsn: c.LSN, rel: relKey{c.Rel.DBOID, uint32(oid)}})
			}
		}
		switch {
		case c.Op == replay.ChangeInsert && newC != nil && newC.OID >= firstNormalObjectID && s.cat.Class(newC.OID) == nil &&
			(newC.Kind == 'r' || newC.Kind == 'p' || newC.Kind == 'm' || newC.Kind == 't'):
			if err := b.createdRel(s, c.Rel.DBOID, newC.OID); err != nil {
				return err
			}
			if newC.Kind == 't' && !s.created[newC.OID] {
				// a TOAST table the transaction made and dropped again:
				// a rewrite's, holding the values of the rows in the file
				// the next rewrite replaced (layoutAt reads them)
				nc := *newC
				if loc, err := s.cat.Locator(&nc); err == nil {
					s.files[loc] = newC.OID
					s.transientToast[newC.OID] = true
				}
			}
		case c.Op == replay.ChangeDelete && oldC != nil && oldC.OID >= firstNormalObjectID && (oldC.Kind == 'r' || oldC.Kind == 'm') && s.cat.Class(oldC.OID) != nil:
			b.events[c.LSN] = append(b.events[c.LSN], event{op: Drop, rel: relKey{c.Rel.DBOID, oldC.OID}})
		case c.Op == replay.ChangeUpdate && oldC != nil && newC != nil && newC.OID >= firstNormalObjectID && oldC.RelFileNode != newC.RelFileNode && newC.RelFileNode != 0:
			nc := *newC
			loc, err := s.cat.Locator(&nc)
			if err != nil {
				continue
			}
			if prev, ok := s.files[loc]; ok && s.cat.Class(prev) != nil && s.cat.Class(newC.OID) == nil {
				// a rewrite's transient table given the table's old file
				// (swap_relation_files): the file stays the table's
				continue
			}
			s.files[loc] = newC.OID
			if newC.Kind != 'r' && newC.Kind != 'm' || s.cat.Class(newC.OID) == nil {
				continue
			}
			// TRUNCATE leaves the new file with the transaction's rows
			// only (invisible before its commit); a rewrite through a
			// transient table (make_new_heap: ALTER TABLE's, CLUSTER)
			// copies the rows into it, as inserts or as pages; SET
			// TABLESPACE copies the file
			rk := relKey{c.Rel.DBOID, newC.OID}
			rewrite := false
			for _, tr := range transient {
				rewrite = rewrite || tr.rel == rk && tr.lsn > lastSwitch[rk]
			}
			lastSwitch[rk] = c.LSN
			visible := 0
			b.r.VisibleTuples(loc, func(uint32, uint16, []byte) error { visible++; return errStop })
			if rewrite || visible == 0 {
				// told apart below by the copies
				b.events[c.LSN] = append(b.events[c.LSN], event{op: Truncate, rel: rk})
				switches = append(switches, fileSwitch{c.LSN, rk, loc})
				rewritten[c.LSN] = rewrite
			} else {
				// the rows copied as they were (their xmin kept): a
				// TRUNCATE or DROP after it gives the rows of the new file
				// (window.file)
				b.events[c.LSN] = append(b.events[c.LSN], event{rel: rk, rewrite: true, file: loc})
			}
		}
	}
	// A switch to a file the rows were copied into before it (inserts of
	// the transaction: ATRewriteTable, for ALTER COLUMN TYPE, a column
	// added with a volatile default, SET LOGGED) is a rewrite, not a
	// TRUNCATE: the copies are no changes, the rows after it lie in the
	// new file (in the layout the transaction left, if it changed the
	// columns).
	b.copies = map[decode.RelFileLocator]xlog.LSN{}
	if len(switches) > 0 {
		at := map[decode.RelFileLocator]xlog.LSN{}
		for _, sw := range switches {
			at[sw.file] = sw.lsn
		}
		copied := map[decode.RelFileLocator]bool{}
		for c, err := range changes.All() {
			if err != nil {
				return err
			}
			if lsn, ok := at[c.Rel]; ok && c.Op == replay.ChangeInsert && c.LSN < lsn {
				copied[c.Rel] = true
			}
		}
		for _, sw := range switches {
			if !copied[sw.file] {
				if !rewritten[sw.lsn] {
					continue // a TRUNCATE
				}
				// CLUSTER: the rows copied as pages (rewriteheap.c,
				// their xmin kept), not inserts (or a rewrite of a table
				// without rows): a TRUNCATE or DROP after it gives the
				// rows of the new file
				kept := b.events[sw.lsn][:0]
				for _, e := range b.events[sw.lsn] {
					if e.op != Truncate || e.rel != sw.rel {
						kept = append(kept, e)
					}
				}
				b.events[sw.lsn] = append(kept, event{rel: sw.rel, rewrite: true, file: sw.file})
				continue
			}
			b.copies[sw.file] = sw.lsn
			kept := b.events[sw.lsn][:0]
			for _, e := range b.events[sw.lsn] {
				if e.op != Truncate || e.rel != sw.rel {
					kept = append(kept, e)
				}
			}
			// the table's rows are now the copies in the new file: a
			// TRUNCATE or DROP after it gives those (and what the
			// transaction did to them) read from that file
			b.events[sw.lsn] = append(kept, event{rel: sw.rel, rewrite: true, file: sw.file})
		}
	}
	// A table whose definition the transaction changed: its rows are read
	// in the layout of before it or as it left it, version by version
	// (layoutOf), and the undo puts the definition back (Relation.Before).
	b.altered = map[relKey]*Relation{}
	for _, k := range alteredOrder {
		dropped := false
		for _, evs := range b.events {
			for _, e := range evs {
				dropped = dropped || e.op == Drop && e.rel == k
			}
		}
		if b.cats[k.db].cat.Class(k.oid) == nil || dropped {
			continue // dropped: created again as it was before
		}
		if err := b.alter(k); err != nil {
			return err
		}
	}
	if err := b.unloggedMissing(changes); err != nil {
		return err
	}
	// the chunks of TOAST values the transaction inserted
	for c, err := range changes.All() {
		if err != nil {
			return err
		}
		if c.Op != replay.ChangeInsert && c.Op != replay.ChangeCut {
			continue
		}
		s := b.cats[c.Rel.DBOID]
		if s == nil {
			continue
		}
		if oid, ok := s.files[c.Rel]; ok {
			if cls := s.classOf(oid); cls != nil && cls.Kind == 't' || s.transientToast[oid] {
				switch {
				case c.Op == replay.ChangeCut && c.Old != nil:
					// a TRUNCATE in place: the chunks it cut off kept
					s.toast.cut(c.Rel, c.OldBlock, c.Old)
				case c.Op == replay.ChangeInsert && c.New != nil:
					s.toast.add(oid, c.Rel, c.NewBlock, c.NewOffset, c.New)
				}
			}
		}
	}
	b.live = map[relKey]*window{}
	for _, evs := range b.events {
		for _, e := range evs {
			if b.live[e.rel] == nil {
				b.live[e.rel] = &window{before: true, removed: map[ctid]bool{}, added: map[ctid]decode.RelFileLocator{}}
			}
		}
	}
	// the relations changed, in the order of their first change; the
	// rows of the relations a TRUNCATE or DROP empties followed, and
	// those it empties kept
	b.groups = map[int][]*emptiedGroup{}
	idx := -1
	for c, err := range changes.All() {
		if err != nil {
			return err
		}
		idx++
		if k, ok := b.rowKey(c); ok {
			rel, err := b.relation(k)
			if err != nil {
				return err
			}
			if b.wanted(k) {
				b.note(rel)
				b.res.total++
			}
			b.followLive(c, k)
		}
		if c.Op == replay.ChangeTruncate || b.cats[c.Rel.DBOID] == nil {
			continue
		}
		for _, e := range b.events[c.LSN] {
			if e.rewrite {
				b.live[e.rel] = &window{file: e.file, removed: map[ctid]bool{}, added: map[ctid]decode.RelFileLocator{}}
				continue
			}
			g, err := b.emptied(c.LSN, c.XID, e)
			if err != nil {
				return err
			}
			if g != nil {
				b.groups[idx] = append(b.groups[idx], g)
				b.res.total += g.n
			}
		}
		delete(b.events, c.LSN)
	}
	b.count = idx + 1
	return nil
}

// noteCut follows a TRUNCATE in place (replay.ChangeCut, one per page
// cut): from PostgreSQL 13 a TRUNCATE of a table whose file the
// transaction made (created, truncated or rewritten by it: ALTER TABLE,
// CLUSTER) cuts that file to nothing instead of giving the table a new one
// (heap_truncate_one_rel), with no change of pg_class. It is the table's
// TRUNCATE, its rows those the pages cut held visible to the transaction
// (counted here, read again when given: emit).
func (b *builder) noteCut(s *dbState, c *replay.Change) error {
	if c.NewBlock != 0 {
		return nil // not a TRUNCATE (which cuts the file to nothing)
	}
	oid, ok := s.files[c.Rel]
	if !ok || oid < firstNormalObjectID {
		return nil
	}
	if cls := s.classOf(oid); cls == nil || cls.Kind != 'r' && cls.Kind != 'm' && cls.Kind != 'p' {
		return nil // a TOAST table's, cut with its table
	}
	rk := relKey{c.Rel.DBOID, oid}
	if _, seen := b.cutRows[c.LSN]; !seen {
		b.cutRows[c.LSN] = 0
		b.events[c.LSN] = append(b.events[c.LSN], event{op: Truncate, rel: rk, cut: true, file: c.Rel})
	}
	x := b.r.Xacts()
	x.AssumeCommitted(b.xids...)
	defer x.AssumeCommitted()
	err := b.r.PageVisibleTuples(c.Old, func(uint16, []byte) error { b.cutRows[c.LSN]++; return nil })
	if err != nil {
		return fmt.Errorf("relation file %d/%d/%d block %d, cut at %s: %w", c.Rel.SpcOID, c.Rel.DBOID, c.Rel.RelNumber, c.OldBlock, c.LSN, err)
	}
	return nil
}

// rowKey says whether a change is one of a table's rows (not a catalog's,
// not a TOAST chunk, not a rewrite's copy of a row), and which.
func (b *builder) rowKey(c *replay.Change) (relKey, bool) {
	if c.Op == replay.ChangeTruncate || c.Op == replay.ChangeCut {
		return relKey{}, false
	}
	s := b.cats[c.Rel.DBOID]
	if s == nil {
		return relKey{}, false
	}
	oid, ok := s.files[c.Rel]
	k := relKey{c.Rel.DBOID, oid}
	if !ok || oid < firstNormalObjectID {
		return relKey{}, false
	}
	if lsn, ok := b.copies[c.Rel]; ok && c.Op == replay.ChangeInsert && c.LSN < lsn {
		return relKey{}, false // a rewrite's copy of a row
	}
	if cls := s.classOf(oid); cls != nil && (cls.Kind == 'r' || cls.Kind == 'm' || cls.Kind == 'p') {
		return k, true
	}
	return relKey{}, false
}

var errStop = errors.New("stop")

// columnsChanged tells whether a change of pg_attribute added, dropped,
// renamed or retyped a column of a table that existed before the
// transaction (ALTER TABLE), which, and the attribute as the change left
// it; statistics targets and the
// attributes of indexes and of relations the transaction created are not
// such changes, nor a table's attributes deleted with it (DROP TABLE).
func (b *builder) columnsChanged(s *dbState, c *replay.Change) (relKey, *catalog.Attribute, bool) {
	dec := s.cat.Decoder()
	var oldA, newA *catalog.Attribute
	if c.Old != nil {
		if a, err := dec.Attribute(c.Old); err == nil {
			oldA = &a
		}
	}
	if c.New != nil {
		if a, err := dec.Attribute(c.New); err == nil {
			newA = &a
		}
	}
	a := newA
	switch {
	case c.Op == replay.ChangeInsert && newA != nil:
	case c.Op == replay.ChangeUpdate && oldA != nil && newA != nil:
		if oldA.Name == newA.Name && oldA.TypID == newA.TypID && oldA.TypMod == newA.TypMod && oldA.Dropped == newA.Dropped &&
			oldA.HasMissing == newA.HasMissing && oldA.Generated == newA.Generated {
			return relKey{}, nil, false
		}
	default:
		return relKey{}, nil, false
	}
	cls := s.cat.Class(a.Relid)
	if a.Relid < firstNormalObjectID || cls == nil || a.Num <= 0 || cls.Kind != 'r' && cls.Kind != 'p' && cls.Kind != 'm' {
		return relKey{}, nil, false
	}
	return relKey{c.Rel.DBOID, a.Relid}, a, true
}

// classOf is a relation of the catalog as of before the commit, or one the
// transaction created, as it left it.
func (s *dbState) classOf(oid uint32) *catalog.Class {
	if s.created[oid] {
		return s.after.Class(oid)
	}
	return s.cat.Class(oid)
}

// catalogOf is the catalog a relation's columns come from.
func (s *dbState) catalogOf(oid uint32) *catalog.Catalog {
	if s.created[oid] {
		return s.after
	}
	return s.cat
}

// createdRel notes a relation the transaction created (its pg_class
// insert): read from the catalog as the transaction left it, its file
// mapped to it. One created and dropped again by the transaction is not
// there, and leaves nothing to undo.
func (b *builder) createdRel(s *dbState, db, oid uint32) error {
	if err := b.afterCatalog(s, db); err != nil {
		return err
	}
	cls := s.after.Class(oid)
	if cls == nil {
		return nil
	}
	loc, err := s.after.Locator(cls)
	if err != nil {
		return err
	}
	s.created[oid] = true
	s.files[loc] = oid
	if cls.Kind == 't' {
		return nil
	}
	name := table.QuoteIdent(cls.Name)
	if ns := s.after.Namespace(cls.Namespace); ns != nil {
		name = table.QuoteIdent(ns.Name) + "." + name
	}
	if cls.Kind == 'm' {
		name = "MATERIALIZED VIEW " + name
	}
	if b.only == nil || *b.only == (relKey{db, oid}) {
		b.res.Created = append(b.res.Created, name)
	}
	return nil
}

// afterCatalog reads the catalog of database db as the transaction left
// it (s.after), once.
func (b *builder) afterCatalog(s *dbState, db uint32) error {
	if s.after != nil {
		return nil
	}
	after, err := b.r.CatalogCommitted(db, b.xids)
	if err != nil {
		return fmt.Errorf("the catalog as transaction %d left it: %w", b.res.XID, err)
	}
	s.after = after
	return nil
}

// relation opens a relation as of just before the commit (as the
// transaction left it, with Before, for one it altered or created).
func (b *builder) relation(k relKey) (*Relation, error) {
	if rel := b.rels[k]; rel != nil {
		return rel, nil
	}
	s, err := b.db(k.db)
	if err != nil {
		return nil, err
	}
	rel, err := b.open(s, s.catalogOf(k.oid), k)
	if err != nil {
		return nil, err
	}
	b.rels[k] = rel
	return rel, nil
}

// open opens relation k with the columns of catalog cat.
func (b *builder) open(s *dbState, cat *catalog.Catalog, k relKey) (*Relation, error) {
	cls := cat.Class(k.oid)
	if cls == nil {
		return nil, fmt.Errorf("relation %d of database %d is not in the catalog", k.oid, k.db)
	}
	dbRow := cat.Database(k.db)
	loc, err := cat.Locator(cls)
	if err != nil {
		return nil, err
	}
	rr := &replay.Relation{Class: cls, Catalog: cat, Locator: loc}
	if dbRow != nil {
		rr.Database = *dbRow
	}
	tab, err := table.Open(b.r, rr)
	if err != nil {
		return nil, err
	}
	desc, err := cat.Desc(cls.OID)
	if err != nil {
		return nil, err
	}
	rel := &Relation{Relation: rr, Table: tab, desc: desc, Created: s.created[k.oid]}
	rel.Key, rel.KeyKind = keyOf(cat, cls, tab)
	if tc := cat.Toast(cls); tc != nil {
		rel.toastID = tc.OID
		// the values visible before the commit from the TOAST table's
		// pages (table.ToastIndex, which table.Open made), those the
		// transaction inserted from its records
		if x := tab.Toast(); x != nil {
			x.Extra = s.toast
			rel.toast = x
		}
	}
	return rel, nil
}

// keyOf finds the columns identifying a row: the primary key's, else the
// replica identity index's (pg_index indisprimary, indisreplident; indkey
// attribute numbers, expressions excluded).
func keyOf(cat *catalog.Catalog, cls *catalog.Class, tab *table.Table) ([]int, string) {
	var pk, ri *catalog.Index
	for _, c := range cat.Classes() {
		if c.Kind != 'i' {
			continue
		}
		ix := cat.Index(c.OID)
		if ix == nil || ix.Relid != cls.OID || !ix.IsValid || ix.HasExprs {
			continue
		}
		if ix.IsPrimary {
			pk = ix
		}
		if ix.IsReplIdent {
			ri = ix
		}
	}
	pick, kind := pk, "primary key"
	if pick == nil {
		pick, kind = ri, "replica identity"
	}
	if pick == nil {
		return nil, ""
	}
	n := int(pick.NKeyAtts)
	if n <= 0 || n > len(pick.Key) {
		n = len(pick.Key)
	}
	var out []int
	for _, attnum := range pick.Key[:n] {
		found := -1
		for i, col := range tab.Columns {
			if col.Attribute.Num == attnum {
				found = i
			}
		}
		if found < 0 {
			return nil, ""
		}
		out = append(out, found)
	}
	return out, kind
}

// decodeRow deforms and detoasts a whole tuple of rel.
func (b *builder) decodeRow(rel *Relation, tup []byte, blk uint32, off uint16) (*Row, error) {
	vals, _, err := tuple.Deform(nil, tup, rel.desc)
	if err != nil {
		return nil, &table.RowError{Block: blk, Offset: off, Err: err}
	}
	s := b.cats[rel.Database.OID]
	if s == nil {
		s, _ = b.db(rel.Catalog.DatabaseOID)
	}
	row := &Row{Block: blk, Offset: off, Values: make([][]byte, len(rel.Table.Columns)), Nulls: make([]bool, len(rel.Table.Columns))}
	for i, col := range rel.Table.Columns {
		idx := int(col.Attribute.Num) - 1
		if idx < 0 || idx >= len(vals) || vals[idx].IsNull() {
			row.Nulls[i] = true
			continue
		}
		var d tuple.Detoaster
		switch {
		case rel.toast != nil:
			d = rel.toast
		case s != nil:
			d = s.toast
		}
		v, err := vals[idx].Detoast(nil, d)
		if err != nil {
			return nil, &table.RowError{Block: blk, Offset: off, Column: col.Attribute.Name, Err: err}
		}
		row.Values[i] = v
	}
	return row, nil
}

// decodeIn decodes a version of rel with the columns it follows
// (layoutOf, for the change at lsn), Row.Rel naming them when they are
// not rel's.
func (b *builder) decodeIn(rel *Relation, tup []byte, blk uint32, off uint16, lsn xlog.LSN) (*Row, error) {
	lay, err := b.layoutOf(rel, tup, lsn)
	if err != nil {
		return nil, &table.RowError{Block: blk, Offset: off, Err: err}
	}
	row, err := b.decodeRow(lay, tup, blk, off)
	if row != nil && lay != rel {
		row.Rel = lay
	}
	return row, err
}

// beforeFile is the file rel's rows of before the transaction lie in.
func beforeFile(rel *Relation) decode.RelFileLocator {
	if rel.Before != nil {
		return rel.Before.Locator
	}
	return rel.Locator
}

// layoutOf is the relation whose columns a version of rel, read for the
// change at lsn, follows. For a table whose columns the
// transaction changed: a version it did not write (its xmin is none of
// the transaction's xids: an old version from before it) in the layout
// of before; one it wrote in the columns the table had when the change
// was made (layoutAt: a version it wrote before an ADD or DROP COLUMN or
// a rewrite reads as the table was then, the one in a file a later
// rewrite replaced too).
func (b *builder) layoutOf(rel *Relation, tup []byte, lsn xlog.LSN) (*Relation, error) {
	k := relKey{rel.Database.OID, rel.Class.OID}
	bf := rel.Before
	if rel.Created || bf == nil && len(b.attrHist[k]) == 0 {
		return rel, nil // one layout
	}
	if len(tup) < 4 || !slices.Contains(b.xids, xlog.XID(binary.LittleEndian.Uint32(tup))) {
		if bf != nil {
			return bf, nil
		}
		return rel, nil
	}
	return b.layoutAt(rel, k, lsn)
}

// layoutAt is table k (rel, as the transaction left it or, dropped by it,
// as of before) with the columns it had at lsn: those of before with the
// transaction's changes to pg_attribute before lsn applied (attrHist),
// its types from rel's catalog. Before any change: the relation of
// before; after all, rel (but for a dropped table, whose rel is as of
// before).
func (b *builder) layoutAt(rel *Relation, k relKey, lsn xlog.LSN) (*Relation, error) {
	base := rel
	if rel.Before != nil {
		base = rel.Before
	}
	hist := b.attrHist[k]
	n := 0
	for n < len(hist) && hist[n].lsn < lsn {
		n++
	}
	switch {
	case n == 0:
		return base, nil
	case n == len(hist) && rel.Before != nil:
		return rel, nil
	}
	lk := layoutKey{k, n}
	if lay := b.layouts[lk]; lay != nil {
		return lay, nil
	}
	byNum := map[int16]catalog.Attribute{}
	for _, a := range base.Catalog.Attributes(k.oid) {
		byNum[a.Num] = a
	}
	for _, h := range hist[:n] {
		byNum[h.attr.Num] = h.attr
	}
	nums := make([]int16, 0, len(byNum))
	for num := range byNum {
		nums = append(nums, num)
	}
	slices.Sort(nums)
	desc := make([]tuple.Attr, 0, len(nums))
	var cols []table.Column
	for i, num := range nums {
		a := byNum[num]
		if int(num) != i+1 {
			return nil, fmt.Errorf("the columns of %s at %s: attribute %d missing", rel.Name(), lsn, i+1)
		}
		desc = append(desc, a.Attr())
		if !a.Dropped {
			cols = append(cols, table.Column{Attribute: a, Type: rel.Catalog.Type(a.TypID)})
		}
	}
	tab := *rel.Table
	tab.Columns = cols
	lay := &Relation{Relation: rel.Relation, Table: &tab, desc: desc, toastID: rel.toastID, toast: rel.toast}
	lay.Key, lay.KeyKind = keyOf(rel.Catalog, rel.Class, &tab)
	if b.layouts == nil {
		b.layouts = map[layoutKey]*Relation{}
	}
	b.layouts[lk] = lay
	return lay, nil
}

func (b *builder) wanted(k relKey) bool { return b.only == nil || *b.only == k }

func (b *builder) note(rel *Relation) {
	for _, x := range b.res.Relations {
		if x == rel {
			return
		}
	}
	b.res.Relations = append(b.res.Relations, rel)
}

// followLive follows a change of a relation a TRUNCATE or DROP empties.
func (b *builder) followLive(c *replay.Change, k relKey) {
	w := b.live[k]
	if w == nil {
		return
	}
	if c.Op != replay.ChangeInsert {
		old := ctid{c.OldBlock, c.OldOffset}
		if _, ok := w.added[old]; ok {
			delete(w.added, old)
		} else if w.before {
			w.removed[old] = true
		}
	}
	if c.Op != replay.ChangeDelete && c.New != nil {
		// read again from the page when given: just before the commit a
		// row the transaction wrote is still there as it wrote it (not
		// pruned before it ends; changed again, it is removed here)
		w.added[ctid{c.NewBlock, c.NewOffset}] = c.Rel
	}
}

// rowChange decodes one row change of relation k.
func (b *builder) rowChange(c *replay.Change, k relKey) (*Change, error) {
	rel, err := b.relation(k)
	if err != nil {
		return nil, err
	}
	out := &Change{LSN: c.LSN, XID: c.XID, Rel: rel}
	switch c.Op {
	case replay.ChangeInsert:
		out.Op = Insert
	case replay.ChangeUpdate:
		out.Op = Update
	case replay.ChangeDelete:
		out.Op = Delete
	}
	if c.Old != nil {
		out.Old, err = b.decodeIn(rel, c.Old, c.OldBlock, c.OldOffset, c.LSN)
		if err != nil {
			out.Err = err
		}
	} else if c.Op != replay.ChangeInsert {
		out.Err = fmt.Errorf("the old tuple (%d,%d) is not on the page before the record", c.OldBlock, c.OldOffset)
	}
	if c.New != nil {
		out.New, err = b.decodeIn(rel, c.New, c.NewBlock, c.NewOffset, c.LSN)
		if err != nil {
			out.Err = err
		}
	} else if c.Op != replay.ChangeDelete {
		out.Err = fmt.Errorf("the new tuple (%d,%d) is not on the page after the record", c.NewBlock, c.NewOffset)
	}
	return out, nil
}

// emptied is the TRUNCATE or DROP of a relation (nil if the relation is
// not wanted): its rows counted (those as of before the transaction
// still there, read from the pages, and those it added), to be read when
// given (emit).
func (b *builder) emptied(lsn xlog.LSN, xid xlog.XID, e event) (*emptiedGroup, error) {
	w := b.live[e.rel]
	rel, err := b.relation(e.rel)
	if err != nil {
		return nil, err
	}
	b.live[e.rel] = &window{removed: map[ctid]bool{}, added: map[ctid]decode.RelFileLocator{}}
	if !b.wanted(e.rel) {
		return nil, nil
	}
	b.note(rel)
	g := &emptiedGroup{lsn: lsn, xid: xid, op: e.op, rel: rel, before: w.before, removed: w.removed, files: w.added}
	if e.cut {
		// in place: the rows of the pages cut (whatever the window: the
		// file is the table's, made by the transaction)
		g.before, g.removed, g.files, g.file, g.cut, g.n = false, nil, nil, e.file, true, b.cutRows[lsn]
		return g, nil
	}
	if w.file != (decode.RelFileLocator{}) {
		// after a rewrite: the versions of the file the transaction
		// leaves visible, read from it (where they lie; in physical
		// order)
		g.files, g.file = map[ctid]decode.RelFileLocator{}, w.file
		x := b.r.Xacts()
		x.AssumeCommitted(b.xids...)
		err := b.r.VisibleTuples(w.file, func(blk uint32, off uint16, _ []byte) error {
			g.added = append(g.added, ctid{blk, off})
			return nil
		})
		x.AssumeCommitted()
		if err != nil {
			return nil, err
		}
		g.n = len(g.added)
		return g, nil
	}
	for k := range w.added {
		g.added = append(g.added, k)
	}
	sort.Slice(g.added, func(i, j int) bool { return g.added[i].less(g.added[j]) })
	g.n = len(g.added)
	if g.before {
		err := b.r.VisibleTuples(beforeFile(rel), func(blk uint32, off uint16, _ []byte) error {
			if !g.removed[ctid{blk, off}] {
				g.n++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (c ctid) less(d ctid) bool { return c.blk < d.blk || c.blk == d.blk && c.off < d.off }

// emit yields the rows of one TRUNCATE or DROP, in physical order: those
// as of before the transaction read from the pages and decoded one at a
// time (one that cannot be decoded is a Change with Err), merged with
// those the transaction added. It returns false when yield did.
func (b *builder) emit(g *emptiedGroup, yield func(*Change, error) bool) bool {
	stopped := false
	give := func(row *Row, err error) bool {
		c := &Change{LSN: g.lsn, XID: g.xid, Op: g.op, Rel: g.rel, Old: row, Err: err, groupSize: g.n}
		if !yield(c, nil) {
			stopped = true
			return false
		}
		return true
	}
	added := func(k ctid) bool {
		file, ok := g.files[k]
		if !ok {
			file = g.file
		}
		tup, err := b.added.TupleAt(file, k.blk, k.off)
		if err != nil {
			return give(nil, &table.RowError{Block: k.blk, Offset: k.off, Err: err})
		}
		return give(b.decodeIn(g.rel, tup, k.blk, k.off, g.lsn))
	}
	if g.cut {
		return b.emitCut(g, give, yield)
	}
	next := 0
	if g.before {
		bf := beforeFile(g.rel)
		err := b.r.VisibleTuples(bf, func(blk uint32, off uint16, tup []byte) error {
			here := ctid{blk, off}
			for ; next < len(g.added) && g.added[next].less(here); next++ {
				if !added(g.added[next]) {
					return errStop
				}
			}
			if g.removed[here] {
				return nil
			}
			row, err := b.decodeIn(g.rel, tup, blk, off, g.lsn)
			if !give(row, err) {
				return errStop
			}
			return nil
		})
		if stopped {
			return false
		}
		if err != nil {
			yield(nil, err)
			return false
		}
	}
	for ; next < len(g.added); next++ {
		if !added(g.added[next]) {
			return false
		}
	}
	return true
}

// emitCut gives the rows of a TRUNCATE in place: the tuples visible to the
// transaction, committed, on the pages it cut, in physical order, read
// again from the changes (ChangeCut, a page at a time).
func (b *builder) emitCut(g *emptiedGroup, give func(*Row, error) bool, yield func(*Change, error) bool) bool {
	type found struct {
		off uint16
		tup []byte
	}
	x := b.r.Xacts()
	var tups []found
	for c, err := range b.list.All() {
		if err != nil {
			yield(nil, err)
			return false
		}
		if c.Op != replay.ChangeCut || c.LSN != g.lsn || c.Rel != g.file || c.Old == nil {
			continue
		}
		tups = tups[:0]
		x.AssumeCommitted(b.xids...)
		err := b.r.PageVisibleTuples(c.Old, func(off uint16, tup []byte) error {
			tups = append(tups, found{off, tup})
			return nil
		})
		x.AssumeCommitted()
		if err != nil {
			return give(nil, &table.RowError{Block: c.OldBlock, Err: err})
		}
		for _, t := range tups {
			if !give(b.decodeIn(g.rel, t.tup, c.OldBlock, t.off, g.lsn)) {
				return false
			}
		}
	}
	return true
}

// notePersistence follows ALTER TABLE SET UNLOGGED and SET LOGGED of a
// table that existed before the transaction: a rewrite into a file of the
// new persistence (ATRewriteTables), the pg_class update switching files
// setting relpersistence. An unlogged table's changes are not WAL-logged
// (heap_insert and the others log only RelationNeedsWAL), nor are the
// rewrite's copies into it; SET LOGGED's copies out of it are.
func (b *builder) notePersistence(s *dbState, c *replay.Change, oldC, newC *catalog.Class) {
	rk := relKey{c.Rel.DBOID, newC.OID}
	oc, nc := *oldC, *newC
	oldLoc, _ := s.cat.Locator(&oc)
	newLoc, _ := s.cat.Locator(&nc)
	if newC.Persistence == 'u' {
		b.unlogged = append(b.unlogged, unloggedSpan{rel: rk, from: c.LSN, before: oldLoc})
		return
	}
	for i := len(b.unlogged) - 1; i >= 0; i-- {
		if u := &b.unlogged[i]; u.rel == rk && u.to == 0 {
			u.to, u.after = c.LSN, newLoc
			return
		}
	}
	// unlogged before the transaction: its rows as of SET LOGGED are the
	// copies, but what it did to them before is not in the WAL
	b.unlogged = append(b.unlogged, unloggedSpan{rel: rk, to: c.LSN, after: newLoc})
}

// Reasons of the rows the WAL does not hold with a backup.
const (
	// WhyUnlogged: the table was unlogged, its changes not WAL-logged.
	WhyUnlogged = "the transaction changed them while the table was unlogged (ALTER TABLE SET UNLOGGED): an unlogged table's changes are not in the WAL"
)

// unloggedMissing adds to Result.Missing what the transaction did to a
// table while it had it unlogged. Between SET UNLOGGED and SET LOGGED:
// the rows as of the first (the visible versions of the file it left,
// untouched since) against those the second copied (its inserts into the
// new file): by the table's key, the rows updated, deleted and inserted
// then (without a key: the rows gone and the rows new); they are given no
// change (their versions are not in the WAL) and the undo does not undo
// them. From SET UNLOGGED to the commit, or before SET LOGGED of a table
// unlogged before the transaction: every change then, a number the WAL
// does not tell (Rows 0).
func (b *builder) unloggedMissing(changes *replay.ChangeList) error {
	for _, u := range b.unlogged {
		if !b.wanted(u.rel) {
			continue
		}
		rel, err := b.relation(u.rel)
		if err != nil {
			return err
		}
		name := rel.Name()
		b.note(rel)
		b.res.Unlogged = append(b.res.Unlogged, UnloggedRows{Rel: rel, From: u.from, To: u.to})
		ur := &b.res.Unlogged[len(b.res.Unlogged)-1]
		switch {
		case u.to == 0:
			b.res.Missing = append(b.res.Missing, Missing{Relation: name, Op: Update, Rows: 0,
				Reason: fmt.Sprintf("%s: unlogged from %s to the commit", WhyUnlogged, u.from)})
			b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("table %s: made unlogged at %s (ALTER TABLE SET UNLOGGED) and left so: what the transaction did to its rows after is not in the WAL, given no change and not undone", name, u.from))
			continue
		case u.from == 0:
			b.res.Missing = append(b.res.Missing, Missing{Relation: name, Op: Update, Rows: 0,
				Reason: fmt.Sprintf("%s: unlogged from before the transaction to %s (SET LOGGED)", WhyUnlogged, u.to)})
			b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("table %s: unlogged until %s (ALTER TABLE SET LOGGED): what the transaction did to its rows before is not in the WAL, given no change and not undone", name, u.to))
			continue
		}
		// the rows of before and after, as their key (or whole row) and
		// the whole row
		type version struct{ key, row string }
		type held struct {
			row string
			r   *Row
		}
		text := func(r *Row, lay *Relation, key []int) version {
			var kb, rb strings.Builder
			idx := map[int]bool{}
			for _, k := range key {
				idx[k] = true
			}
			for i, col := range lay.Table.Columns {
				v := fmt.Sprintf("%s=%v:%x;", col.Attribute.Name, r.Nulls[i], r.Values[i])
				rb.WriteString(v)
				if idx[i] {
					kb.WriteString(v)
				}
			}
			if len(key) == 0 {
				return version{rb.String(), rb.String()}
			}
			return version{kb.String(), rb.String()}
		}
		keyNames := map[string]bool{}
		for _, k := range rel.Key {
			keyNames[rel.Table.Columns[k].Attribute.Name] = true
		}
		keyOf := func(lay *Relation) []int {
			var out []int
			for i, col := range lay.Table.Columns {
				if keyNames[col.Attribute.Name] {
					out = append(out, i)
				}
			}
			return out
		}
		before := map[string][]held{}
		x := b.r.Xacts()
		x.AssumeCommitted(b.xids...)
		err = b.r.VisibleTuples(u.before, func(blk uint32, off uint16, tup []byte) error {
			row, err := b.decodeIn(rel, tup, blk, off, u.from)
			if err != nil {
				return err
			}
			lay := row.layout(rel)
			v := text(row, lay, keyOf(lay))
			before[v.key] = append(before[v.key], held{v.row, row})
			return nil
		})
		x.AssumeCommitted()
		if err != nil {
			return fmt.Errorf("%s, as of ALTER TABLE SET UNLOGGED at %s: %w", name, u.from, err)
		}
		var updated, deleted, inserted int
		for c, err := range changes.All() {
			if err != nil {
				return err
			}
			if c.Op != replay.ChangeInsert || c.Rel != u.after || c.LSN >= u.to || c.New == nil {
				continue
			}
			row, err := b.decodeIn(rel, c.New, c.NewBlock, c.NewOffset, u.to)
			if err != nil {
				return fmt.Errorf("%s, copied by ALTER TABLE SET LOGGED at %s: %w", name, u.to, err)
			}
			lay := row.layout(rel)
			v := text(row, lay, keyOf(lay))
			old := before[v.key]
			i := slices.IndexFunc(old, func(h held) bool { return h.row == v.row })
			switch {
			case len(old) == 0:
				inserted++
				ur.New = append(ur.New, row)
				continue
			case i < 0:
				updated++
				ur.Gone = append(ur.Gone, old[0].r)
				ur.New = append(ur.New, row)
				old = old[1:]
			default:
				old = slices.Delete(old, i, i+1)
			}
			if len(old) == 0 {
				delete(before, v.key)
			} else {
				before[v.key] = old
			}
		}
		for _, old := range before {
			deleted += len(old)
			for _, h := range old {
				ur.Gone = append(ur.Gone, h.r)
			}
		}
		sort.Slice(ur.Gone, func(i, j int) bool {
			return ctid{ur.Gone[i].Block, ur.Gone[i].Offset}.less(ctid{ur.Gone[j].Block, ur.Gone[j].Offset})
		})
		why := fmt.Sprintf("%s: unlogged from %s to %s (SET LOGGED); counted from its rows at the first and those the second copied", WhyUnlogged, u.from, u.to)
		if len(rel.Key) == 0 {
			why += " (the table has no key: an update counts as a delete and an insert)"
		}
		b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("table %s: unlogged from %s to %s (ALTER TABLE SET UNLOGGED, SET LOGGED): %d rows updated, %d deleted and %d inserted then (its rows at the first against those the second copied%s) are not in the WAL, given no change and not undone",
			name, u.from, u.to, updated, deleted, inserted, map[bool]string{true: ", by its key", false: "; without a key an update is a delete and an insert"}[len(rel.Key) > 0]))
		for _, m := range []struct {
			op Op
			n  int
		}{{Update, updated}, {Delete, deleted}, {Insert, inserted}} {
			if m.n > 0 {
				b.res.Missing = append(b.res.Missing, Missing{Relation: name, Op: m.op, Old: m.op != Insert, Rows: m.n, Reason: why})
			}
		}
	}
	return nil
}

// holdSet is the replay's Hold of the files in hold: asked for every block
// of most records the WAL holds (on every core: replay reads in spans), so
// looked up by relation file number first, a fast map of 32-bit keys.
func holdSet(hold map[decode.RelFileLocator]bool) func(decode.RelFileLocator) bool {
	byNumber := make(map[uint32][]decode.RelFileLocator, len(hold))
	for f, ok := range hold {
		if ok {
			byNumber[f.RelNumber] = append(byNumber[f.RelNumber], f)
		}
	}
	return func(f decode.RelFileLocator) bool {
		for _, h := range byNumber[f.RelNumber] {
			if h == f {
				return true
			}
		}
		return false
	}
}

// unloggedTables fills Result.UnloggedTables: the tables of the databases
// the transaction wrote (or --relation's alone) that are unlogged in the
// catalog as of just before its commit, except those it made logged
// itself (unloggedMissing counts what it did to them while unlogged).
func (b *builder) unloggedTables() error {
	if b.only != nil {
		if _, err := b.db(b.only.db); err != nil {
			return err
		}
	}
	for _, db := range slices.Sorted(maps.Keys(b.cats)) {
		cat := b.cats[db].cat
		for _, c := range cat.Classes() {
			k := relKey{db, c.OID}
			if c.Persistence != 'u' || c.Kind != 'r' || !b.wanted(k) || slices.ContainsFunc(b.unlogged, func(u unloggedSpan) bool { return u.rel == k }) {
				continue
			}
			name := table.QuoteIdent(c.Name)
			if ns := cat.Namespace(c.Namespace); ns != nil {
				name = table.QuoteIdent(ns.Name) + "." + name
			}
			b.res.UnloggedTables = append(b.res.UnloggedTables, name)
		}
	}
	return nil
}
