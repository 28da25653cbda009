package catalog_test

import (
	"fmt"

	"github.com/walscope/walscope/catalog"
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
