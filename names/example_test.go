package names_test

import (
	"fmt"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// Names learnt from the WAL alone, with no catalog export: fixtures/sample
// holds the pg_class and pg_namespace tuples its CREATE TABLE and CREATE
// INDEX statements wrote (fixtures/generate.sh: tables t, big, mi, bt, bt2
// and h, their indexes and TOAST tables), so its files are named
// schema.table. A file the WAL never named has no name.
func ExampleLearnNames() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	w, err := names.LearnNames(src, xlog.Options{}, 8192)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d files named from %d pg_class tuples\n", len(w.Files()), w.ClassTuples)
	for _, relNumber := range []uint32{16385, 16390, 16453, 16456, 16389, 99999} {
		rel := decode.RelFileLocator{SpcOID: 1663, DBOID: 16384, RelNumber: relNumber}
		fmt.Printf("%d: %q\n", relNumber, w.Name(rel))
	}
	if r, ok := w.Lookup(decode.RelFileLocator{SpcOID: 1663, DBOID: 16384, RelNumber: 16456}); ok {
		fmt.Printf("16456: relkind %c, oid %d, named at %v\n", r.Kind, r.OID, r.LSN)
	}
	// Output:
	// 17 files named from 46 pg_class tuples
	// 16385: "public.t"
	// 16390: "public.t_pkey"
	// 16453: "public.bt"
	// 16456: "public.bt_k"
	// 16389: "pg_toast.pg_toast_16385_index"
	// 99999: ""
	// 16456: relkind i, oid 16456, named at 0/75BB30
}
