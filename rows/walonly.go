package rows

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// Without a base backup (Config.Backup nil), Changes reads what the WAL
// alone carries of the rows (replay.Config.NoBackup): a page is known
// from a full-page image or an initialisation in the WAL read and kept
// current by redo; a row's old version is read from its page where the
// page was known (or became known by the record's own image, which shows
// the row with its xmax set and its data intact), else from the record
// where wal_level was logical (the whole row with REPLICA IDENTITY FULL,
// the key columns otherwise); a row's new version from its page, else from
// the record (inserts and updates log it; an update compressed against
// the old version, prefix and suffix left out, needs the old one). What
// cannot be given is counted per relation, operation and reason
// (Result.Missing).

// Source says where a row version was read.
type Source string

// Sources of row versions without a backup.
const (
	FromPage      Source = "page"       // its page, known from an image or an initialisation in the WAL read
	FromImage     Source = "image"      // the record's own full-page image of its page
	FromRecord    Source = "record"     // the tuple the record logs (a whole row)
	FromRecordKey Source = "record key" // the replica identity key the record logs: key columns only
	FromNewKey    Source = "new key"    // a logical update that logged no old key: the key did not change, the new row's key columns
)

// Reasons an old or new row is not in the WAL.
const (
	WhyNoImage    = "no image of its page since the start of the WAL read"
	WhyReplica    = "wal_level below logical: the record logs no old row"
	WhyNoIdentity = "the table has no replica identity (no primary key; REPLICA IDENTITY DEFAULT or NOTHING): no old row is logged at any wal_level"
	WhyKeyOnly    = "replica identity is a key, not FULL: the record logs the key columns only"
	WhyCompressed = "the update logged only what changed from the old row (prefix/suffix compression), whose page was not known"
	WhyNoCatalog  = "not in the catalog given"
	WhyKeyUnknown = "the record logs the replica identity key, and which columns it holds is not known (the table's indexes are not in the catalog)"
	WhyToast      = "an external TOAST value whose chunks the WAL read does not show"
	WhyAdded      = "a column added later with a default: the catalog file gives its value for older rows as text only, and the WAL read does not show its row of pg_attribute"
	WhyDropped    = "the transaction dropped the file at its commit (TRUNCATE, DROP TABLE or a rewrite): the rows it held are not in the WAL"
)

// ErrNoCatalog: without a backup, no catalog file was given and the WAL
// read does not show the catalog the changed tables need.
var ErrNoCatalog = errors.New("no catalog: without a backup or a catalog file (walscope rows --catalog-query), the relations' columns come from the catalog pages the WAL read shows")

// Missing counts the rows of one relation and operation whose old (or new)
// version the WAL read does not hold, and why.
type Missing struct {
	Relation string
	Op       Op
	Old      bool // the old version (else the new one)
	Reason   string
	// Rows is how many; 0 for a file dropped at commit (WhyDropped):
	// every row it held, a number the WAL does not tell.
	Rows int
}

// walOnly is Changes without a backup.
func walOnly(cfg Config) (*Result, error) {
	if err := walOnlySubxact(cfg); err != nil {
		return nil, err
	}
	rc := replay.Config{NoBackup: true, Start: cfg.Start, BlockSize: cfg.BlockSize, WAL: cfg.WAL, Options: cfg.Options,
		Target: replay.Target{XID: cfg.XID}, MemoryBytes: cfg.MemoryBytes, ChangeMemoryBytes: cfg.ChangeMemoryBytes, TempDir: cfg.TempDir, WatchXID: cfg.XID}
	r, end, lsn, err := runToCommit(rc, cfg.XID)
	if err != nil {
		return nil, err
	}
	changes := r.WatchedChanges()
	fromWAL := false
	if cfg.Catalog == nil {
		// the catalog from the catalog pages the WAL read shows
		watched := map[xlog.XID]bool{cfg.XID: true}
		for _, x := range end.Subxacts {
			watched[x] = true
		}
		db, seen := uint32(0), map[decode.RelFileLocator]bool{}
		var files []decode.RelFileLocator
		for c, err := range changes.All() {
			if err != nil {
				r.Close()
				return nil, err
			}
			if c.Op == replay.ChangeTruncate || c.Rel.RelNumber < firstNormalObjectID || seen[c.Rel] {
				continue
			}
			if db == 0 {
				db = c.Rel.DBOID
			}
			if c.Rel.DBOID == db {
				seen[c.Rel] = true
				files = append(files, c.Rel)
			}
		}
		cat, missing := walCatalog(r, db, files, watched)
		if len(missing) > 0 {
			r.Close()
			return nil, fmt.Errorf("%w; the WAL read does not hold the catalog: %s", ErrNoCatalog, strings.Join(missing, "; "))
		}
		cfg.Catalog = cat
		fromWAL = true
	}
	if r.Version() != cfg.Catalog.Version {
		r.Close()
		return nil, fmt.Errorf("%w: the catalog file is of PostgreSQL %d, the WAL of %d", ErrCatalogFile, cfg.Catalog.Version, r.Version())
	}
	res := &Result{XID: cfg.XID, CommitLSN: lsn, Subxacts: end.Subxacts, r: r, WALOnly: true, CatalogFromWAL: fromWAL, stream: true, list: changes}
	w := &walBuilder{res: res, r: r, cat: cfg.Catalog, rels: map[uint32]*Relation{}, files: map[decode.RelFileLocator]uint32{},
		toast: tuple.NewToastStore(r.BlockSize()), missing: map[Missing]int{}}
	for _, c := range cfg.Catalog.Classes() {
		if loc, err := cfg.Catalog.Locator(c); err == nil && c.RelFileNode != 0 {
			w.files[loc] = c.OID
		}
	}
	if cfg.Relation != "" {
		cls, err := cfg.Catalog.Resolve(cfg.Relation)
		if err != nil {
			r.Close()
			return nil, err
		}
		w.only = cls.OID
	}
	if err := w.build(changes); err != nil {
		r.Close()
		return nil, err
	}
	res.w = w
	// files the transaction's own pg_class updates replaced (TRUNCATE,
	// a rewrite): a catalog exported after the commit names the new file
	replaced := map[decode.RelFileLocator]uint32{}
	dec := catalog.NewDecoder(r.Version())
	for c, err := range changes.All() {
		if err != nil {
			r.Close()
			return nil, err
		}
		if c.Op != replay.ChangeUpdate || c.Rel.RelNumber != pgClassOID || c.Rel.DBOID != cfg.Catalog.DatabaseOID || c.Old == nil || c.New == nil {
			continue // pg_class's initdb file (mapped; VACUUM FULL pg_class gives it another)
		}
		oc, err1 := dec.Class(c.Old)
		nc, err2 := dec.Class(c.New)
		if err1 != nil || err2 != nil || oc.OID != nc.OID || oc.RelFileNode == nc.RelFileNode || oc.RelFileNode == 0 {
			continue
		}
		if cls := cfg.Catalog.Class(oc.OID); cls != nil && cls.Name == oc.Name {
			loc, err := cfg.Catalog.Locator(&oc)
			if err == nil {
				replaced[loc] = oc.OID
			}
		}
	}
	// a TRUNCATE or DROP TABLE (or a rewrite) drops the table's old file
	// at commit: the rows it had are not in the WAL
	for _, f := range end.DroppedRels {
		if f.RelNumber < firstNormalObjectID || f.DBOID != cfg.Catalog.DatabaseOID {
			continue
		}
		name := fmt.Sprintf("relation file %d/%d/%d", f.SpcOID, f.DBOID, f.RelNumber)
		oid, ok := w.files[f]
		if !ok {
			oid, ok = replaced[f]
		}
		if ok {
			cls := cfg.Catalog.Class(oid)
			if cls.Kind != 'r' && cls.Kind != 'm' && cls.Kind != 'p' {
				continue
			}
			if w.only != 0 && w.only != oid {
				continue
			}
			if ns := cfg.Catalog.Namespace(cls.Namespace); ns != nil {
				name = table.QuoteIdent(ns.Name) + "." + table.QuoteIdent(cls.Name)
			} else {
				name = table.QuoteIdent(cls.Name)
			}
		} else if w.only != 0 {
			continue
		}
		res.Missing = append(res.Missing, Missing{Relation: name, Op: Truncate, Old: true, Reason: WhyDropped})
	}
	return res, nil
}

// walOnlySubxact reads the record headers from cfg.Start for a commit that
// lists cfg.XID as a subtransaction (ErrSubtransaction, naming the parent)
// before the xid's own end: without a backup there is no prescan to say so.
func walOnlySubxact(cfg Config) error {
	opts := cfg.Options
	opts.Start = cfg.Start
	rd, err := xlog.NewReader(cfg.WAL, opts)
	if err != nil {
		return nil // the replay reports it
	}
	defer rd.Close()
	bs := int(cfg.BlockSize)
	if bs == 0 {
		bs = 8192
	}
	dec := decode.NewDecoder(bs)
	for {
		rec, err := rd.Next()
		if err != nil {
			return nil
		}
		if rec.Header.Rmid != xlog.RmgrTransaction {
			continue
		}
		d, err := dec.Decode(rec)
		if err != nil {
			return nil
		}
		e, ok := rmgr.XactEnd(d)
		if !ok {
			continue
		}
		if e.XID == cfg.XID {
			return nil
		}
		if e.Commit && slices.Contains(e.Subxacts, cfg.XID) {
			return fmt.Errorf("transaction %d is a subtransaction of %d, which committed at %s: %w (give --xid %d)", cfg.XID, e.XID, d.LSN, ErrSubtransaction, e.XID)
		}
	}
}

type walBuilder struct {
	res     *Result
	r       *replay.Replay
	cat     *CatalogFile
	rels    map[uint32]*Relation
	files   map[decode.RelFileLocator]uint32
	toast   *tuple.ToastStore
	loaded  map[uint32]bool
	only    uint32
	missing map[Missing]int
	order   []Missing
	// the attmissingval datums of the columns the catalog file gives as
	// text only, read from the pg_attribute rows the WAL read shows
	// (missingFromWAL); nil until read
	walMissing map[[2]uint32][]byte
}

// missingFromWAL gives the columns of relation relid that the catalog
// file gives attmissingval of as text only (MissingText) the datum stored
// (desc's HasMissing and Missing), where a row of pg_attribute the WAL
// read shows has it: the value a row stored before the column was added
// reads as. attmissingval is set once, by the ADD COLUMN (a rewrite
// clears it with atthasmissing, and the file then has no text), so any
// version of the row that has it holds the file's value.
func (w *walBuilder) missingFromWAL(relid uint32, desc []tuple.Attr) {
	if len(w.cat.MissingText) == 0 {
		return
	}
	if w.walMissing == nil {
		w.walMissing = map[[2]uint32][]byte{}
		db := w.cat.DatabaseOID
		loc := decode.RelFileLocator{SpcOID: catalog.DefaultTableSpaceOID, DBOID: db, RelNumber: pgAttributeOID}
		if m, err := w.r.RelMap(db); err == nil {
			if fn, ok := m.FileNode(pgAttributeOID); ok {
				loc.RelNumber = fn
			}
		}
		dec := catalog.NewDecoder(w.r.Version())
		w.r.KnownTuples(loc, func(_ uint32, _ uint16, tup []byte) error {
			a, err := dec.Attribute(tup)
			if err != nil || !a.HasMissing || a.Missing == nil {
				return nil
			}
			k := [2]uint32{a.Relid, uint32(a.Num)}
			if _, ok := w.cat.MissingText[k]; ok {
				w.walMissing[k] = a.Missing
			}
			return nil
		})
	}
	for i := range desc {
		if m, ok := w.walMissing[[2]uint32{relid, uint32(i + 1)}]; ok {
			desc[i].HasMissing, desc[i].Missing = true, m
		}
	}
}

// build reads the changes twice (none kept): the TOAST chunks the
// transaction inserted, then the relations changed, the count of changes
// and what the WAL lacks of them (decoded, to know); All decodes them
// again as it gives them.
func (w *walBuilder) build(changes *replay.ChangeList) error {
	// the TOAST chunks the transaction inserted
	for c, err := range changes.All() {
		if err != nil {
			return err
		}
		if c.Op != replay.ChangeInsert {
			continue
		}
		if oid, ok := w.files[c.Rel]; ok {
			if cls := w.cat.Class(oid); cls != nil && cls.Kind == 't' {
				tup := c.New
				if tup == nil && c.Logged != nil {
					tup = c.Logged.New
				}
				if tup != nil {
					w.toast.AddTuple(oid, tup)
				}
			}
		}
	}
	unknownFiles := map[decode.RelFileLocator]int{}
	for c, err := range changes.All() {
		if err != nil {
			return err
		}
		if c.Op == replay.ChangeTruncate {
			w.res.Skipped = append(w.res.Skipped, fmt.Sprintf("TRUNCATE at %s of relations %v: the rows a TRUNCATE removes are not in the WAL without a backup", c.LSN, c.RelIDs))
			continue
		}
		if _, ok := w.files[c.Rel]; c.Rel.DBOID != w.cat.DatabaseOID || !ok {
			unknownFiles[c.Rel]++
			continue
		}
		cls := w.classOf(c)
		if cls == nil {
			continue
		}
		out, err := w.change(c, cls)
		if err != nil {
			return err
		}
		if out.OldMissing != "" {
			w.miss(out.Rel, out.Op, true, out.OldMissing)
		}
		if out.NewMissing != "" {
			w.miss(out.Rel, out.Op, false, out.NewMissing)
		}
		w.note(out.Rel)
		w.res.total++
	}
	var files []decode.RelFileLocator
	for f := range unknownFiles {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].RelNumber < files[j].RelNumber })
	for _, f := range files {
		if f.RelNumber < firstNormalObjectID {
			continue // a system catalog's rows: not given, as with a backup
		}
		w.res.Skipped = append(w.res.Skipped, fmt.Sprintf("%d rows of relation file %d/%d/%d: %s (a table made by the transaction, another database, or a file rewritten since the catalog was exported)",
			unknownFiles[f], f.SpcOID, f.DBOID, f.RelNumber, WhyNoCatalog))
	}
	for _, m := range w.order {
		m.Rows = w.missing[m]
		w.res.Missing = append(w.res.Missing, m)
	}
	return nil
}

func (w *walBuilder) relation(cls *catalog.Class) (*Relation, error) {
	if rel := w.rels[cls.OID]; rel != nil {
		return rel, nil
	}
	cat := w.cat.Catalog
	loc, err := cat.Locator(cls)
	if err != nil {
		return nil, err
	}
	rr := &replay.Relation{Class: cls, Catalog: cat, Locator: loc}
	if d := cat.Database(cat.DatabaseOID); d != nil {
		rr.Database = *d
	}
	tab, err := table.Open(w.r, rr)
	if err != nil {
		return nil, err
	}
	desc, err := cat.Desc(cls.OID)
	if err != nil {
		return nil, err
	}
	w.missingFromWAL(cls.OID, desc)
	rel := &Relation{Relation: rr, Table: tab, desc: desc}
	rel.Key, rel.KeyKind = keyOf(cat, cls, tab)
	if tc := cat.Toast(cls); tc != nil {
		rel.toastID = tc.OID
		if w.loaded == nil {
			w.loaded = map[uint32]bool{}
		}
		if !w.loaded[tc.OID] {
			w.loaded[tc.OID] = true
			if tl, err := cat.Locator(tc); err == nil {
				// every chunk of the known pages: dead ones too (a value's
				// chunks are deleted with its row, by the transaction)
				w.r.KnownTuples(tl, func(_ uint32, _ uint16, tup []byte) error {
					w.toast.AddTuple(tc.OID, tup)
					return nil
				})
			}
		}
	}
	w.rels[cls.OID] = rel
	return rel, nil
}

// identity is the columns the WAL logs as the old key (ExtractReplicaIdentity,
// RelationGetIndexAttrBitmap INDEX_ATTR_BITMAP_IDENTITY_KEY): the replica
// identity index's with REPLICA IDENTITY INDEX, the primary key's with
// DEFAULT; nil with FULL or NOTHING or without such an index.
func identity(cat *catalog.Catalog, cls *catalog.Class, tab *table.Table) []int {
	var pick *catalog.Index
	for _, c := range cat.Classes() {
		if c.Kind != 'i' {
			continue
		}
		ix := cat.Index(c.OID)
		if ix == nil || ix.Relid != cls.OID || ix.HasExprs {
			continue
		}
		if cls.ReplIdent == 'i' && ix.IsReplIdent || cls.ReplIdent == 'd' && ix.IsPrimary {
			pick = ix
		}
	}
	if pick == nil {
		return nil
	}
	n := int(pick.NKeyAtts)
	if n <= 0 || n > len(pick.Key) {
		n = len(pick.Key)
	}
	var out []int
	for _, attnum := range pick.Key[:n] {
		for i, col := range tab.Columns {
			if col.Attribute.Num == attnum {
				out = append(out, i)
			}
		}
	}
	return out
}

func (w *walBuilder) miss(rel *Relation, op Op, old bool, why string) {
	m := Missing{Relation: rel.Name(), Op: op, Old: old, Reason: why}
	if w.missing[m] == 0 {
		w.order = append(w.order, m)
	}
	w.missing[m]++
}

// decode deforms and detoasts a tuple; unknown marks the columns not to be
// trusted (NULL in a key-only tuple), and a column the tuple lacks whose
// value is attmissingval (given as text only by the catalog file, and not
// found by missingFromWAL) is unknown too.
func (w *walBuilder) decode(rel *Relation, tup []byte, blk uint32, off uint16, keyOnly []int) (*Row, error) {
	vals, h, err := tuple.Deform(nil, tup, rel.desc)
	if err != nil {
		return nil, &table.RowError{Block: blk, Offset: off, Err: err}
	}
	n := len(rel.Table.Columns)
	row := &Row{Block: blk, Offset: off, Values: make([][]byte, n), Nulls: make([]bool, n)}
	for i, col := range rel.Table.Columns {
		idx := int(col.Attribute.Num) - 1
		if keyOnly != nil && !containsInt(keyOnly, i) {
			row.setUnknown(i)
			continue
		}
		if idx >= h.Natts() && (idx >= len(rel.desc) || !rel.desc[idx].HasMissing) {
			if _, ok := w.cat.MissingText[[2]uint32{rel.Class.OID, uint32(col.Attribute.Num)}]; ok {
				row.setUnknown(i)
				row.addedMissing = true
				continue
			}
		}
		if idx < 0 || idx >= len(vals) || vals[idx].IsNull() {
			row.Nulls[i] = true
			continue
		}
		v, err := vals[idx].Detoast(nil, w.toast)
		if _, external := vals[idx].External(); err != nil && external {
			// its chunks are on pages the WAL read does not show
			row.setUnknown(i)
			row.toastMissing = true
			continue
		}
		if err != nil {
			return nil, &table.RowError{Block: blk, Offset: off, Column: col.Attribute.Name, Err: err}
		}
		row.Values[i] = v
	}
	return row, nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (r *Row) setUnknown(i int) {
	if r.Unknown == nil {
		r.Unknown = make([]bool, len(r.Values))
	}
	r.Unknown[i] = true
	r.Nulls[i] = true
}

// incomplete says why a whole row (not a key) lacks columns ("" if it
// does not).
func (r *Row) incomplete() string {
	switch {
	case r.toastMissing:
		return WhyToast
	case r.addedMissing:
		return WhyAdded
	}
	return ""
}

// Complete reports whether every column of the row is known.
func (r *Row) Complete() bool {
	if r == nil {
		return false
	}
	for _, u := range r.Unknown {
		if u {
			return false
		}
	}
	return true
}

// classOf is the table a change is one of the rows of (nil if it is not
// one given: a catalog's, a TOAST chunk, a file the catalog does not name,
// another table than the one asked for).
func (w *walBuilder) classOf(c *replay.Change) *catalog.Class {
	if c.Op == replay.ChangeTruncate || c.Rel.DBOID != w.cat.DatabaseOID {
		return nil
	}
	oid, ok := w.files[c.Rel]
	if !ok {
		return nil
	}
	cls := w.cat.Class(oid)
	if cls == nil || cls.Kind != 'r' && cls.Kind != 'm' && cls.Kind != 'p' || w.only != 0 && w.only != cls.OID {
		return nil
	}
	return cls
}

// change decodes one row change without a backup; OldMissing and
// NewMissing say what the WAL lacks of it.
func (w *walBuilder) change(c *replay.Change, cls *catalog.Class) (*Change, error) {
	rel, err := w.relation(cls)
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
	lg := c.Logged
	if lg == nil {
		lg = &replay.Logged{}
	}
	var oldTup []byte // the whole old tuple, where known
	if out.Op != Insert {
		switch {
		case c.Old != nil:
			oldTup, out.OldFrom = c.Old, FromPage
			if c.OldFromImage {
				out.OldFrom = FromImage
			}
		case lg.Old != nil && !lg.OldKeyOnly:
			oldTup, out.OldFrom = lg.Old, FromRecord
		}
		if oldTup != nil {
			out.Old, err = w.decode(rel, oldTup, c.OldBlock, c.OldOffset, nil)
			if err != nil {
				out.Err = err
			} else if why := out.Old.incomplete(); why != "" {
				out.OldMissing = why
			}
		} else {
			key := identity(rel.Catalog, cls, rel.Table)
			var why string
			switch {
			case lg.Old != nil && key == nil:
				// which columns the logged key holds is not known: never
				// read its NULLs as values
				why = WhyKeyUnknown
			case lg.Old != nil: // key only
				out.OldFrom, why = FromRecordKey, WhyKeyOnly
				out.Old, err = w.decode(rel, lg.Old, c.OldBlock, c.OldOffset, key)
			case out.Op == Update && lg.Logical && key != nil && c.New != nil || out.Op == Update && lg.Logical && key != nil && lg.New != nil:
				// the key did not change: the new row's key columns
				nt := c.New
				if nt == nil {
					nt = lg.New
				}
				out.OldFrom, why = FromNewKey, WhyKeyOnly
				out.Old, err = w.decode(rel, nt, c.OldBlock, c.OldOffset, key)
			case cls.ReplIdent == 'n' || cls.ReplIdent == 'd' && key == nil || cls.ReplIdent == 'i' && key == nil:
				why = WhyNoIdentity
			default:
				why = WhyReplica
			}
			if err != nil {
				out.Err = err
			}
			out.OldMissing = WhyNoImage + "; " + why
		}
	}
	if out.Op != Delete {
		newTup := c.New
		out.NewFrom = FromPage
		if newTup == nil {
			switch {
			case lg.New != nil:
				newTup, out.NewFrom = lg.New, FromRecord
			case lg.NewPartial && oldTup != nil:
				newTup, out.NewFrom = lg.CompleteNew(oldTup), FromRecord
			}
		}
		if newTup != nil {
			nr, err := w.decode(rel, newTup, c.NewBlock, c.NewOffset, nil)
			if err != nil {
				out.Err = err
			} else {
				out.New = nr
				if why := nr.incomplete(); why != "" {
					out.NewMissing = why
				}
			}
		} else {
			out.NewFrom = ""
			out.NewMissing = WhyNoImage + "; " + WhyCompressed
		}
	}
	return out, nil
}

func (w *walBuilder) note(rel *Relation) {
	for _, x := range w.res.Relations {
		if x == rel {
			return
		}
	}
	w.res.Relations = append(w.res.Relations, rel)
}
