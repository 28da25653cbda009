package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

func testApp() *cli.Command {
	return &cli.Command{Commands: []*cli.Command{dumpCommand(), reportCommand(), statsCommand()}}
}

func TestFlagsFirst(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"dump PATH -n 3", "dump -n 3 PATH"},
		{"report --compare A B --out x.html", "report --compare --out x.html A B"},
		{"report A -o x.html -q B", "report -o x.html -q A B"},
		{"dump -n 3 -- -odd -n", "dump -n 3 -- -odd -n"},
		{"dump PATH --limit=3 -b", "dump --limit=3 -b PATH"},
		{"stats PATH --by relation --top 5", "stats --by relation --top 5 PATH"},
		{"dump PATH --bogus 3", "dump --bogus PATH 3"}, // unknown: left for the parser to refuse
		{"nosuch a -b", "nosuch a -b"},
		{"dump", "dump"},
	} {
		got := flagsFirst(testApp(), append([]string{"walscope"}, strings.Fields(tc.in)...))
		if g := strings.Join(got[1:], " "); g != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, g, tc.want)
		}
	}
}
