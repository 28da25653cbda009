package incident

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
)

// TestWALNamesVersions: on real WAL of PostgreSQL 13 and 18
// (fixtures/incident-pg13, fixtures/incident-pg18, made by their
// generate.sh with Debian's bullseye and sid servers: a schema app with
// app.orders, public.audit, then DROP TABLE app.orders, TRUNCATE
// public.audit, CREATE SCHEMA tmp with tmp.t and DROP SCHEMA tmp CASCADE):
// every relation file of facts.json (the table's, its TOAST table's, the
// TOAST index's and its indexes', before and after) is named by WALNames as
// the server named it, dropped ones included; every file of catalog.csv the
// WAL names has the catalog's name; the drop and truncate events carry the
// facts' xids, files and replaced files; the dropped schema is named by
// NameSchemas. Before 15 analyze pairs new and replaced files only where a
// transaction made one file (PairRewrites), so on 13 the TRUNCATE (four new
// files) shows as create and drop events of its xid, as the README says.
func TestWALNamesVersions(t *testing.T) {
	for _, v := range []string{"13", "18"} {
		name := "incident-pg" + v
		t.Run(name, func(t *testing.T) {
			dir, ok := waltest.FixtureSet(t, name)
			if !ok {
				t.Skip("fixtures/" + name + " not present")
			}
			set := testwal.Set{Name: "fixtures/" + name, Dir: filepath.Join(testwal.Root(t), "fixtures", name)}
			raw, err := os.ReadFile(filepath.Join(set.Dir, "facts.json"))
			if err != nil {
				t.Fatal(err)
			}
			var facts []waltest.IncidentFact
			if err := json.Unmarshal(raw, &facts); err != nil {
				t.Fatal(err)
			}
			if ver, _ := os.ReadFile(filepath.Join(set.Dir, "settings.txt")); !strings.Contains(string(ver), "PostgreSQL) "+v+".") {
				t.Fatalf("settings.txt is not of PostgreSQL %s: %s", v, ver)
			}
			w, files := walNamesOf(t, set)

			// names of the facts' files
			named := 0
			wantName := func(kind string, f *waltest.IncidentFact, relname string, file uint32) {
				t.Helper()
				nsp := *f.Nspname
				if strings.HasPrefix(relname, "pg_toast_") {
					nsp = "pg_toast"
				}
				want := nsp + "." + relname
				loc := decode.RelFileLocator{DBOID: *f.DatabaseOID, RelNumber: file}
				if got := w.Name(loc); got != want {
					t.Errorf("%s: file %d/%d: WAL names it %q, the server %q (history %+v)", kind, *f.DatabaseOID, file, got, want, w.History(loc))
				}
				named++
			}
			for i := range facts {
				f := &facts[i]
				if f.Relname == nil || f.DatabaseOID == nil {
					continue
				}
				for _, file := range []*uint32{f.Relfilenode, f.RelfilenodeNext} {
					if file != nil {
						wantName(f.Kind, f, *f.Relname, *file)
					}
				}
				for _, r := range f.Related {
					wantName(f.Kind, f, r.Relname, r.Relfilenode)
				}
				for _, r := range f.RelatedAfter {
					wantName(f.Kind, f, r.Relname, r.Relfilenode)
				}
			}
			if named < 14 {
				t.Errorf("only %d files of facts.json checked", named)
			}

			// catalog.csv agrees wherever the WAL names a file
			fh, err := os.Open(filepath.Join(set.Dir, "catalog.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			rows, err := csv.NewReader(fh).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			agreed := 0
			for _, r := range rows[1:] {
				db, _ := strconv.ParseUint(r[0], 10, 32)
				file, _ := strconv.ParseUint(r[2], 10, 32)
				loc := decode.RelFileLocator{DBOID: uint32(db), RelNumber: uint32(file)}
				if got := w.Name(loc); got != "" {
					if want := r[3] + "." + r[4]; got != want {
						t.Errorf("catalog.csv: file %d/%d is %s; WAL names it %q", db, file, want, got)
					}
					agreed++
				}
			}
			if agreed < 10 {
				t.Errorf("only %d files of catalog.csv named from the WAL", agreed)
			}

			// events
			evs := readEvents(t, dir, EventsConfig{MinRows: 100})
			find := func(f *waltest.IncidentFact, kind EventKind, file uint32) *Event {
				t.Helper()
				var found *Event
				for i := range evs {
					e := &evs[i]
					if e.Kind != kind || (file != 0 && e.Rel.RelNumber != file) || uint32(e.XID) != *f.XID {
						continue
					}
					if found != nil {
						t.Errorf("fact %s: two %s events of file %d in xid %d", f.Kind, kind, file, *f.XID)
					}
					found = e
				}
				if found == nil {
					t.Errorf("fact %s: no %s event of file %d with xid %d", f.Kind, kind, file, *f.XID)
					return nil
				}
				if found.Outcome != OutcomeCommit || found.Rel.DBOID != *f.DatabaseOID && file != 0 {
					t.Errorf("fact %s: %s event %+v", f.Kind, kind, *found)
				}
				return found
			}
			checked := 0
			for i := range facts {
				f := &facts[i]
				switch f.Kind {
				case "drop_table":
					find(f, EventDrop, *f.Relfilenode)
					for _, r := range f.Related {
						find(f, EventDrop, r.Relfilenode)
					}
				case "truncate":
					if v == "13" {
						// before 15, analyze pairs a new file with the one it
						// replaces only where the transaction made one
						// (PairRewrites): this TRUNCATE makes four, so the new
						// files are create events and the old ones drop events
						find(f, EventCreate, *f.RelfilenodeNext)
						find(f, EventDrop, *f.Relfilenode)
						for j, r := range f.Related {
							find(f, EventCreate, f.RelatedAfter[j].Relfilenode)
							find(f, EventDrop, r.Relfilenode)
						}
						break
					}
					if e := find(f, EventTruncate, *f.RelfilenodeNext); e != nil && e.Replaced.RelNumber != *f.Relfilenode {
						t.Errorf("truncate: %d replaced %d, event says %d", *f.RelfilenodeNext, *f.Relfilenode, e.Replaced.RelNumber)
					}
					for j, r := range f.Related {
						after := f.RelatedAfter[j]
						if after.Relname != r.Relname {
							t.Fatalf("related and related_after differ in order: %+v %+v", f.Related, f.RelatedAfter)
						}
						// the TOAST table's new file gets no WAL either: truncate or rewrite
						var e *Event
						for k := range evs {
							if (evs[k].Kind == EventTruncate || evs[k].Kind == EventRewrite) && evs[k].Rel.RelNumber == after.Relfilenode {
								e = &evs[k]
							}
						}
						switch {
						case e == nil:
							t.Errorf("truncate: no event for %s's new file %d", r.Relname, after.Relfilenode)
						case uint32(e.XID) != *f.XID || e.Replaced.RelNumber != r.Relfilenode:
							t.Errorf("truncate: %s's %d replaced %d in xid %d; event: xid %d, replaced %d", r.Relname, after.Relfilenode, r.Relfilenode, *f.XID, e.XID, e.Replaced.RelNumber)
						}
					}
				case "create_table":
					find(f, EventCreate, *f.Relfilenode)
				case "drop_schema":
					find(f, EventDrop, *f.Relfilenode)
					if e := find(f, EventDropSchema, 0); e != nil {
						NameSchemas(w, e)
						want := "schema " + *f.Nspname + " dropped (1 row(s) deleted from pg_namespace, named from the WAL)"
						if e.Detail != want {
							t.Errorf("drop_schema: %q, want %q", e.Detail, want)
						}
					}
				default:
					continue
				}
				checked++
			}
			if checked != 4 {
				t.Errorf("%d facts checked, want 4", checked)
			}
			t.Logf("%d facts, %d of their files named as the server named them, %d files of catalog.csv named alike; %d of the %d files the WAL writes named", len(facts), named, agreed, countNamed(w, files), len(files))
		})
	}
}
