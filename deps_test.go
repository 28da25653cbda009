package walscope_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// allowed lists, for each package of the module, the packages of the module it
// may import: imports point one way, xlog ← decode ← rmgr ← analyze ← export ← cmd
// (go/build/deps_test.go style). A new edge must be added here on purpose.
var allowed = map[string][]string{
	"xlog":                 {},
	"xlog/xlogtest":        {"xlog"},
	"xlog/archive":         {"xlog"},
	"decode":               {"xlog"},
	"rmgr":                 {"xlog", "decode"},
	"analyze":              {"xlog", "xlog/archive", "decode", "rmgr"},
	"export":               {"xlog", "xlog/archive", "decode", "rmgr", "analyze"},
	"cmd/walscope":         {"xlog", "xlog/archive", "decode", "rmgr", "analyze", "export"},
	"internal/testwal":     {},
	"internal/archivetest": {},
}

const module = "github.com/walscope/walscope/"

func TestImportDirection(t *testing.T) {
	for pkg, ok := range allowed {
		p, err := build.ImportDir(filepath.FromSlash(pkg), 0)
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
