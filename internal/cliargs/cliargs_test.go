package cliargs

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// fuzzApp has commands with the kinds of flags walscope's have: strings,
// ints and string lists taking a value, with one-letter aliases, and bools
// (cmd/walscope's TestFlagsFirst checks the real commands).
func fuzzApp() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "start", Aliases: []string{"s"}},
		&cli.StringFlag{Name: "path", Aliases: []string{"p"}},
		&cli.IntFlag{Name: "limit", Aliases: []string{"n"}},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}},
		&cli.StringSliceFlag{Name: "rmgr", Aliases: []string{"r"}},
		&cli.BoolFlag{Name: "bkp-details", Aliases: []string{"b"}},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}},
		&cli.BoolFlag{Name: "compare"},
	}
	return &cli.Command{Commands: []*cli.Command{
		{Name: "dump", Flags: flags},
		{Name: "report", Flags: flags},
		{Name: "raw", Flags: flags, SkipFlagParsing: true},
	}}
}

func TestFlagsFirst(t *testing.T) {
	app := fuzzApp()
	for _, tc := range []struct{ in, want string }{
		{"dump PATH -n 3", "dump -n 3 PATH"},
		{"report --compare A B --out x.html", "report --compare --out x.html A B"},
		{"dump -n 3 -- -odd -n", "dump -n 3 -- -odd -n"},
		{"dump PATH --limit=3 -b", "dump --limit=3 -b PATH"},
		{"dump PATH --bogus 3", "dump --bogus PATH 3"},
		{"raw PATH -n 3", "raw PATH -n 3"},
		{"nosuch a -b", "nosuch a -b"},
	} {
		got := FlagsFirst(app, append([]string{"walscope"}, strings.Fields(tc.in)...))
		if g := strings.Join(got[1:], " "); g != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, g, tc.want)
		}
	}
}

// FuzzFlagsFirst: reordering keeps every argument, the program and the
// command first.
func FuzzFlagsFirst(f *testing.F) {
	f.Add("dump\x00PATH\x00-n\x003")
	f.Add("report\x00--compare\x00A\x00B\x00--out\x00x.html")
	f.Add("dump\x00--\x00-x\x00--")
	f.Add("dump\x00-r\x00Heap\x00P\x00--rmgr=Btree\x00-q")
	app := fuzzApp()
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{"walscope"}, strings.Split(s, "\x00")...)
		got := FlagsFirst(app, args)
		if len(got) < 2 || got[0] != args[0] || got[1] != args[1] {
			t.Fatalf("%q became %q: the program and command are not first", args, got)
		}
		a, b := slices.Clone(args), slices.Clone(got)
		a = slices.DeleteFunc(a, func(x string) bool { return x == "--" })
		b = slices.DeleteFunc(b, func(x string) bool { return x == "--" })
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("%q became %q", args, got)
		}
	})
}
