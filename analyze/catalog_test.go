package analyze

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

	// Empty, without a required column, not CSV, rows of different lengths.
	for _, bad := range []string{"", "relname,database\nt,5\n", "relfilenode\n1\n", "a,\"b\n", "relfilenode,relname\n1,a\n2\n"} {
		if _, err := ReadCatalog(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadCatalog(%q): no error", bad)
		}
	}
}
