package names

import (
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
)

func TestReadCatalog(t *testing.T) {
	// Columns found by name, in any order and case; a row of database 0
	// names the relfilenode in every database; a row whose relfilenode is
	// not a number is skipped.
	const in = " RelName ,database,nspname,reltablespace,relfilenode\n" +
		"accounts,5,public,0,16384\n" +
		"pg_class,0,pg_catalog,0,1259\n" +
		"other_db,6,,0,16384\n" +
		"bad,5,public,0,notanumber\n"
	cat, err := ReadCatalog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	rel := func(db, n uint32) decode.RelFileLocator {
		return decode.RelFileLocator{SpcOID: 1663, DBOID: db, RelNumber: n}
	}
	for _, c := range []struct {
		r    decode.RelFileLocator
		want string
	}{
		{rel(5, 16384), "public.accounts"},
		{rel(6, 16384), "other_db"}, // no nspname: the bare name
		{rel(7, 16384), ""},         // no row for database 7, none for database 0
		{rel(5, 1259), "pg_catalog.pg_class"},
		{rel(9, 1259), "pg_catalog.pg_class"}, // database 0: any database
		{rel(5, 99999), ""},
	} {
		if got := cat.Name(c.r); got != c.want {
			t.Errorf("Name(%v) = %q, want %q", c.r, got, c.want)
		}
	}
	if len(cat) != 3 {
		t.Errorf("%d entries, want 3 (the unparsable row skipped)", len(cat))
	}

	// Only relfilenode and relname are required.
	cat, err = ReadCatalog(strings.NewReader("relfilenode,relname\n16384,t\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Name(rel(5, 16384)); got != "t" {
		t.Errorf("minimal catalog: Name = %q, want t", got)
	}

	// A nil catalog names nothing.
	var none Catalog
	if got := none.Name(rel(5, 16384)); got != "" {
		t.Errorf("nil catalog: Name = %q", got)
	}

	// Empty, without a required column, not CSV, rows of different lengths,
	// a line longer than any row (a device like /dev/zero: no line end at
	// all; reading it never ended).
	for _, bad := range []string{"", "relname,database\nt,5\n", "relfilenode\n1\n", "a,\"b\n", "relfilenode,relname\n1,a\n2\n",
		"relfilenode,relname\n1," + strings.Repeat("a", 70<<10) + "\n", strings.Repeat("\x00", 1<<20)} {
		if _, err := ReadCatalog(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadCatalog(%q): no error", bad)
		}
	}
}

// TestCatalogDatabaseNames: with the database and datname columns (the
// README's query), the catalog names the databases; the names do not
// name a relation.
func TestCatalogDatabaseNames(t *testing.T) {
	const in = "database,datname,reltablespace,relfilenode,nspname,relname\n" +
		"5,postgres,0,16384,public,accounts\n" +
		"16390,shop,0,16400,public,orders\n" +
		"0,,0,1262,pg_catalog,pg_database\n"
	cat, err := ReadCatalog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for oid, want := range map[uint32]string{5: "postgres", 16390: "shop", 0: "", 7: ""} {
		if got := cat.DatabaseName(oid); got != want {
			t.Errorf("DatabaseName(%d) = %q, want %q", oid, got, want)
		}
	}
	if got := cat.Name(decode.RelFileLocator{DBOID: 5, RelNumber: 0}); got != "" {
		t.Errorf("relfilenode 0 named %q", got)
	}
	if got := cat.Name(decode.RelFileLocator{DBOID: 16390, RelNumber: 16400}); got != "public.orders" {
		t.Errorf("16390/16400 named %q", got)
	}
	var none Catalog
	if none.DatabaseName(5) != "" {
		t.Error("a nil catalog names a database")
	}
}
