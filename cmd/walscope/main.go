// Command walscope reads PostgreSQL WAL offline: it validates, decodes and
// prints it as pg_waldump of the version that wrote it would.
//
//	walscope dump [flags] PATH...          every record, pg_waldump's format
//	walscope dump -p DIR STARTSEG [ENDSEG]  pg_waldump's positional form
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/internal/outfile"
	_ "github.com/walscope/walscope/internal/prefault" // the start's page faults in one call (issue 16)
	"github.com/walscope/walscope/names"
)

// Exit codes.
const (
	exitOK      = 0
	exitProblem = 1 // the WAL has a problem, or a command failed on it
	exitUsage   = 2 // usage errors, inputs it may not read, output it could not write
)

func main() {
	// SIGINT or SIGTERM removes the temporary files and staging
	// directories of the outputs being written (a rerun then starts from
	// a clean directory), then exits as the signal would: 128+signal.
	outfile.OnSignal(func(s os.Signal) {
		fmt.Fprintf(os.Stderr, "walscope: %v: stopped, temporary files removed\n", s)
		code := 130
		if s == syscall.SIGTERM {
			code = 143
		}
		os.Exit(code)
	})
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
	code   int
	msg    string
	usage  bool // a flag the parser refused: the usage line follows
	noHint bool // not a usage mistake (output lost, an input it may not read): no hint
}

// outputErr is the error for output that could not be written: exit 2,
// whatever the command.
func outputErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...), noHint: true}
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// version is the release, set by the build
// (-ldflags "-X main.version=v1.2.3"); without it, the module's version from
// the build information.
var version = ""

// versionString is what --version prints: the version, the commit and
// whether the tree had changes, from the build information.
func versionString() string {
	v := version
	var rev, modified string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if rev != "" {
		v += " (commit " + rev + modified + ")"
	}
	return v + ", " + runtime.Version()
}

// errWriter remembers the first error writing to it: output lost (a full
// disk, a closed pipe) fails the run, exit 2, whatever the command.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

func run(args []string, stdout, stderr io.Writer) int {
	out := &errWriter{w: stdout}
	code := runApp(args, out, stderr)
	if out.err != nil {
		fmt.Fprintf(stderr, "walscope: error: could not write the output: %v\n", out.err)
		return exitUsage
	}
	return code
}

// commands are walscope's commands, by name. A run builds only the one it
// runs (all of them for the root's help and --version): each command's flags
// and urfave/cli's set-up of them were a tenth of the start of a run
// (issue 16).
var commands = []commandEntry{
	{"dump", dumpCommand},
	{"stats", statsCommand},
	{"verify", verifyCommand},
	{"whatif", whatifCommand},
	{"advise", adviseCommand},
	{"compare", compareCommand},
	{"ls", lsCommand},
	{"export", exportCommand},
	{"growth", growthCommand},
	{"report", reportCommand},
	{"events", eventsCommand},
	{"pitr", pitrCommand},
	{"page", pageCommand},
	{"table", tableCommand},
	{"rows", rowsCommand},
}

type commandEntry struct {
	name  string
	build func() *cli.Command
}

// isCommand reports whether name is one of walscope's commands.
func isCommand(name string) bool {
	return slices.ContainsFunc(commands, func(c commandEntry) bool { return c.name == name })
}

// buildCommands returns the command named name, or every command when name
// is none of them.
func buildCommands(name string) []*cli.Command {
	for _, c := range commands {
		if c.name == name {
			return []*cli.Command{c.build()}
		}
	}
	all := make([]*cli.Command, len(commands))
	for i, c := range commands {
		all[i] = c.build()
	}
	return all
}

func runApp(args []string, stdout, stderr io.Writer) int {
	name := commandName(args)
	if name != "" && !strings.HasPrefix(name, "-") && name != "help" && name != "h" && !isCommand(name) {
		fmt.Fprintf(stderr, "walscope: error: unknown command %q\nwalscope: hint: Try \"walscope --help\" for the commands.\n", name)
		return exitUsage
	}
	version := "" // the root's --version and help only (the build info is parsed)
	if !isCommand(name) {
		version = versionString()
	}
	app := &cli.Command{
		Name:           "walscope",
		Usage:          "read, validate and analyze PostgreSQL WAL offline",
		Version:        version,
		Writer:         stdout,
		ErrWriter:      stderr,
		Commands:       buildCommands(name),
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return usageErr("%v", err)
		},
	}
	for _, cmd := range app.Commands {
		prepareCommand(cmd)
	}
	err := app.Run(context.Background(), flagsFirst(app, args))
	if err == nil {
		return exitOK
	}
	if w, ok := stdout.(*errWriter); ok && w.err != nil {
		return exitUsage // run says the output was lost, once
	}
	if e, ok := err.(*exitError); ok {
		if e.msg != "" {
			fmt.Fprintf(stderr, "walscope: error: %s\n", e.msg)
		}
		if e.code == exitUsage && !e.noHint {
			if cmd := app.Command(commandName(args)); cmd != nil && e.usage {
				fmt.Fprintf(stderr, "usage: walscope %s [flags] %s\n", cmd.Name, cmd.ArgsUsage)
			}
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
func jobs(c *cli.Command) int {
	if j := c.Int("jobs"); j > 0 {
		return j
	}
	return runtime.GOMAXPROCS(0)
}

// loadCatalog reads --catalog, a CSV export of pg_class (none without it).
func loadCatalog(c *cli.Command) (names.Catalog, error) {
	f := c.String("catalog")
	if f == "" {
		return nil, nil
	}
	fh, err := os.Open(f)
	if err != nil {
		return nil, usageErr("could not open catalog %q: %v", f, err)
	}
	defer fh.Close()
	cat, err := names.ReadCatalog(fh)
	if err != nil {
		return nil, usageErr("catalog %q: %v", f, err)
	}
	return cat, nil
}
