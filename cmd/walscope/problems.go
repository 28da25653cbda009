package main

import (
	"fmt"
	"sort"
	"strings"
)

// maxProblems is how many messages a problems list keeps: one transaction
// or table can have millions of rows that cannot be read (a damaged TOAST
// table), and one message each would make an error of gigabytes.
const maxProblems = 100

// problems are the rows or changes that could not be read: counted all,
// per kind, the first maxProblems messages kept.
type problems struct {
	n     int
	kept  []string
	kinds map[string]int
}

// add counts one problem of kind (what it is of: "delete of public.t"),
// keeping its message while fewer than maxProblems are kept.
func (p *problems) add(kind, msg string) {
	p.n++
	if p.kinds == nil {
		p.kinds = map[string]int{}
	}
	p.kinds[kind]++
	if len(p.kept) < maxProblems {
		p.kept = append(p.kept, msg)
	}
}

// String is the messages kept, and past them how many more, per kind.
func (p *problems) String() string {
	s := strings.Join(p.kept, "; ")
	if p.n <= len(p.kept) {
		return s
	}
	kinds := make([]string, 0, len(p.kinds))
	for k := range p.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%s: %d", k, p.kinds[k])
	}
	return fmt.Sprintf("%s; and %d more (the first %d are listed; all of them by kind: %s)", s, p.n-len(p.kept), len(p.kept), strings.Join(kinds, ", "))
}
