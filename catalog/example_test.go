package catalog_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// A name is split and folded as PostgreSQL reads 'name'::regclass.
func ExampleParseQualifiedName() {
	parts, err := catalog.ParseQualifiedName(`Sales."Q1 Orders"`)
	fmt.Printf("%q %v\n", parts, err)
	// Output:
	// ["sales" "Q1 Orders"] <nil>
}

// pg_class changed between versions: its oid became a column in 12, and
// relhasoids went away.
func ExampleLayoutOf() {
	for _, v := range []xlog.Version{xlog.V11, xlog.V12} {
		l, _ := catalog.LayoutOf("pg_class", v)
		fmt.Println(v, "columns:", len(l.Attrs), "oid column:", l.Column("oid"), "in header:", l.OIDInHeader,
			"relhasoids:", l.Column("relhasoids"), "relfilenode:", l.Column("relfilenode"))
	}
	// Output:
	// PostgreSQL 11 columns: 33 oid column: -1 in header: true relhasoids: 18 relfilenode: 6
	// PostgreSQL 12 columns: 33 oid column: 0 in header: false relhasoids: -1 relfilenode: 7
}

// Read a table of a stopped (or checkpointed) PostgreSQL 15 cluster from its
// files: the relation maps, the catalogs the maps locate, then the table's
// rows. Visibility is left out here: a tuple on a page may be a dead
// version (see catalog's oracle test for the comparison with the server).
// Not run: it needs a data directory.
func Example_dataDirectory() {
	const dataDir, dbOID = "/var/lib/postgresql/15/main", 5
	shared, err := readMap(filepath.Join(dataDir, "global", "pg_filenode.map"))
	if err != nil {
		fmt.Println(err)
		return
	}
	local, err := readMap(filepath.Join(dataDir, "base", fmt.Sprint(dbOID), "pg_filenode.map"))
	if err != nil {
		fmt.Println(err)
		return
	}
	cat := catalog.New(xlog.V15, dbOID)
	cat.SharedMap, cat.LocalMap = shared, local
	// pg_class is mapped: the map names its file; the other catalogs are
	// then found through their pg_class rows (Locator)
	pgClass, _ := local.FileNode(catalog.RelationRelationID)
	if err := addFile(cat, catalog.RelationRelationID, filepath.Join(dataDir, "base", fmt.Sprint(dbOID), fmt.Sprint(pgClass))); err != nil {
		fmt.Println(err)
		return
	}
	for _, oid := range []uint32{catalog.NamespaceRelationID, catalog.AttributeRelationID, catalog.TypeRelationID, catalog.DatabaseRelationID} {
		loc, err := cat.Locator(cat.Class(oid))
		if err != nil {
			fmt.Println(err)
			return
		}
		dir := filepath.Join("base", fmt.Sprint(loc.DBOID))
		if loc.SpcOID == catalog.GlobalTableSpaceOID {
			dir = "global"
		}
		if err := addFile(cat, oid, filepath.Join(dataDir, dir, fmt.Sprint(loc.RelNumber))); err != nil {
			fmt.Println(err)
			return
		}
	}
	cls, err := cat.Resolve(`public."Orders"`)
	if err != nil {
		fmt.Println(err)
		return
	}
	desc, _ := cat.Desc(cls.OID)
	loc, _ := cat.Locator(cls)
	fmt.Printf("%s: %d columns in base/%d/%d\n", cls.Name, len(desc), loc.DBOID, loc.RelNumber)
}

// addFile adds every tuple of a catalog's file (its first 1 GB segment).
func addFile(cat *catalog.Catalog, catalogOID uint32, path string) error {
	const blcksz = 8192
	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var items []tuple.Item
	for blk := 0; (blk+1)*blcksz <= len(file); blk++ {
		if items, err = tuple.PageItems(items, file[blk*blcksz:(blk+1)*blcksz]); err != nil {
			return fmt.Errorf("%s block %d: %w", path, blk, err)
		}
		for _, it := range items {
			if err := cat.Add(catalogOID, it.Tuple); err != nil {
				return fmt.Errorf("%s block %d item %d: %w", path, blk, it.Offset, err)
			}
		}
	}
	return nil
}

func readMap(path string) (*catalog.RelMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return catalog.ParseRelMap(b)
}
