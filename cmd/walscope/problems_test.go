package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestProblemsCapped: 5,000 changes that cannot be decoded keep the first
// 100 messages, count all 5,000, and say how many of each kind.
func TestProblemsCapped(t *testing.T) {
	var p problems
	for i := range 5000 {
		kind := "delete of public.t"
		if i%5 == 0 {
			kind = "update of public.u"
		}
		p.add(kind, fmt.Sprintf("change %d: TOAST value missing", i))
	}
	s := p.String()
	if p.n != 5000 || strings.Count(s, "TOAST value missing") != maxProblems || !strings.Contains(s, "change 99:") || strings.Contains(s, "change 100:") {
		t.Fatalf("n %d, %d messages kept: %.300s", p.n, strings.Count(s, "TOAST value missing"), s)
	}
	if !strings.HasSuffix(s, "; and 4900 more (the first 100 are listed; all of them by kind: delete of public.t: 4000, update of public.u: 1000)") {
		t.Errorf("summary: %s", s[len(s)-200:])
	}
	var few problems
	few.add("rows", "a")
	few.add("rows", "b")
	if few.String() != "a; b" {
		t.Errorf("two problems: %q", few.String())
	}
}
