package rows_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/walscope/walscope/rows"
)

// FuzzReadCatalog: any bytes given as a catalog file are read without
// panicking: either refused with ErrCatalogFile (or a read error) or a
// catalog whose every relation answers Desc, Locator and Toast.
func FuzzReadCatalog(f *testing.F) {
	f.Add([]byte(`{"walscope_catalog":1,"server_version_num":150018,"database":{"oid":"5","datname":"postgres","dattablespace":"1663"},` +
		`"namespaces":[{"oid":"2200","nspname":"public"}],` +
		`"classes":[{"oid":"16384","relname":"t","relnamespace":"2200","relfilenode":"16384","relkind":"r","relnatts":2,"reltoastrelid":"16387","relreplident":"d"},` +
		`{"oid":"16390","relname":"t_pkey","relnamespace":"2200","relfilenode":"16390","relkind":"i","relnatts":1}],` +
		`"attributes":[{"attrelid":"16384","attname":"id","atttypid":"23","attlen":4,"attnum":1,"attbyval":true,"attalign":"i"},` +
		`{"attrelid":"16384","attname":"v","atttypid":"25","attlen":-1,"attnum":2,"attalign":"i","atthasmissing":true,"attmissingval":"{x}"}],` +
		`"types":[{"oid":"23","typname":"int4","typlen":4,"typbyval":true,"typtype":"b","typalign":"i"}],` +
		`"enums":null,"ranges":null,"indexes":[{"indexrelid":"16390","indrelid":"16384","indnatts":1,"indnkeyatts":1,"indisprimary":true,"indisvalid":true,"indkey":[1]}]}`))
	f.Add([]byte(`{"walscope_catalog":1,"server_version_num":100023,"database":{"oid":1},"indexes":[{"indkey":"1 2"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cat, err := rows.ReadCatalog(bytes.NewReader(data), 0)
		if err != nil {
			if !errors.Is(err, rows.ErrCatalogFile) {
				t.Fatalf("error not ErrCatalogFile: %v", err)
			}
			return
		}
		for _, c := range cat.Classes() {
			cat.Desc(c.OID)
			cat.Locator(c)
			cat.Toast(c)
		}
	})
}
