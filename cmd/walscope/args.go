package main

import (
	"context"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/internal/cliargs"
	"github.com/walscope/walscope/xlog"
)

// prepareCommand gives every command the same handling of bad arguments:
// a flag the parser refuses is one error line, the usage line and a hint on
// stderr, exit 2 (urfave/cli would print the whole help on stdout), and the
// values shared by the commands are checked before anything is read.
func prepareCommand(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return &exitError{code: exitUsage, msg: err.Error(), usage: true}
	}
	before := cmd.Before
	cmd.Before = func(ctx context.Context, c *cli.Command) (context.Context, error) {
		if err := checkCommonFlags(c); err != nil {
			return ctx, err
		}
		if before != nil {
			return before(ctx, c)
		}
		return ctx, nil
	}
	for _, sub := range cmd.Commands {
		prepareCommand(sub)
	}
}

// act adapts a command's action to urfave/cli's signature: the commands
// take no context (a run ends on its own or on SIGINT/SIGTERM, which
// internal/outfile handles).
func act(f func(*cli.Command) error) cli.ActionFunc {
	return func(_ context.Context, c *cli.Command) error { return f(c) }
}

// maxJobs bounds -j: more workers than this only costs memory.
const maxJobs = 1024

// checkCommonFlags refuses values of the shared flags that no run could use.
func checkCommonFlags(c *cli.Command) error {
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

// flagsFirst moves the flags given after the positional arguments in front
// of them (internal/cliargs).
func flagsFirst(root *cli.Command, args []string) []string { return cliargs.FlagsFirst(root, args) }
