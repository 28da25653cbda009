package rows_test

import (
	"fmt"
	"strings"

	"github.com/walscope/walscope/rows"
)

// ExampleReadCatalog reads a catalog file, CatalogQuery's output as psql
// -XAtq writes it (shortened here to one table), and prints what rows
// without a backup reads of it: the table's file and columns.
func ExampleReadCatalog() {
	file := `{"walscope_catalog":1,"server_version_num":150018,
	"database":{"oid":"5","datname":"postgres","dattablespace":"1663"},
	"namespaces":[{"oid":"2200","nspname":"public"}],
	"classes":[{"oid":"16384","relname":"acct","relnamespace":"2200","relfilenode":"16384","relkind":"r","relnatts":2,"relreplident":"d"}],
	"attributes":[{"attrelid":"16384","attname":"id","atttypid":"23","attlen":4,"attnum":1,"attbyval":true,"attalign":"i"},
	              {"attrelid":"16384","attname":"owner","atttypid":"25","attlen":-1,"attnum":2,"attalign":"i"}],
	"types":[{"oid":"23","typname":"int4","typlen":4,"typbyval":true,"typtype":"b","typalign":"i"},
	         {"oid":"25","typname":"text","typlen":-1,"typtype":"b","typalign":"i"}],
	"enums":null,"ranges":null,"indexes":null}`
	cat, err := rows.ReadCatalog(strings.NewReader(file), 15)
	if err != nil {
		fmt.Println(err)
		return
	}
	cls, _ := cat.Resolve("acct")
	loc, _ := cat.Locator(cls)
	fmt.Printf("%s: file %d/%d/%d\n", cls.Name, loc.SpcOID, loc.DBOID, loc.RelNumber)
	for _, a := range cat.Attributes(cls.OID) {
		fmt.Printf("  %s %s\n", a.Name, cat.Type(a.TypID).Name)
	}
	// Output:
	// acct: file 1663/5/16384
	//   id int4
	//   owner text
}
