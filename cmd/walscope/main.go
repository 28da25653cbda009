// Command walscope reads PostgreSQL WAL offline: it validates, decodes and
// prints it as pg_waldump of the version that wrote it would.
//
//	walscope dump [flags] PATH...          every record, pg_waldump's format
//	walscope dump -p DIR STARTSEG [ENDSEG]  pg_waldump's positional form
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/analyze"
)

// Exit codes.
const (
	exitOK      = 0
	exitProblem = 1 // the WAL has a problem, or a command failed on it
	exitUsage   = 2 // usage errors, unreadable inputs
)

func main() {
	// WALSCOPE_CPUPROFILE=FILE writes a CPU profile of the run, for the
	// benchmarks' "measure before and after" (go tool pprof FILE).
	if path := os.Getenv("WALSCOPE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			code := run(os.Args, os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
		fmt.Fprintf(os.Stderr, "walscope: cannot profile to %s\n", path)
	}
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func run(args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:      "walscope",
		Usage:     "read, validate and analyze PostgreSQL WAL offline",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			dumpCommand(),
			statsCommand(),
			verifyCommand(),
			whatifCommand(),
			compareCommand(),
			lsCommand(),
			exportCommand(),
			reportCommand(),
			eventsCommand(),
			pitrCommand(),
		},
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return usageErr("%v", err)
		},
	}
	err := app.Run(args)
	if err == nil {
		return exitOK
	}
	if e, ok := err.(*exitError); ok {
		if e.msg != "" {
			fmt.Fprintf(stderr, "walscope: error: %s\n", e.msg)
		}
		if e.code == exitUsage {
			fmt.Fprintf(stderr, "walscope: hint: Try \"walscope %s --help\" for more information.\n", commandName(args))
		}
		return e.code
	}
	fmt.Fprintf(stderr, "walscope: error: %v\n", err)
	return exitUsage
}

func commandName(args []string) string {
	if len(args) > 1 {
		return args[1]
	}
	return ""
}

// jobs is the number of workers a command reads with: -j/--jobs, or one
// per core.
func jobs(c *cli.Context) int {
	if j := c.Int("jobs"); j > 0 {
		return j
	}
	return runtime.GOMAXPROCS(0)
}

// loadCatalog reads --catalog, a CSV export of pg_class (none without it).
func loadCatalog(c *cli.Context) (analyze.Catalog, error) {
	f := c.String("catalog")
	if f == "" {
		return nil, nil
	}
	fh, err := os.Open(f)
	if err != nil {
		return nil, usageErr("could not open catalog %q: %v", f, err)
	}
	defer fh.Close()
	cat, err := analyze.ReadCatalog(fh)
	if err != nil {
		return nil, usageErr("catalog %q: %v", f, err)
	}
	return cat, nil
}
