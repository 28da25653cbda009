package export

import (
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

// TestCustomRmgrName: a custom resource manager that the program registers
// (rmgr.Register) after the export package was initialized names its
// records in the records and blocks tables, and its record types.
func TestCustomRmgrName(t *testing.T) {
	const id = xlog.RmgrID(201) // custom ids are 128 to 255
	const name = "walscope_test_custom"
	if rmgr.Lookup(id) == nil { // (-count=N runs it again)
		rmgr.Register(&rmgr.Manager{ID: id, Name: name, Identify: func(_ xlog.Version, info uint8) string {
			if info&0xF0 == 0x10 {
				return "TEST_OP"
			}
			return ""
		}})
	}
	if got := rmgr.Name(id); got != name {
		t.Fatalf("rmgr.Name(%d) = %q", id, got)
	}

	// A stream of three records of the custom manager, one whose type it
	// does not name, and a built-in one.
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	for i := range 3 {
		w.Record(id, 0x10, xlog.XID(700+i), xlogtest.MainData(16+i))
	}
	w.Record(id, 0x20, 0, xlogtest.MainData(4))
	w.Record(xlog.RmgrXLOG, 0x20, 0, nil) // XLOG NOOP
	r, err := xlog.NewReader(w.Source(), xlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	dir := t.TempDir()
	ex, err := New(Config{Dir: dir, Tables: []string{TableRecords}, Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	sp := ex.NewSpan()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err != nil {
			if err != io.EOF && !xlog.IsEndOfWAL(err) {
				t.Fatal(err)
			}
			break
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.Add(dec, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := ex.Merge(sp); err != nil {
		t.Fatal(err)
	}
	if err := ex.Finish(nil, r.EndLSN()); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, TableRecords, "*.csv"))
	if len(files) != 1 {
		t.Fatalf("records files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var got [][2]string
	for _, row := range rows[1:] {
		got = append(got, [2]string{row[col["rmgr"]], row[col["record_type"]]})
	}
	want := [][2]string{{name, "TEST_OP"}, {name, "TEST_OP"}, {name, "TEST_OP"}, {name, "UNKNOWN (20)"}, {"XLOG", "NOOP"}}
	if len(got) != len(want) {
		t.Fatalf("records (rmgr, record_type): %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: (rmgr, record_type) %q, want %q", i, got[i], want[i])
		}
	}
}

// TestRmgrNamesRegisteredLater: a span's cached names follow a resource
// manager registered after the span looked its id up.
func TestRmgrNamesRegisteredLater(t *testing.T) {
	const id = xlog.RmgrID(202)
	var c nameCache
	if rmgr.Lookup(id) == nil { // (-count=N runs it again)
		if got := c.rmgr(xlog.V15, id).name; got != "custom202" {
			t.Fatalf("unregistered: %q", got)
		}
		rmgr.Register(&rmgr.Manager{ID: id, Name: "walscope_test_later"})
	}
	if got := c.rmgr(xlog.V15, id).name; got != "walscope_test_later" {
		t.Fatalf("registered: %q", got)
	}
	if got := c.rmgr(xlog.V15, xlog.RmgrHeap).name; got != "Heap" {
		t.Fatalf("Heap: %q", got)
	}
}
