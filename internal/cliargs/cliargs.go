// Package cliargs reorders a command line so that flags given after the
// positional arguments are parsed (walscope dump PATH -n 3): urfave/cli, as
// Go's flag package, stops at the first positional argument. It is a
// package of its own, apart from cmd/walscope, so that its fuzz target runs
// in a small test binary: in cmd/walscope's, the fuzzing engine's coverage
// bookkeeping over every package the command links was most of each
// execution.
package cliargs

import (
	"strings"

	"github.com/urfave/cli/v3"
)

// FlagsFirst moves the flags a command's arguments give after its
// positional arguments in front of them (walscope dump PATH -n 3, report
// --compare A B --out x.html). args is the whole command line, the program
// name and the command first. After "--" everything is positional; a flag
// the command does not know is moved as it is, for the parser to refuse.
func FlagsFirst(root *cli.Command, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := root.Command(args[1])
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
