package walscope_test

import (
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// allowed lists, for each package of the module, the packages of the module it
// may import: imports point one way, xlog ← decode ← rmgr ← the analyses
// (pass, stats, verify, names, incident, whatif, backup) ← format ← report,
// with export (the datasets) beside format on the analyses, and cmd on
// top of all (go/build/deps_test.go style). A new edge must be added here on
// purpose, and so must a new package (TestNoArrowOutsideExport checks that
// every package of the module is listed).
var allowed = map[string][]string{
	"xlog":          {},
	"xlog/xlogtest": {"xlog"},
	"xlog/archive":  {"xlog"},
	"xlog/stream":   {"xlog"},
	"decode":        {"xlog"},
	"rmgr":          {"xlog", "decode"},
	// The analyses, one job a package (issue 28): first passes on the
	// engine; statistics and the shared counters; verification; names from
	// the WAL and catalog files; incidents (events, PITR); what-if, settings
	// and advice; base backups.
	"pass":                 {"xlog", "xlog/stream", "decode"},
	"stats":                {"xlog", "xlog/stream", "decode", "rmgr"},
	"verify":               {"xlog", "xlog/archive", "xlog/stream", "decode", "pass"},
	"names":                {"xlog", "xlog/stream", "decode", "rmgr", "pass"},
	"incident":             {"xlog", "xlog/stream", "decode", "rmgr", "pass", "stats", "verify", "names", "backup"},
	"whatif":               {"xlog", "xlog/stream", "decode", "rmgr", "pass", "stats", "verify"},
	"replay":               {"xlog", "xlog/stream", "decode", "rmgr", "heap", "xactstate", "catalog", "tuple", "backup"},                 // pages, commit state and catalogs as of a recovery target (issue 26); xlog/stream: its WAL read on every core
	"table":                {"xlog", "decode", "rmgr", "heap", "xactstate", "catalog", "tuple", "typeout", "backup", "replay", "export"}, // rows of a relation as of a target (issue 27); export: --format parquet
	"backup":               {"xlog", "decode", "internal/outfile"},                                                                       // internal/outfile: the index files of gzip tars written as outputs are
	"xactstate":            {"xlog", "decode", "rmgr"},                                                                                   // commit state as of an LSN: pg_xact, pg_subtrans, pg_multixact, pg_twophase advanced by the WAL (issue 26)
	"format":               {"xlog", "decode", "rmgr", "stats", "verify", "names", "incident", "whatif", "backup"},
	"report":               {"xlog", "decode", "rmgr", "stats", "verify", "names", "incident", "whatif", "format", "growth"},
	"export":               {"xlog", "xlog/archive", "decode", "rmgr", "stats", "names", "whatif", "internal/outfile"}, // whatif: the checkpoint spacing estimate of the growth aggregate
	"growth":               {"export"},                                                                                 // growth over months and a forecast, from an incremental dataset's manifests (issue 29.2)
	"cmd/walscope":         {"xlog", "xlog/archive", "xlog/stream", "decode", "rmgr", "pass", "stats", "verify", "names", "incident", "whatif", "backup", "heap", "xactstate", "catalog", "tuple", "replay", "table", "rows", "typeout", "format", "report", "export", "growth", "internal/outfile", "xlog/objstore", "internal/cliargs", "internal/prefault"},
	"internal/testwal":     {},
	"internal/waltest":     {"xlog", "decode", "internal/testwal"}, // test helpers of the analysis packages
	"internal/outfile":     {},                                     // outputs: atomic replacement, devices streamed to, temporary files removed on a signal
	"internal/cliargs":     {},                                     // flags after positional arguments, moved in front (its fuzz target in a small binary)
	"internal/prefault":    {},                                     // the executable's code mapped in one call at start (main only)
	"internal/archivetest": {},
	"internal/restoretest": {},
	"internal/pgtest":      {},                          // real servers for the oracle tests: clusters, sessions, low-level base backups, restores to a target
	"scripts/pglzbench":    {"xlog", "decode"},          // bench-pglz.sh's pages and Go side
	"tuple":                {"xlog", "decode"},          // heap tuples deformed, varlena classified, TOAST reassembled
	"catalog":              {"xlog", "decode", "tuple"}, // system catalogs per version, relation mapper files
	"heap":                 {"xlog", "decode", "rmgr"},  // heap pages: redo per version, heap_mask, page items

	"rows":    {"xlog", "xlog/stream", "decode", "rmgr", "heap", "xactstate", "catalog", "tuple", "backup", "replay", "table", "typeout", "export"}, // the rows one transaction changed, and the SQL undoing it (issue 27)
	"typeout": {"xlog", "decode", "tuple", "catalog"},                                                                                               // values as the server's output functions print them; COPY, CSV and SQL literal quoting (issue 27)

	// Object stores (issue 14): the clients, imported by the command only;
	// xlog/archive reads a store through its Tree interface, not this package.
	"xlog/objstore":                {},
	"internal/objstoretest":        {"internal/archivetest", "internal/testwal", "xlog/objstore"},
	"internal/objstoretest/objput": {"xlog/objstore"},
	"internal/objstoretest/objls":  {"xlog/objstore"},
}

// mayLinkArrow lists the packages of the module that may link
// github.com/apache/arrow-go (and the gRPC it brings through pqarrow):
// only the test helpers under internal/. The export writes Parquet itself and reads
// it back with arrow-go in its tests only: linked, arrow-go's parquet
// package alone made the binary 33 MB and its start 2 ms slower (issue 16).
func mayLinkArrow(pkg string) bool {
	return strings.HasPrefix(pkg, "internal/")
}

const module = "github.com/walscope/walscope/"

func TestImportDirection(t *testing.T) {
	for pkg, ok := range allowed {
		dir := filepath.FromSlash(pkg)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue // not written yet
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, noGo := err.(*build.NoGoError); noGo {
				continue
			}
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				if imp == "os" && (pkg == "decode" || pkg == "rmgr") {
					t.Errorf("%s imports os: decoding does no I/O", pkg)
				}
				continue
			}
			found := false
			for _, a := range ok {
				found = found || a == dep
			}
			if !found {
				t.Errorf("%s imports %s, which the package graph does not allow", pkg, dep)
			}
		}
	}
}

// TestNoArrowOutsideExport checks, from go list's transitive dependencies,
// that no package of the module (the command included) links arrow-go,
// whose tests read the export back with it. It also checks that allowed
// lists every package of the module.
func TestNoArrowOutsideExport(t *testing.T) {
	const arrow = "github.com/apache/arrow-go/"
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, ours := strings.CutPrefix(fields[0], module)
		if !ours {
			continue // the module's root package
		}
		seen++
		if _, ok := allowed[pkg]; !ok {
			t.Errorf("package %s is not in allowed: add it, with the packages it may import", pkg)
		}
		if mayLinkArrow(pkg) {
			continue
		}
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, arrow) {
				t.Errorf("%s links %s (through its imports): only tests may link Arrow", pkg, dep)
				break
			}
		}
	}
	if seen < 8 {
		t.Fatalf("go list listed %d packages of the module:\n%s", seen, out)
	}
}
