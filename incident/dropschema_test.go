package incident

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
)

// TestDropSchemaNamedFromWAL: the DROP SCHEMA of fixtures/incident (the
// server's facts.json: schema tmp, xid 782) is a drop_schema event that the
// names the WAL carries name: the pg_namespace row the DELETE removed, seen
// in the page images before and in the DELETE's own.
func TestDropSchemaNamedFromWAL(t *testing.T) {
	dir, ok := waltest.FixtureSet(t, "incident")
	if !ok {
		t.Fatal("fixtures/incident missing")
	}
	text, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "incident", "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts []struct {
		Kind, Nspname string
		XID           uint32 `json:"xid"`
	}
	if err := json.Unmarshal(text, &facts); err != nil {
		t.Fatal(err)
	}
	w, _ := walNamesOf(t, testwal.Set{Name: "fixtures/incident", Dir: filepath.Join(testwal.Root(t), "fixtures", "incident")})
	events := readEvents(t, dir, EventsConfig{MinRows: 1000})
	found := 0
	for _, f := range facts {
		if f.Kind != "drop_schema" {
			continue
		}
		for i := range events {
			ev := &events[i]
			if ev.Kind != EventDropSchema || uint32(ev.XID) != f.XID {
				continue
			}
			found++
			if len(ev.DeletedRows) != int(ev.Rows) || ev.Rows == 0 {
				t.Errorf("drop_schema of xid %d: %d deleted rows kept for %d rows", f.XID, len(ev.DeletedRows), ev.Rows)
			}
			NameSchemas(w, ev)
			want := "schema " + f.Nspname + " dropped (1 row(s) deleted from pg_namespace, named from the WAL)"
			if ev.Detail != want {
				t.Errorf("drop_schema of xid %d: %q, want %q", f.XID, ev.Detail, want)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d drop_schema events for the fact, want 1", found)
	}
}
