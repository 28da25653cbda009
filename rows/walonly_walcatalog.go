package rows

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/xlog"
)

// Without a backup and without a catalog file, the columns of the tables a
// transaction changed come from the catalog pages the WAL read shows
// (pg_class, pg_attribute, pg_type, pg_namespace, pg_index, known from
// their images as any page), when it shows all a table needs: its pg_class
// row and every pg_attribute row, each certainly the one visible just
// before the commit; the built-in types from builtinTypes. A row version
// is certain when its xmin and xmax are settled by hint bits or by an end
// record in the WAL read; one with a transaction of unknown fate makes the
// table's rows not given (never a guess).

// The catalogs' oids, and their initdb files (relfilenode = oid; the
// mapped ones follow the relation map updates the WAL read gives).
const (
	pgAttributeOID = 1249
	pgTypeOID      = 1247
	pgNamespaceOID = 2615
	pgIndexOID     = 2610
	firstGenbkiOID = 10000 // FirstGenbkiObjectId: built-in oids are below
)

// t_infomask bits (htup_details.h).
const (
	infoXminCommitted = 0x0100
	infoXminInvalid   = 0x0200
	infoXmaxCommitted = 0x0400
	infoXmaxInvalid   = 0x0800
	infoXmaxLockOnly  = 0x0080
	infoXmaxIsMulti   = 0x1000
)

type visibility uint8

const (
	visible visibility = iota
	invisible
	uncertain
)

// tupleVisibility settles a catalog tuple as of the target from its hint
// bits and the ends the WAL read gave; watched are the transaction and its
// subtransactions, not committed there.
func tupleVisibility(r *replay.Replay, tup []byte, watched map[xlog.XID]bool) visibility {
	if len(tup) < 23 {
		return uncertain
	}
	xmin, xmax := xlog.XID(binary.LittleEndian.Uint32(tup)), xlog.XID(binary.LittleEndian.Uint32(tup[4:]))
	info := binary.LittleEndian.Uint16(tup[20:])
	fate := func(x xlog.XID) visibility { // visible: committed
		if x == 1 || x == 2 {
			return visible
		}
		if watched[x] {
			return invisible
		}
		if c, ok := r.EndedInWAL(x); ok {
			if c {
				return visible
			}
			return invisible
		}
		return uncertain
	}
	switch {
	case info&infoXminCommitted != 0:
	case info&infoXminInvalid != 0:
		return invisible
	default:
		if v := fate(xmin); v != visible {
			return v
		}
	}
	if xmax == 0 || info&infoXmaxInvalid != 0 || info&infoXmaxLockOnly != 0 {
		return visible
	}
	if info&infoXmaxIsMulti != 0 {
		return uncertain
	}
	if info&infoXmaxCommitted != 0 {
		return invisible
	}
	switch fate(xmax) {
	case visible:
		return invisible // deleted, committed
	case invisible:
		return visible // the deleter did not commit
	}
	return uncertain
}

// walCatalog builds database db's catalog for the files the transaction
// changed from the catalog pages the WAL read shows; missing says, for each
// table it cannot give, what the WAL read lacks.
func walCatalog(r *replay.Replay, db uint32, files []decode.RelFileLocator, watched map[xlog.XID]bool) (cat *CatalogFile, missing []string) {
	v := r.Version()
	c := catalog.New(v, db)
	c.AddDatabase(catalog.Database{OID: db})
	// initdb's schemas (pg_namespace.dat: PG_CATALOG_NAMESPACE 11,
	// PG_PUBLIC_NAMESPACE 2200), replaced by any row of theirs the WAL read
	// shows (a renamed public)
	c.AddNamespace(catalog.Namespace{OID: 11, Name: "pg_catalog"})
	c.AddNamespace(catalog.Namespace{OID: 2200, Name: "public"})
	for _, line := range strings.Split(strings.TrimSpace(builtinTypes), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 16 {
			continue
		}
		n := func(i int) int64 { x, _ := strconv.ParseInt(f[i], 10, 64); return x }
		if n(0) >= firstGenbkiOID {
			continue
		}
		c.AddType(catalog.Type{OID: uint32(n(0)), Name: f[1], Namespace: 11, Len: int16(n(2)), ByVal: f[3] == "1", Type: f[4][0],
			Category: f[5][0], Delim: byte(n(6)), Elem: uint32(n(7)), Array: uint32(n(8)), Align: f[9][0], Storage: f[10][0],
			Relid: uint32(n(11)), BaseType: uint32(n(12)), TypMod: int32(n(13)), NDims: int32(n(14)), Collation: uint32(n(15)), IsDefined: true})
	}
	dec := catalog.NewDecoder(v)
	file := func(oid uint32) decode.RelFileLocator {
		loc := decode.RelFileLocator{SpcOID: catalog.DefaultTableSpaceOID, DBOID: db, RelNumber: oid}
		if m, err := r.RelMap(db); err == nil {
			if fn, ok := m.FileNode(oid); ok {
				loc.RelNumber = fn
			}
		}
		return loc
	}
	// every version of the rows: visible ones kept, uncertain ones noted
	classes, unsureClass := map[uint32][]catalog.Class{}, map[uint32]bool{}
	r.KnownTuples(file(pgClassOID), func(_ uint32, _ uint16, tup []byte) error {
		x, err := dec.Class(tup)
		if err != nil {
			return nil
		}
		switch tupleVisibility(r, tup, watched) {
		case visible:
			classes[x.OID] = append(classes[x.OID], x)
		case uncertain:
			unsureClass[x.OID] = true
		}
		return nil
	})
	type attKey struct {
		rel uint32
		num int16
	}
	attrs, unsureAttr := map[attKey][]catalog.Attribute{}, map[uint32]bool{}
	r.KnownTuples(file(pgAttributeOID), func(_ uint32, _ uint16, tup []byte) error {
		x, err := dec.Attribute(tup)
		if err != nil {
			return nil
		}
		switch tupleVisibility(r, tup, watched) {
		case visible:
			attrs[attKey{x.Relid, x.Num}] = append(attrs[attKey{x.Relid, x.Num}], x)
		case uncertain:
			unsureAttr[x.Relid] = true
		}
		return nil
	})
	each := func(oid uint32, add func([]byte) error) {
		loc := file(oid)
		if xs := classes[oid]; len(xs) == 1 && xs[0].RelFileNode != 0 {
			loc.RelNumber = xs[0].RelFileNode
		}
		r.KnownTuples(loc, func(_ uint32, _ uint16, tup []byte) error {
			if tupleVisibility(r, tup, watched) == visible {
				add(tup)
			}
			return nil
		})
	}
	each(pgTypeOID, func(tup []byte) error {
		if x, err := dec.Type(tup); err == nil && x.OID >= firstNormalObjectID {
			c.AddType(x)
		}
		return nil
	})
	each(pgNamespaceOID, func(tup []byte) error { return c.Add(catalog.NamespaceRelationID, tup) })
	each(pgIndexOID, func(tup []byte) error { return c.Add(catalog.IndexRelationID, tup) })
	// the classes whose rows are certain: one visible version, none unsure
	byFile, certain := map[uint32]uint32{}, map[uint32]catalog.Class{}
	for oid, xs := range classes {
		if len(xs) == 1 && !unsureClass[oid] && oid >= firstNormalObjectID {
			certain[oid] = xs[0]
			if xs[0].RelFileNode != 0 {
				byFile[xs[0].RelFileNode] = oid
			}
		}
	}
	c2 := func(oid uint32) *catalog.Class {
		if x, ok := certain[oid]; ok {
			return &x
		}
		return nil
	}
	for _, f := range files {
		oid, ok := byFile[f.RelNumber]
		if !ok {
			missing = append(missing, fmt.Sprintf("relation file %d/%d/%d: its pg_class row is not certain on the pages the WAL read shows", f.SpcOID, f.DBOID, f.RelNumber))
			continue
		}
		cls := c2(oid)
		if cls.Kind != 'r' && cls.Kind != 'm' && cls.Kind != 'p' && cls.Kind != 't' {
			continue
		}
		if unsureAttr[oid] {
			missing = append(missing, fmt.Sprintf("table %s: a pg_attribute row of uncertain visibility", cls.Name))
			continue
		}
		var lack []string
		for n := int16(1); n <= cls.Natts; n++ {
			xs := attrs[attKey{oid, n}]
			if len(xs) != 1 {
				lack = append(lack, strconv.Itoa(int(n)))
				continue
			}
			if c.Type(xs[0].TypID) == nil {
				lack = append(lack, fmt.Sprintf("%d (type %d)", n, xs[0].TypID))
				continue
			}
			c.AddAttribute(xs[0])
		}
		if len(lack) > 0 {
			missing = append(missing, fmt.Sprintf("table %s: pg_attribute rows or types of attributes %s are not on the pages the WAL read shows", cls.Name, strings.Join(lack, ", ")))
			continue
		}
		c.AddClass(*cls)
		if tc := c2(cls.ToastRelid); tc != nil {
			c.AddClass(*tc)
		}
		// its key's indexes (keyOf reads their classes and pg_index rows)
		for ioid, ic := range certain {
			if ix := c.Index(ioid); ic.Kind == 'i' && ix != nil && ix.Relid == oid {
				c.AddClass(ic)
			}
		}
	}
	return &CatalogFile{Catalog: c, MissingText: map[[2]uint32]string{}}, missing
}
