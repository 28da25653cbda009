package names

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// WALNames learns relation names from the WAL itself: the pg_class and
// pg_namespace tuples that heap records and full-page images carry, and the
// relation mapper's RelMap UPDATE records (pg_filenode.map), so that files
// are named schema.table without a catalog export, dropped ones included.
//
// It is sequential: Add must see the records in WAL order from one
// goroutine, because an UPDATE logged without its common prefix and suffix
// (XLH_UPDATE_PREFIX_FROM_OLD/SUFFIX, the usual form of a pg_class update:
// the relname lies in the prefix) is rebuilt from the old tuple, known from
// an earlier image or record of the same page; and because which file is
// pg_class (and pg_namespace) may change with an earlier record. Spans read
// in parallel would have to hand each other that state, so no Merge is
// offered.
//
// What is learnt:
//
//   - pg_class (oid 1259, mapped: relfilenode 0 in its own tuple): its file is
//     the one the database's pg_filenode.map gives (RelMap UPDATE of that
//     database, pairs (oid, filenumber)), else its initial file 1259.
//   - pg_namespace (oid 2615, not mapped): its file is 2615 unless a
//     pg_class tuple of pg_namespace says otherwise.
//   - From each pg_class tuple (per version, see classLayout): relname,
//     relnamespace, relfilenode, relisshared, relkind and the oid; a file
//     (database, relfilenode) is named by it; a mapped relation (relfilenode
//     0) names the files the relation mapper gives its oid, and its initial
//     file (the oid).
//   - From each pg_namespace tuple: oid -> nspname, per database.
//   - pg_database (oid 1262, shared and mapped: its file is the one the
//     shared pg_filenode.map gives, else 1262): from each of its tuples,
//     oid -> datname (CREATE DATABASE inserts one, ALTER DATABASE RENAME
//     updates it, and images of its pages show them all).
//
// A file keeps the latest name learnt for it, which names it over its whole
// life (before a drop, before the rewrite that replaced it); History keeps
// the names over time. Tuples an image shows deleted (a replaced version, a
// dropped relation) or inserted by an aborted transaction name a file only
// when nothing else names it.
type WALNames struct {
	dec     *decode.Decoder
	version xlog.Version // of the records read
	page    []byte
	tups    []rmgr.HeapTuple

	classFile map[uint32]uint32       // database -> pg_class's filenumber (from the relation mapper)
	nspFile   map[uint32]uint32       // database -> pg_namespace's filenumber
	relmap    map[catalogKey]uint32   // (database or 0, filenumber) -> oid, every pair the mapper gave
	mapped    map[catalogKey]*WALRel  // (database or 0, oid) -> a mapped relation
	files     map[catalogKey]*WALRel  // (database or 0, relfilenode) -> the latest name
	history   map[catalogKey][]WALRel // (database or 0, relfilenode) -> names over time
	// counts are pg_class's reltuples and relpages for a file, each time a
	// tuple of it showed them (VACUUM's and ANALYZE's in-place updates
	// carry the whole tuple), in WAL order.
	counts  map[catalogKey][]RowCount
	nsp     map[catalogKey]string // (database, namespace oid) -> nspname
	dbFile  uint32                // pg_database's filenumber (shared relation mapper); 0: 1262
	datname map[uint32]string     // database oid -> datname
	// nspAt is every pg_namespace tuple seen, by its position: what a
	// DELETE at that position removed (a DROP SCHEMA), in WAL order.
	nspAt     map[TupleID][]nspSeen
	transient map[catalogKey]bool // (database, oid) of transient tables
	// newPages are the last images of XLOG FPI records (log_newpage: the
	// pages a rewrite writes, VACUUM FULL's and CLUSTER's) of main forks
	// not known as catalogs, oldest first: VACUUM FULL pg_class (or
	// pg_database) writes the new file's pages before the relation
	// mapper's UPDATE says which catalog it is, and the compressed updates
	// that follow are rebuilt from them (addRelMap reads them then).
	newPages []newPage
	cache    map[walPageKey]walPageMap // tuples of catalog pages, to rebuild compressed updates

	// Counts, for reports and tests.
	ClassTuples     int // pg_class tuples read
	NamespaceTuples int // pg_namespace tuples read
	DatabaseTuples  int // pg_database tuples that named a database
	Unresolved      int // compressed pg_class/pg_namespace updates whose old tuple the WAL did not show
	BadImages       int // catalog images that could not be restored or parsed
}

// WALRel is what the WAL says of a relation file.
type WALRel struct {
	DB           uint32 // database; 0 for a shared relation
	RelNumber    uint32 // the file (relfilenode, or the mapper's filenumber)
	OID          uint32 // pg_class oid; 0 when unknown (INPLACE data of 10 and 11)
	Name         string // relname
	NamespaceOID uint32 // relnamespace
	Kind         byte   // relkind: 'r', 'i', 't', 'S', 'm', ...
	Mapped       bool   // a mapped catalog (relfilenode 0), named through the relation mapper
	LSN          xlog.LSN
	Source       rmgr.TupleSource // how the tuple was read
	// Transient is set for the names of VACUUM FULL's and CLUSTER's
	// transient table (make_new_heap's "pg_temp_<old oid>") and of its TOAST
	// table and index ("pg_toast_<transient oid>[_index]"): the swap of
	// files gives them the old files just before they are dropped, so they
	// never replace another name of a file.
	Transient bool
}

// newPage is a kept image (BlockRef.Image copied) and its record's LSN and
// version.
type newPage struct {
	lsn     xlog.LSN
	version xlog.Version
	b       decode.BlockRef
}

// keepNewPages bounds WALNames.newPages: a pg_class of 1024 pages holds
// about 50,000 relations; a rewrite of a larger table between the new
// pg_class's pages and the mapper's UPDATE would push them out (they are
// at most 8 MB).
const keepNewPages = 1024

const xlogFPI = 0xB0 // XLOG_FPI (pg_control.h): log_newpage's record

type walPageKey struct {
	rel   decode.RelFileLocator
	block uint32
}

type walPageMap map[uint16]*walTuple

// walTuple is a cached tuple: what is needed to rebuild an update.
type walTuple struct {
	infomask2, infomask uint16
	hoff                uint8
	bits                []byte
	oid                 uint32
	hasOID, hasHeader   bool
	data                []byte
}

// Well-known objects (pg_class.h, pg_namespace.h, 10 to 18).
const (
	relationRelationID  = 1259 // pg_class
	databaseRelationID  = 1262 // pg_database (shared, mapped)
	namespaceRelationID = 2615 // pg_namespace
	pgCatalogNamespace  = 11   // PG_CATALOG_NAMESPACE
	pgToastNamespace    = 99   // PG_TOAST_NAMESPACE
	pgPublicNamespace   = 2200 // PG_PUBLIC_NAMESPACE
)

// NewWALNames returns an empty accumulator restoring images with dec (nil:
// a decoder for 8 kB pages).
func NewWALNames(dec *decode.Decoder) *WALNames {
	if dec == nil {
		dec = decode.NewDecoder(0)
	}
	return &WALNames{dec: dec,
		classFile: map[uint32]uint32{}, nspFile: map[uint32]uint32{},
		relmap: map[catalogKey]uint32{}, mapped: map[catalogKey]*WALRel{},
		files: map[catalogKey]*WALRel{}, history: map[catalogKey][]WALRel{}, counts: map[catalogKey][]RowCount{},
		nsp: map[catalogKey]string{}, datname: map[uint32]string{}, nspAt: map[TupleID][]nspSeen{}, transient: map[catalogKey]bool{}, cache: map[walPageKey]walPageMap{}}
}

// pgClassFile is database db's pg_class file.
func (w *WALNames) pgClassFile(db uint32) uint32 {
	if f, ok := w.classFile[db]; ok {
		return f
	}
	return relationRelationID
}

func (w *WALNames) pgNamespaceFile(db uint32) uint32 {
	if f, ok := w.nspFile[db]; ok {
		return f
	}
	return namespaceRelationID
}

// pgDatabaseFile is the shared pg_database's file.
func (w *WALNames) pgDatabaseFile() uint32 {
	if w.dbFile != 0 {
		return w.dbFile
	}
	return databaseRelationID
}

// catalogOf says which catalog a main-fork block of rel belongs to: 1259,
// 2615, 1262 (pg_database, the one shared relation read), or 0 for none.
func (w *WALNames) catalogOf(rel decode.RelFileLocator, fork decode.ForkNumber) uint32 {
	if fork != decode.ForkMain {
		return 0
	}
	if rel.DBOID == 0 {
		if rel.RelNumber == w.pgDatabaseFile() {
			return databaseRelationID
		}
		return 0
	}
	switch rel.RelNumber {
	case w.pgClassFile(rel.DBOID):
		return relationRelationID
	case w.pgNamespaceFile(rel.DBOID):
		return namespaceRelationID
	}
	return 0
}

// NamesFrom reports whether records of resource manager id can teach
// WALNames anything (the relation mapper's, heap records and XLOG's
// full-page images): a reading may skip decoding the others.
func NamesFrom(id xlog.RmgrID) bool {
	return id == xlog.RmgrRelMap || id == xlog.RmgrHeap || id == xlog.RmgrHeap2 || id == xlog.RmgrXLOG
}

// Add learns from one record; records must come in WAL order.
func (w *WALNames) Add(rec *decode.Record) {
	w.version = rec.Version
	if rec.Header.Rmid == xlog.RmgrRelMap {
		w.addRelMap(rec)
		return
	}
	// Images of catalog pages: every tuple on them.
	newPage := rec.Header.Rmid == xlog.RmgrXLOG && rec.Header.Info&0xF0 == xlogFPI
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if !b.HasImage || b.Image == nil {
			continue
		}
		cat := w.catalogOf(b.Rel, b.Fork())
		if cat == 0 {
			if newPage && b.Fork() == decode.ForkMain {
				w.keepNewPage(rec, b)
			}
			continue
		}
		w.addImage(rec, b, cat)
	}
	switch rec.Header.Rmid {
	case xlog.RmgrHeap, xlog.RmgrHeap2:
	default:
		return
	}
	b := rec.Block(0)
	if b == nil {
		return
	}
	cat := w.catalogOf(b.Rel, b.Fork())
	if cat == 0 {
		return
	}
	if rec.Header.Info&0x80 != 0 && !b.HasImage { // XLOG_HEAP_INIT_PAGE: the page starts empty
		delete(w.cache, walPageKey{b.Rel, b.Block})
	}
	if b.HasImage {
		return // the image holds the tuples, already read
	}
	w.tups = rmgr.RecordTuples(w.tups[:0], rec)
	for i := range w.tups {
		t := &w.tups[i]
		ct := w.cacheTuple(t)
		if ct == nil {
			w.Unresolved++
			continue
		}
		w.learn(rec.LSN, t.Rel.DBOID, cat, ct, t.Source, false)
		w.seenAt(rec.LSN, t, cat, ct)
	}
}

// addRelMap reads xl_relmap_update (relmapper.h): dbid u32 @0, tsid u32 @4,
// nbytes i32 @8, then the RelMapFile: magic i32, num_mappings i32, then
// RelMapping {mapoid, mapfilenumber} pairs (then crc and padding).
func (w *WALNames) addRelMap(rec *decode.Record) {
	m := rec.MainData
	if rec.Header.Info&0xF0 != 0 || len(m) < 20 {
		return
	}
	db := binary.LittleEndian.Uint32(m)
	n := int(int32(binary.LittleEndian.Uint32(m[16:])))
	const maxMappings = 64 // MAX_MAPPINGS: 62 before 16, 64 from 16 on
	if n < 0 || n > maxMappings || 20+8*n > len(m) {
		return
	}
	for i := 0; i < n; i++ {
		oid := binary.LittleEndian.Uint32(m[20+8*i:])
		file := binary.LittleEndian.Uint32(m[24+8*i:])
		w.relmap[catalogKey{db, file}] = oid
		if oid == relationRelationID && db != 0 {
			if old, ok := w.classFile[db]; ok && old != file {
				w.dropCache(db, old)
			}
			moved := w.pgClassFile(db) != file
			w.classFile[db] = file
			if moved {
				w.readNewPages(db, file, relationRelationID)
			}
		}
		if oid == databaseRelationID && db == 0 {
			old := w.pgDatabaseFile()
			if old != file {
				w.dropCache(0, old)
			}
			w.dbFile = file
			if old != file {
				w.readNewPages(0, file, databaseRelationID)
			}
		}
	}
}

// keepNewPage keeps the image of block b of rec, an XLOG FPI record, in
// newPages.
func (w *WALNames) keepNewPage(rec *decode.Record, b *decode.BlockRef) {
	if len(w.newPages) >= keepNewPages {
		n := copy(w.newPages, w.newPages[1:])
		w.newPages = w.newPages[:n]
	}
	c := *b
	c.Data = nil
	c.Image = append([]byte(nil), b.Image...)
	w.newPages = append(w.newPages, newPage{lsn: rec.LSN, version: rec.Version, b: c})
}

// readNewPages reads the kept images of file (db, file), which the
// relation mapper has just made catalog cat, as the images of cat they
// are, in WAL order; they are not kept any more.
func (w *WALNames) readNewPages(db, file, cat uint32) {
	kept := w.newPages[:0]
	version := w.version
	for _, p := range w.newPages {
		if p.b.Rel.DBOID != db || p.b.Rel.RelNumber != file {
			kept = append(kept, p)
			continue
		}
		w.version = p.version
		rec := &decode.Record{Record: &xlog.Record{LSN: p.lsn, Version: p.version}}
		w.addImage(rec, &p.b, cat)
	}
	w.version = version
	clear(w.newPages[len(kept):])
	w.newPages = kept
}

// dropCache forgets the cached pages of one file.
func (w *WALNames) dropCache(db, file uint32) {
	for k := range w.cache {
		if k.rel.DBOID == db && k.rel.RelNumber == file {
			delete(w.cache, k)
		}
	}
}

func (w *WALNames) addImage(rec *decode.Record, b *decode.BlockRef, cat uint32) {
	var err error
	w.page, err = w.dec.AppendPage(w.page[:0], rec, b)
	if err != nil {
		w.BadImages++
		return
	}
	w.tups, err = rmgr.PageTuples(w.tups[:0], rec.Version, w.page, b.Rel, b.Fork(), b.Block)
	if err != nil {
		w.BadImages++
		return
	}
	// The page is the truth: its cached tuples go.
	key := walPageKey{b.Rel, b.Block}
	delete(w.cache, key)
	// Replaced versions and aborted inserts first, the live ones last: the
	// live ones win.
	rank := func(t *rmgr.HeapTuple) int {
		switch {
		case t.Aborted():
			return 0
		case t.Deleted():
			return 1
		}
		return 2
	}
	sort.SliceStable(w.tups, func(i, j int) bool { return rank(&w.tups[i]) < rank(&w.tups[j]) })
	for i := range w.tups {
		t := &w.tups[i]
		ct := w.cacheTuple(t)
		w.learn(rec.LSN, b.Rel.DBOID, cat, ct, rmgr.FromImage, rank(t) < 2)
		if rank(t) > 0 { // live, or deleted (by the DELETE this image may be of)
			w.seenAt(rec.LSN, t, cat, ct)
		}
	}
}

// cacheTuple stores t (rebuilt if it is a compressed update, completed if
// INPLACE) in the page cache and returns the stored tuple; nil when a
// compressed update's old tuple is unknown.
func (w *WALNames) cacheTuple(t *rmgr.HeapTuple) *walTuple {
	key := walPageKey{t.Rel, t.Block}
	pm := w.cache[key]
	ct := &walTuple{infomask2: t.Infomask2, infomask: t.Infomask, hoff: t.Hoff, oid: t.OID, hasOID: t.HasOID, hasHeader: t.HasHeader}
	ct.bits = append([]byte(nil), t.Bits...)
	switch {
	case t.Partial:
		old := w.cache[walPageKey{t.Rel, t.OldBlock}][t.OldOffset]
		var d []byte
		var err error
		if old != nil {
			d, err = t.Reconstruct(old.data)
		}
		if old == nil || err != nil {
			delete(pm, t.Offset) // whatever was cached there is gone
			return nil
		}
		ct.data = d
	case !t.HasHeader: // INPLACE: the data changes in place
		if old := pm[t.Offset]; old != nil {
			c := *old
			c.data = append([]byte(nil), t.Data...)
			ct = &c
		} else {
			ct.data = append([]byte(nil), t.Data...)
		}
	default:
		ct.data = append([]byte(nil), t.Data...)
	}
	if pm == nil {
		pm = walPageMap{}
		w.cache[key] = pm
	}
	pm[t.Offset] = ct
	return ct
}

// classLayout gives the offsets, in a pg_class tuple's data, of the fixed
// columns read (pg_class.h of each version; all are NOT NULL and fixed-width,
// before any nullable or variable column, so no null bitmap moves them):
//
//	10, 11: relname NameData @0 (64 bytes), relnamespace @64, reltype @68,
//	        reloftype @72, relowner @76, relam @80, relfilenode @84,
//	        reltablespace @88, relpages @92, reltuples @96, relallvisible @100,
//	        reltoastrelid @104, relhasindex @108, relisshared @109,
//	        relpersistence @110, relkind @111 (the oid is a system column in
//	        the header, HEAP_HASOID; relhasoids, and in 10 relhaspkey, come
//	        after relkind, so their removal in 12 and 11 moves nothing read)
//	12-17:  oid @0 (a plain column from 12), then the same shifted by 4:
//	        relname @4 ... relallvisible @104, reltoastrelid @108,
//	        relhasindex @112, relisshared @113, relpersistence @114, relkind @115
//	18:     relallfrozen int32 after relallvisible: reltoastrelid @112,
//	        relhasindex @116, relisshared @117, relpersistence @118, relkind @119
type classLayout struct {
	oid, name, nsp, filenode, pages, tuples, shared, persistence, kind int // -1: not in the data
}

func classLayoutOf(v xlog.Version) classLayout {
	switch {
	case v >= xlog.V18:
		return classLayout{oid: 0, name: 4, nsp: 68, filenode: 88, pages: 96, tuples: 100, shared: 117, persistence: 118, kind: 119}
	case v >= xlog.V12:
		return classLayout{oid: 0, name: 4, nsp: 68, filenode: 88, pages: 96, tuples: 100, shared: 113, persistence: 114, kind: 115}
	}
	return classLayout{oid: -1, name: 0, nsp: 64, filenode: 84, pages: 92, tuples: 96, shared: 109, persistence: 110, kind: 111}
}

const nameDataLen = 64 // NAMEDATALEN

// nameData reads a NameData: NUL-terminated, non-empty, printable.
func nameData(b []byte) (string, bool) {
	if len(b) < nameDataLen {
		return "", false
	}
	n := bytes.IndexByte(b[:nameDataLen], 0)
	if n <= 0 {
		return "", false
	}
	for _, c := range b[:n] {
		if c < 0x20 || c == 0x7F {
			return "", false
		}
	}
	return string(b[:n]), true
}

// learn reads a pg_class or pg_namespace tuple of database db.
// TupleID is a heap tuple's position: its relation file, block and line
// pointer (ItemPointerData).
type TupleID struct {
	Rel    decode.RelFileLocator
	Block  uint32
	Offset uint16
}

type nspSeen struct {
	lsn  xlog.LSN
	name string
}

// seenAt remembers the name of the pg_namespace tuple at t's position.
func (w *WALNames) seenAt(lsn xlog.LSN, t *rmgr.HeapTuple, cat uint32, ct *walTuple) {
	if cat != namespaceRelationID || ct == nil || t.Fork != decode.ForkMain {
		return
	}
	d := ct.data
	if w.version >= xlog.V12 {
		if len(d) < 4 {
			return
		}
		d = d[4:]
	}
	name, ok := nameData(d)
	if !ok {
		return
	}
	id := TupleID{t.Rel, t.Block, t.Offset}
	h := w.nspAt[id]
	if n := len(h); n > 0 && h[n-1].name == name {
		return
	}
	w.nspAt[id] = append(h, nspSeen{lsn, name})
}

// NamespaceAt returns the name of the schema whose pg_namespace tuple was at
// position id at lsn (the tuple a DELETE at lsn removed: the DELETE's own
// full-page image shows it, already marked deleted), if the WAL showed it.
func (w *WALNames) NamespaceAt(id TupleID, lsn xlog.LSN) (string, bool) {
	if w == nil {
		return "", false
	}
	h := w.nspAt[id]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].lsn <= lsn {
			return h[i].name, true
		}
	}
	return "", false
}

func (w *WALNames) learn(lsn xlog.LSN, db, cat uint32, t *walTuple, src rmgr.TupleSource, weak bool) {
	v := w.version
	d := t.data
	if cat == databaseRelationID {
		w.learnDatabase(t, weak)
		return
	}
	if cat == namespaceRelationID {
		// pg_namespace: 12+: oid @0, nspname @4; 10, 11: nspname @0, oid in the header.
		var oid uint32
		name := d
		if v >= xlog.V12 {
			if len(d) < 4 {
				return
			}
			oid, name = binary.LittleEndian.Uint32(d), d[4:]
		} else {
			if !t.hasOID {
				return
			}
			oid = t.oid
		}
		s, ok := nameData(name)
		if !ok || oid == 0 {
			return
		}
		w.NamespaceTuples++
		k := catalogKey{db, oid}
		if _, known := w.nsp[k]; weak && known {
			return
		}
		w.nsp[k] = s
		return
	}
	l := classLayoutOf(v)
	if len(d) <= l.kind {
		return
	}
	name, ok := nameData(d[l.name:])
	if !ok {
		return
	}
	kind := d[l.kind]
	switch kind {
	case 'r', 'i', 'S', 't', 'v', 'm', 'c', 'f', 'p', 'I':
	default:
		return
	}
	switch d[l.persistence] {
	case 'p', 'u', 't':
	default:
		return
	}
	if d[l.shared] > 1 {
		return
	}
	r := WALRel{DB: db, Name: name, Kind: kind, LSN: lsn, Source: src,
		NamespaceOID: binary.LittleEndian.Uint32(d[l.nsp:]),
		RelNumber:    binary.LittleEndian.Uint32(d[l.filenode:])}
	switch {
	case l.oid >= 0:
		r.OID = binary.LittleEndian.Uint32(d[l.oid:])
	case t.hasOID:
		r.OID = t.oid
	}
	if d[l.shared] == 1 {
		r.DB = 0
	}
	r.Transient = w.isTransient(r)
	w.ClassTuples++
	if r.RelNumber == 0 {
		if r.OID == 0 {
			return
		}
		r.Mapped = true
		k := catalogKey{r.DB, r.OID}
		if _, known := w.mapped[k]; weak && known {
			return
		}
		w.mapped[k] = &r
		return
	}
	if name == "pg_namespace" && r.NamespaceOID == pgCatalogNamespace && r.DB != 0 && !weak {
		if old, ok := w.nspFile[r.DB]; (ok && old != r.RelNumber) || (!ok && r.RelNumber != namespaceRelationID) {
			w.dropCache(r.DB, w.pgNamespaceFile(r.DB))
		}
		w.nspFile[r.DB] = r.RelNumber
	}
	k := catalogKey{r.DB, r.RelNumber}
	if tuples := math.Float32frombits(binary.LittleEndian.Uint32(d[l.tuples:])); (tuples > 0 || tuples == 0 && v >= xlog.V14) && !math.IsNaN(float64(tuples)) {
		c := RowCount{LSN: lsn, Tuples: float64(tuples), Pages: binary.LittleEndian.Uint32(d[l.pages:])}
		if h := w.counts[k]; len(h) == 0 || h[len(h)-1].Tuples != c.Tuples || h[len(h)-1].Pages != c.Pages {
			w.counts[k] = append(h, c)
		}
	}
	old := w.files[k]
	if old != nil && weak {
		return
	}
	if h := w.history[k]; len(h) == 0 || h[len(h)-1].Name != r.Name || h[len(h)-1].NamespaceOID != r.NamespaceOID {
		w.history[k] = append(h, r)
	}
	if old != nil && !old.Transient && r.Transient {
		return
	}
	w.files[k] = &r
}

// learnDatabase reads a pg_database tuple (pg_database.h): 12+: oid @0,
// datname NameData @4; 10, 11: datname @0, the oid in the header.
func (w *WALNames) learnDatabase(t *walTuple, weak bool) {
	d := t.data
	var oid uint32
	if w.version >= xlog.V12 {
		if len(d) < 4 {
			return
		}
		oid, d = binary.LittleEndian.Uint32(d), d[4:]
	} else {
		if !t.hasOID {
			return
		}
		oid = t.oid
	}
	name, ok := nameData(d)
	if !ok || oid == 0 {
		return
	}
	if _, known := w.datname[oid]; weak && known {
		return
	}
	w.DatabaseTuples++
	w.datname[oid] = name
}

// DatabaseName returns the name of database oid, from the pg_database
// tuples the WAL showed (the latest: a renamed database has its new name,
// a dropped one the name it had).
func (w *WALNames) DatabaseName(oid uint32) (string, bool) {
	if w == nil {
		return "", false
	}
	s, ok := w.datname[oid]
	return s, ok
}

// isTransient tells a transient table's name (see WALRel.Transient), and
// remembers the oid of a transient table.
func (w *WALNames) isTransient(r WALRel) bool {
	digits := func(s string) (uint32, bool) {
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err == nil && s != "" && s[0] != '+'
	}
	if n, ok := strings.CutPrefix(r.Name, "pg_temp_"); ok && (r.Kind == 'r' || r.Kind == 'm') {
		if _, ok := digits(n); ok {
			if r.OID != 0 {
				w.transient[catalogKey{r.DB, r.OID}] = true
			}
			return true
		}
	}
	if n, ok := strings.CutPrefix(r.Name, "pg_toast_"); ok && r.NamespaceOID == pgToastNamespace {
		n = strings.TrimSuffix(n, "_index")
		if oid, ok := digits(n); ok {
			return w.transient[catalogKey{r.DB, oid}]
		}
	}
	return false
}

// Lookup returns what the WAL says of a file: the latest name learnt for it
// (directly, or through the relation mapper for a mapped catalog).
func (w *WALNames) Lookup(r decode.RelFileLocator) (WALRel, bool) {
	if w == nil {
		return WALRel{}, false
	}
	if x := w.files[catalogKey{r.DBOID, r.RelNumber}]; x != nil {
		return *x, true
	}
	oid, viaMap := w.relmap[catalogKey{r.DBOID, r.RelNumber}]
	if !viaMap {
		oid = r.RelNumber // a mapped catalog's initial file is its oid
	}
	if x := w.mapped[catalogKey{r.DBOID, oid}]; x != nil {
		y := *x
		y.RelNumber = r.RelNumber
		return y, true
	}
	return WALRel{}, false
}

// NoName reports whether the WAL held no name for the file.
func (w *WALNames) NoName(r decode.RelFileLocator) bool {
	_, ok := w.Lookup(r)
	return !ok
}

// RowCount is what a pg_class tuple of a file said of its size: reltuples
// (an estimate kept by VACUUM and ANALYZE; -1 in 14 and later, 0 before,
// for a table never vacuumed or analysed, which is not kept) and relpages.
type RowCount struct {
	LSN    xlog.LSN // the record that carried the tuple
	Tuples float64
	Pages  uint32
}

// RowCountBefore returns the last row count the WAL showed for file r
// before lsn: false when no pg_class tuple of it carried one.
func (w *WALNames) RowCountBefore(r decode.RelFileLocator, lsn xlog.LSN) (RowCount, bool) {
	if w == nil {
		return RowCount{}, false
	}
	h := w.counts[catalogKey{r.DBOID, r.RelNumber}]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].LSN < lsn {
			return h[i], true
		}
	}
	return RowCount{}, false
}

// History returns the names a file had, in the order the WAL showed them
// (one entry per change of name or schema); nil when the WAL named it only
// through the relation mapper or not at all.
func (w *WALNames) History(r decode.RelFileLocator) []WALRel {
	if w == nil {
		return nil
	}
	return w.history[catalogKey{r.DBOID, r.RelNumber}]
}

// NamespaceName returns the name of namespace oid in database db: learnt
// from pg_namespace tuples, else the fixed pg_catalog, pg_toast and public.
func (w *WALNames) NamespaceName(db, oid uint32) (string, bool) {
	if w != nil {
		if s, ok := w.nsp[catalogKey{db, oid}]; ok {
			return s, true
		}
	}
	switch oid {
	case pgCatalogNamespace:
		return "pg_catalog", true
	case pgToastNamespace:
		return "pg_toast", true
	case pgPublicNamespace:
		return "public", true
	}
	return "", false
}

// Name implements RelNamer: "schema.name", with "(namespace N)" for a
// schema the WAL did not name; "" when the WAL held no name for the file.
func (w *WALNames) Name(r decode.RelFileLocator) string {
	x, ok := w.Lookup(r)
	if !ok {
		return ""
	}
	return w.qualify(x)
}

func (w *WALNames) qualify(x WALRel) string {
	db := x.DB
	if db == 0 {
		// shared catalogs live in pg_catalog, which every database has
		return "pg_catalog." + x.Name
	}
	ns, ok := w.NamespaceName(db, x.NamespaceOID)
	if !ok {
		ns = "(namespace " + strconv.FormatUint(uint64(x.NamespaceOID), 10) + ")"
	}
	return ns + "." + x.Name
}

// Files returns every file the WAL named directly, with its latest name,
// sorted by database and file.
func (w *WALNames) Files() []WALRel {
	out := make([]WALRel, 0, len(w.files))
	for _, x := range w.files {
		out = append(out, *x)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].RelNumber < out[j].RelNumber
	})
	return out
}

// Mapped returns the mapped catalogs the WAL named, with the file the
// relation mapper last gave each (its oid when the WAL holds no map).
func (w *WALNames) Mapped() []WALRel {
	last := map[catalogKey]uint32{}
	for k, oid := range w.relmap {
		last[catalogKey{k.db, oid}] = k.rel // (any: maps rarely change; see Lookup for exact files)
	}
	out := make([]WALRel, 0, len(w.mapped))
	for k, x := range w.mapped {
		y := *x
		y.RelNumber = k.rel
		if f, ok := last[k]; ok {
			y.RelNumber = f
		}
		out = append(out, y)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].OID < out[j].OID
	})
	return out
}

// QualifiedName is Name for a WALRel from Files or Mapped.
func (w *WALNames) QualifiedName(x WALRel) string { return w.qualify(x) }

// WithWALNames returns a Catalog that names what cat names as cat does, and
// the files cat does not name as the WAL does, for code that takes a Catalog
// (the report). With original (Breakdown.Original, or nil), a file that
// replaced one cat names is left to cat, as format's relation table does.
// cat is not modified.
func WithWALNames(cat Catalog, w *WALNames, original func(decode.RelFileLocator) (decode.RelFileLocator, bool)) Catalog {
	if w == nil || (len(w.files) == 0 && len(w.mapped) == 0) {
		return cat
	}
	out := make(Catalog, len(cat)+len(w.files))
	for k, v := range cat {
		out[k] = v
	}
	add := func(db, rel uint32) {
		loc := decode.RelFileLocator{DBOID: db, RelNumber: rel}
		if cat.Name(loc) != "" {
			return
		}
		if original != nil {
			if o, changed := original(loc); changed && cat.Name(o) != "" {
				return
			}
		}
		if n := w.Name(loc); n != "" {
			out[catalogKey{db, rel}] = n
		}
	}
	for k := range w.files {
		add(k.db, k.rel)
	}
	for k := range w.relmap {
		add(k.db, k.rel)
	}
	for k := range w.mapped {
		add(k.db, k.rel) // the initial file of a mapped catalog
	}
	return out
}
