package names

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

// walNamesOf reads a set's archive in order into a WALNames, and returns
// the files (database, relfilenode) of the main forks the WAL writes.
func walNamesOf(t *testing.T, set testwal.Set) (*WALNames, map[decode.RelFileLocator]bool) {
	t.Helper()
	w := NewWALNames(nil)
	files := map[decode.RelFileLocator]bool{}
	waltest.ReadSet(t, filepath.Join(testwal.Extract(t, set), "archive"), func(d *decode.Record) {
		w.Add(d)
		for _, b := range d.Blocks {
			if b.Fork() == decode.ForkMain {
				files[decode.RelFileLocator{DBOID: b.Rel.DBOID, RelNumber: b.Rel.RelNumber}] = true
			}
		}
	})
	return w, files
}

// TestWALNamesRewrite: over real PostgreSQL 15 WAL of VACUUM FULL, TRUNCATE,
// CLUSTER and REINDEX (fixtures/rewrite), every file the WAL names has the
// name the server's own catalog gave it (relfilenodes.csv, read from
// pg_class before and after each command: old files before they were
// dropped, new files after), and every file of that catalog the WAL writes
// is named.
func TestWALNamesRewrite(t *testing.T) {
	root := testwal.Root(t)
	set := testwal.Set{Name: "fixtures/rewrite", Dir: filepath.Join(root, "fixtures", "rewrite")}
	truth, err := os.ReadFile(filepath.Join(set.Dir, "relfilenodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w, files := walNamesOf(t, set)
	relOf := map[uint32]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(truth)), "\n")[1:] {
		f := strings.Split(l, ",")
		n, _ := strconv.ParseUint(f[2], 10, 32)
		rel := f[1]
		if !strings.Contains(rel, ".") {
			rel = "public." + rel // regclass text leaves out the schema on the search path
		}
		relOf[uint32(n)] = rel
	}
	const db = 5 // the postgres database
	checked := 0
	for file, want := range relOf {
		loc := decode.RelFileLocator{DBOID: db, RelNumber: file}
		got := w.Name(loc)
		switch {
		case got == "" && files[loc]:
			t.Errorf("file %d (%s) is written by the WAL but not named", file, want)
		case got != "" && got != want:
			t.Errorf("file %d: WAL names it %q, the catalog %q (history %+v)", file, got, want, w.History(loc))
		case got != "":
			checked++
		}
	}
	if checked < 25 {
		t.Errorf("only %d files named", checked)
	}
	t.Logf("%d files of the catalog named from the WAL; %d of the %d files the WAL writes named", checked, countNamed(w, files), len(files))
}

func countNamed(w *WALNames, files map[decode.RelFileLocator]bool) int {
	n := 0
	for f := range files {
		if !w.NoName(f) {
			n++
		}
	}
	return n
}

// TestWALNamesIncident: on the PostgreSQL 15 incident fixture (deletes,
// TRUNCATE, VACUUM FULL, DROP TABLE, DROP SCHEMA ... CASCADE), the WAL names
// every relation of facts.json (the server's answers, taken before each
// step) as the server did, dropped ones and the dropped schema included,
// and agrees with catalog.csv (pg_class at the end) on every file it names.
func TestWALNamesIncident(t *testing.T) {
	root := testwal.Root(t)
	set := testwal.Set{Name: "fixtures/incident", Dir: filepath.Join(root, "fixtures", "incident")}
	factsText, err := os.ReadFile(filepath.Join(set.Dir, "facts.json"))
	if err != nil {
		t.Skip("no fixtures/incident")
	}
	var facts []struct {
		Kind, Nspname, Relname string
		Relfilenode            *uint32 `json:"relfilenode"`
		RelfilenodeAfter       *uint32 `json:"relfilenode_after"`
		DatabaseOID            *uint32 `json:"database_oid"`
	}
	if err := json.Unmarshal(factsText, &facts); err != nil {
		t.Fatal(err)
	}
	w, files := walNamesOf(t, set)
	checked := 0
	for _, f := range facts {
		if f.Relname == "" || f.DatabaseOID == nil {
			continue
		}
		for _, file := range []*uint32{f.Relfilenode, f.RelfilenodeAfter} {
			if file == nil {
				continue
			}
			want := f.Nspname + "." + f.Relname
			if got := w.Name(decode.RelFileLocator{DBOID: *f.DatabaseOID, RelNumber: *file}); got != want {
				t.Errorf("%s: file %d/%d: WAL names it %q, want %q", f.Kind, *f.DatabaseOID, *file, got, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no relation in facts.json")
	}
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
		if got := w.Name(decode.RelFileLocator{DBOID: uint32(db), RelNumber: uint32(file)}); got != "" {
			if want := r[3] + "." + r[4]; got != want {
				t.Errorf("catalog.csv: file %d/%d is %s; WAL names it %q", db, file, want, got)
			}
			agreed++
		}
	}
	t.Logf("%d facts checked, %d files of catalog.csv named alike; %d of the %d files the WAL writes named", checked, agreed, countNamed(w, files), len(files))
}

// knownCatalogs are system catalogs and indexes whose oids (and initial
// files) PostgreSQL fixes in its catalog headers, unchanged from 10 to 18.
var knownCatalogs = map[uint32]string{
	1247: "pg_type", 1249: "pg_attribute", 1255: "pg_proc", 1259: "pg_class",
	1260: "pg_authid", 1261: "pg_auth_members", 1262: "pg_database", 1213: "pg_tablespace",
	2604: "pg_attrdef", 2606: "pg_constraint", 2608: "pg_depend", 2609: "pg_description",
	2610: "pg_index", 2612: "pg_language", 2615: "pg_namespace", 2617: "pg_operator",
	2618: "pg_rewrite", 2619: "pg_statistic", 2620: "pg_trigger", 1214: "pg_shdepend",
	2396: "pg_shdescription", 2662: "pg_class_oid_index", 2663: "pg_class_relname_nsp_index",
	2658: "pg_attribute_relid_attnam_index", 2659: "pg_attribute_relid_attnum_index",
	2703: "pg_type_oid_index", 2704: "pg_type_typname_nsp_index", 2690: "pg_proc_oid_index",
	2691: "pg_proc_proname_args_nsp_index", 2673: "pg_depend_depender_index",
	2674: "pg_depend_reference_index", 2678: "pg_index_indrelid_index", 2679: "pg_index_indexrelid_index",
}

// TestWALNamesSystemCatalogs: on every fixture and corpus (PostgreSQL 13,
// 15 and 18), every file below FirstNormalObjectId (16384) the WAL names is
// a system catalog, TOAST table or index whose oid is its file (initdb gives
// them files equal to their oids) or a catalog the relation mapper maps
// there, named pg_catalog.* or pg_toast.* (information_schema's tables
// aside, under "(namespace N)" when the WAL holds no name for it), with the name its fixed oid has in PostgreSQL's headers; pg_class
// is named in every corpus.
func TestWALNamesSystemCatalogs(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			w, files := walNamesOf(t, set)
			known, class := 0, false
			for f := range files {
				x, ok := w.Lookup(f)
				if !ok || f.RelNumber >= 16384 {
					continue
				}
				name := w.Name(f)
				if x.OID != f.RelNumber && !x.Mapped {
					t.Errorf("file %d/%d named %q has oid %d", f.DBOID, f.RelNumber, name, x.OID)
				}
				if f.RelNumber == relationRelationID && name == "pg_catalog.pg_class" {
					class = true
				}
				// information_schema's namespace is made by initdb with an oid
				// of its own: a WAL without its pg_namespace tuple says so.
				if !strings.HasPrefix(name, "pg_catalog.pg_") && !strings.HasPrefix(name, "pg_toast.pg_toast_") &&
					!strings.HasPrefix(name, "information_schema.sql_") && !strings.HasPrefix(name, "(namespace ") {
					t.Errorf("file %d/%d named %q", f.DBOID, f.RelNumber, name)
				}
				if want, ok := knownCatalogs[x.OID]; ok {
					if name != "pg_catalog."+want {
						t.Errorf("file %d/%d (oid %d) named %q, want pg_catalog.%s", f.DBOID, f.RelNumber, x.OID, name, want)
					}
					known++
				}
			}
			if strings.HasPrefix(set.Name, "corpora/") {
				if !class {
					t.Error("pg_class not named")
				}
				if known < 3 {
					t.Errorf("only %d known catalogs named", known)
				}
			}
			t.Logf("%d of the %d files the WAL writes named (%d known system catalogs); %d pg_class and %d pg_namespace tuples read, %d compressed updates not rebuilt",
				countNamed(w, files), len(files), known, w.ClassTuples, w.NamespaceTuples, w.Unresolved)
		})
	}
}
