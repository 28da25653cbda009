package main

import (
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/xlog"
)

// prepareCommand gives every command the same handling of bad arguments:
// a flag the parser refuses is one error line, the usage line and a hint on
// stderr, exit 2 (urfave/cli would print the whole help on stdout), and the
// values shared by the commands are checked before anything is read.
func prepareCommand(cmd *cli.Command) {
	cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return &exitError{code: exitUsage, msg: err.Error(), usage: true}
	}
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if err := checkCommonFlags(c); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	for _, sub := range cmd.Subcommands {
		prepareCommand(sub)
	}
}

// maxJobs bounds -j: more workers than this only costs memory.
const maxJobs = 1024

// checkCommonFlags refuses values of the shared flags that no run could use.
func checkCommonFlags(c *cli.Context) error {
	if c.IsSet("jobs") {
		if j := c.Int("jobs"); j < 1 || j > maxJobs {
			return usageErr("invalid value \"%d\" for option -j/--jobs: between 1 and %d", j, maxJobs)
		}
	}
	if c.IsSet("blcksz") {
		// BLCKSZ is a power of two from 1 kB to 32 kB (configure's
		// --with-blocksize).
		if b := c.Int("blcksz"); b < 1024 || b > 32768 || b&(b-1) != 0 {
			return usageErr("invalid value \"%d\" for option --blcksz: a power of two from 1024 to 32768", b)
		}
	}
	if c.IsSet("top") {
		if n := c.Int("top"); n < 1 {
			return usageErr("invalid value \"%d\" for option --top: at least 1", n)
		}
	}
	if c.IsSet("start") && c.IsSet("end") {
		s, serr := xlog.ParseLSN(c.String("start"))
		e, eerr := xlog.ParseLSN(c.String("end"))
		if serr == nil && eerr == nil && e <= s {
			return usageErr("end WAL location %s is not after start WAL location %s", e, s)
		}
	}
	if c.IsSet("limit") {
		if n := c.Int("limit"); n < 0 {
			return usageErr("invalid value \"%d\" for option -n/--limit", n)
		}
	}
	return nil
}

// flagsFirst moves the flags a command's arguments give after its
// positional arguments in front of them (walscope dump PATH -n 3, report
// --compare A B --out x.html): urfave/cli, as Go's flag package, stops at
// the first positional argument. After "--" everything is positional.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil || cmd.SkipFlagParsing {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	flags := []string{}
	var pos []string
	rest := args[2:]
	dashdash := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			dashdash = true
			pos = append(pos, rest[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	if dashdash || (len(pos) > 0 && strings.HasPrefix(pos[0], "-")) {
		out = append(out, "--")
	}
	return append(out, pos...)
}
