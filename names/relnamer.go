package names

import "github.com/walscope/walscope/decode"

// RelNamer names relation files: "schema.name", or "" when it does not know
// the file. Catalog is one; names learnt from the WAL itself are another.
type RelNamer interface {
	Name(r decode.RelFileLocator) string
}

// FirstName is a RelNamer asking each of its namers in turn; the first name
// given wins. Nil namers are skipped.
type FirstName []RelNamer

// Name implements RelNamer.
func (f FirstName) Name(r decode.RelFileLocator) string {
	for _, n := range f {
		if n == nil {
			continue
		}
		if s := n.Name(r); s != "" {
			return s
		}
	}
	return ""
}
