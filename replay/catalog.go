package replay

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// The catalogs' oids (pg_*.h) and the tablespaces' (pg_tablespace.dat).
const (
	globalTablespace   = 1664
	defaultTablespace  = 1663
	databaseRelationID = 1262
	classRelationID    = 1259
)

// the catalogs a Catalog reads, besides pg_database and pg_class: by their
// pg_class rows (mapped or not)
var catalogOIDs = []uint32{catalog.NamespaceRelationID, catalog.AttributeRelationID, catalog.TypeRelationID,
	catalog.EnumRelationID, catalog.RangeRelationID, catalog.IndexRelationID, catalog.TableSpaceRelationID}

// VisibleTuples calls each with every tuple of a relation fork's pages as
// of the target that a snapshot there sees (HeapTupleSatisfiesMVCC on a
// standby paused at the target), in physical order: block, then line
// pointer.
//
// Without a backup (Config.NoBackup) there is no commit state from before
// the WAL read: it calls each with every tuple of the known pages
// (KnownTuples), which the caller sorts out.
func (r *Replay) VisibleTuples(rel decode.RelFileLocator, each func(blk uint32, off uint16, tup []byte) error) error {
	if r.cfg.NoBackup {
		return r.KnownTuples(rel, each)
	}
	n, err := r.NBlocks(rel, decode.ForkMain)
	if err != nil {
		return err
	}
	var page []byte
	var items []tuple.Item
	for blk := uint32(0); blk < n; blk++ {
		page, _, err = r.Page(page[:0], rel, decode.ForkMain, blk)
		if err != nil {
			return err
		}
		if isZero(page) {
			continue // a new page (PageIsNew): no tuples
		}
		items, err = tuple.PageItems(items[:0], page)
		if err != nil {
			return fmt.Errorf("relation file %d/%d/%d block %d: %w", rel.SpcOID, rel.DBOID, rel.RelNumber, blk, err)
		}
		for _, it := range items {
			h, ok := xactstate.ParseTupleHeader(it.Tuple)
			if !ok || !r.xacts.TupleVisible(h) {
				continue
			}
			if err := each(blk, it.Offset, it.Tuple); err != nil {
				return err
			}
		}
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Databases returns the pg_database rows as of the target.
func (r *Replay) Databases() ([]catalog.Database, error) {
	shared, err := r.RelMap(0)
	if err != nil {
		return nil, err
	}
	fn, ok := shared.FileNode(databaseRelationID)
	if !ok {
		return nil, fmt.Errorf("the shared relation map has no pg_database")
	}
	dec := catalog.NewDecoder(r.version)
	var out []catalog.Database
	err = r.VisibleTuples(decode.RelFileLocator{SpcOID: globalTablespace, RelNumber: fn}, func(_ uint32, _ uint16, tup []byte) error {
		d, err := dec.Database(tup)
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// Catalog returns database db's catalog as of the target: pg_class,
// pg_namespace, pg_attribute, pg_type, pg_enum, pg_range, pg_index and the shared
// pg_database and pg_tablespace, their visible rows.
func (r *Replay) Catalog(db uint32) (*catalog.Catalog, error) {
	dbs, err := r.Databases()
	if err != nil {
		return nil, err
	}
	c := catalog.New(r.version, db)
	var row *catalog.Database
	for i := range dbs {
		if dbs[i].OID == db {
			row = &dbs[i]
		}
	}
	if row == nil {
		return nil, &Error{Msg: fmt.Sprintf("no database %d at the target", db), Err: ErrNoRelation}
	}
	if c.SharedMap, err = r.RelMap(0); err != nil {
		return nil, err
	}
	if c.LocalMap, err = r.RelMap(db); err != nil {
		return nil, err
	}
	spc := row.Tablespace
	if spc == 0 {
		spc = defaultTablespace
	}
	add := func(oid uint32, loc decode.RelFileLocator) error {
		return r.VisibleTuples(loc, func(blk uint32, off uint16, tup []byte) error {
			if err := c.Add(oid, tup); err != nil {
				return fmt.Errorf("catalog %d, tuple (%d,%d): %w", oid, blk, off, err)
			}
			return nil
		})
	}
	fn, ok := c.SharedMap.FileNode(databaseRelationID)
	if !ok {
		return nil, fmt.Errorf("the shared relation map has no pg_database")
	}
	if err := add(databaseRelationID, decode.RelFileLocator{SpcOID: globalTablespace, RelNumber: fn}); err != nil {
		return nil, err
	}
	fn, ok = c.LocalMap.FileNode(classRelationID)
	if !ok {
		return nil, fmt.Errorf("database %d's relation map has no pg_class", db)
	}
	if err := add(classRelationID, decode.RelFileLocator{SpcOID: spc, DBOID: db, RelNumber: fn}); err != nil {
		return nil, err
	}
	for _, oid := range catalogOIDs {
		cls := c.Class(oid)
		if cls == nil {
			return nil, fmt.Errorf("database %d: pg_class has no row for catalog %d", db, oid)
		}
		loc, err := c.Locator(cls)
		if err != nil {
			return nil, err
		}
		if err := add(oid, loc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// CatalogCommitted returns database db's catalog as of the target as if
// xids (a transaction and the subtransactions its commit record lists) had
// committed there: with a target just before that commit, the catalog as
// the transaction left it, holding the tables it created and the columns
// it added or dropped, which Catalog (as of before the commit) has not.
func (r *Replay) CatalogCommitted(db uint32, xids []xlog.XID) (*catalog.Catalog, error) {
	r.xacts.AssumeCommitted(xids...)
	defer r.xacts.AssumeCommitted()
	return r.Catalog(db)
}

// ErrAmbiguous: a relation name that means relations of several databases.
var ErrAmbiguous = errors.New("relation name matches relations in several databases")

// Relation is a relation resolved as of the target.
type Relation struct {
	Database catalog.Database
	Class    *catalog.Class
	Catalog  *catalog.Catalog
	Locator  decode.RelFileLocator
}

// Resolve finds a relation by name as of the target: "schema.table",
// "table" (search path "$user", public) or "database.schema.table", in
// database db (0: every database that allows connections; a name that
// resolves in more than one is an error listing them).
func (r *Replay) Resolve(name string, db uint32) (*Relation, error) {
	dbs, err := r.Databases()
	if err != nil {
		return nil, err
	}
	parts, perr := catalog.ParseQualifiedName(name)
	if perr != nil {
		return nil, perr
	}
	var found []*Relation
	var tried []string
	for _, d := range dbs {
		if db != 0 && d.OID != db || db == 0 && !d.AllowConn {
			continue
		}
		if len(parts) == 3 && parts[0] != d.Name {
			continue
		}
		c, err := r.Catalog(d.OID)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", d.Name, err)
		}
		tried = append(tried, d.Name)
		cls, err := c.Resolve(name)
		if errors.Is(err, catalog.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		loc, err := c.Locator(cls)
		if err != nil {
			return nil, err
		}
		found = append(found, &Relation{Database: d, Class: cls, Catalog: c, Locator: loc})
	}
	switch len(found) {
	case 0:
		sort.Strings(tried)
		return nil, &Error{Msg: fmt.Sprintf("relation %q does not exist at the target (databases searched: %s)", name, strings.Join(tried, ", ")), Err: ErrNoRelation}
	case 1:
		return found[0], nil
	}
	var list []string
	for _, f := range found {
		list = append(list, fmt.Sprintf("%s.%s (oid %d)", f.Database.Name, name, f.Class.OID))
	}
	return nil, &Error{Msg: fmt.Sprintf("%s: give database.schema.table or --database: %s", name, strings.Join(list, ", ")), Err: ErrAmbiguous}
}

// OpenBackup adapts a backup.Backup to what Run reads.
func OpenBackup(b *backup.Backup) Backup { return backupSource{b} }

type backupSource struct{ *backup.Backup }

func (b backupSource) StartLSN() xlog.LSN { return b.Label().StartLSN }

// DataChecksums tells whether the cluster has data checksums: pages read
// from the backup are then verified.
func (b backupSource) DataChecksums() bool {
	c, err := b.Control()
	return err == nil && c.DataChecksumVersion != 0
}
