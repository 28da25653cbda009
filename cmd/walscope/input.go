package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// input is the WAL a command reads, resolved from its arguments.
type input struct {
	src  xlog.Source
	opts xlog.Options
	// pgMode is set for pg_waldump's positional or -p form, where the end of
	// the requested range ends the run silently, as pg_waldump does.
	pgMode bool
	// shardLast is the last segment of export's --shard (opts.End may lie
	// past it, at the end of the record that crosses into the next shard).
	shardLast *uint64
}

// walFlags are the input-selecting flags shared by dump and later commands.
func walFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "start", Aliases: []string{"s"}, Usage: "start reading at WAL location `RECPTR`"},
		&cli.StringFlag{Name: "end", Aliases: []string{"e"}, Usage: "stop reading at WAL location `RECPTR`"},
		&cli.StringFlag{Name: "timeline", Aliases: []string{"t"}, Usage: "timeline `TLI` to read (decimal or 0x hex)"},
		&cli.StringFlag{Name: "path", Aliases: []string{"p"}, Usage: "directory in which to find WAL segment files (pg_waldump's form)"},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "read with `N` workers (default: one per core)"},
	}
}

// resolveInput turns the arguments into a source and reader options. Forms:
//
//	-p DIR [STARTSEG [ENDSEG]]   pg_waldump's form: one timeline, silent end
//	FILE [FILE]                 pg_waldump's STARTSEG [ENDSEG] form
//	DIR | TAR | PATH PATH PATH...  walscope's form: any layout xlog/archive
//	                            knows, timelines followed from history
func resolveInput(c *cli.Command) (*input, error) {
	in, err := resolveArgs(c)
	if err != nil {
		return nil, err
	}
	// export's --shard I/N narrows the input (every pass of the command
	// resolves it alike).
	if s := c.String("shard"); s != "" {
		sh, err := parseShard(s)
		if err != nil {
			return nil, err
		}
		ok, err := applyShard(in, sh)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errEmptyShard
		}
	}
	return in, nil
}

func resolveArgs(c *cli.Command) (*input, error) {
	in := &input{}
	var err error
	if s := c.String("start"); s != "" {
		if in.opts.Start, err = xlog.ParseLSN(s); err != nil {
			return nil, usageErr("invalid WAL location: %q", s)
		}
	}
	if s := c.String("end"); s != "" {
		if in.opts.End, err = xlog.ParseLSN(s); err != nil {
			return nil, usageErr("invalid WAL location: %q", s)
		}
	}
	if s := c.String("timeline"); s != "" {
		t, err := strconv.ParseUint(s, 0, 32)
		if err != nil || t == 0 {
			return nil, usageErr("invalid value %q for option -t/--timeline", s)
		}
		in.opts.Timeline = xlog.TimeLineID(t)
	}
	args := c.Args().Slice()
	dir := c.String("path")

	if dir == "" && anyURL(args) {
		// In an object store: walscope's form only (a prefix, an object).
		return in.archive(args)
	}
	if dir == "" && len(args) == 1 {
		st, err := os.Stat(args[0])
		if err == nil && st.IsDir() {
			return in.archive(args)
		}
		if n, ok := archive.ParseName(filepath.Base(args[0])); err == nil && (!ok || n.History) {
			// Not a segment file: a tar file (or a history file alone).
			return in.archive(args)
		}
	}
	if dir == "" && len(args) == 2 && !isSegmentName(args[0]) && !isSegmentName(args[1]) {
		// Two files that are not segments (base.tar.gz pg_wal.tar.gz):
		// walscope's form, not pg_waldump's STARTSEG ENDSEG.
		return in.archive(args)
	}
	if dir != "" || len(args) == 1 || len(args) == 2 {
		return in.pgWaldump(dir, args)
	}
	if len(args) == 0 {
		return nil, usageErr("no arguments specified")
	}
	// Several paths: directories are read whole, in any layout, tar files
	// whole, other files as a list.
	return in.archive(args)
}

// archive opens paths in any layout xlog/archive knows (a directory, a
// backup tool's repository, tar files, segment files) and follows timelines.
func (in *input) archive(paths []string) (*input, error) {
	src, err := openArchive(paths...)
	if err != nil {
		return nil, openErr(paths, err)
	}
	if err := noSegment(paths, src); err != nil {
		return nil, err
	}
	in.src = src
	in.opts.FollowHistory = true
	return in, nil
}

// noSegment is the usage error for an input that holds timeline history files
// but no segment file (nil if it holds one): nothing to read, exit 2 as an
// input with no WAL file at all ("no input found" in the README's table), the
// same from every command, ls included, whatever the history files hold
// (issue 17: ls exited 0, or 1 for a damaged history file, where the other
// commands exited 2). The message names the history files found.
func noSegment(paths []string, src *archive.Source) error {
	if len(src.Segments()) > 0 {
		return nil
	}
	var names []string
	for _, k := range src.Histories() {
		names = append(names, filepath.Base(k))
	}
	if len(names) == 0 {
		return usageErr("could not find any WAL file in %s", strings.Join(paths, " "))
	}
	sort.Strings(names)
	return usageErr("could not find any WAL segment file in %s, only timeline history files (%s): nothing to read", strings.Join(paths, " "), strings.Join(names, ", "))
}

// openErr is the usage error for an input that cannot be opened.
func openErr(paths []string, err error) error {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e
	}
	if e := storeErr(err); e != nil {
		return e
	}
	if errors.Is(err, xlog.ErrNoSegments) {
		var notRead []archive.NotRead
		if ae, ok := errors.AsType[*archive.Error](err); ok {
			notRead = ae.NotRead
		}
		return usageErr("could not find any WAL file in %s%s", strings.Join(paths, " "), archive.NotReadSummary(notRead)) // as ls says it
	}
	if _, ok := errors.AsType[*archive.Error](err); ok {
		return usageErr("%v", err)
	}
	if errors.Is(err, archive.ErrLayout) || errors.Is(err, xlog.ErrSyntax) {
		return usageErr("%v", err)
	}
	if len(paths) == 1 {
		if errors.Is(err, os.ErrNotExist) {
			return usageErr("could not open %q: no such file or directory", paths[0])
		}
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			return usageErr("could not open %q: %v", pe.Path, pe.Err)
		}
		return usageErr("could not open %q: %v", paths[0], err)
	}
	return usageErr("%v", err)
}

// pgWaldump resolves pg_waldump's -p DIR and STARTSEG [ENDSEG] form
// (src/bin/pg_waldump/pg_waldump.c, main).
func (in *input) pgWaldump(dir string, args []string) (*input, error) {
	in.pgMode = true
	if len(args) > 2 {
		return nil, usageErr("too many command-line arguments (first is %q)", args[2])
	}
	if len(args) == 0 {
		if dir == "" {
			return nil, usageErr("no arguments specified")
		}
		if in.opts.Start == 0 {
			// walscope extension: -p DIR alone reads the whole directory on
			// the given (default 1) timeline.
			in.pgMode = false
		}
		src, err := openArchive(dir)
		if err != nil {
			return nil, openErr([]string{dir}, err)
		}
		if err := noSegment([]string{dir}, src); err != nil {
			return nil, err
		}
		in.src = src
		if in.opts.Timeline == 0 {
			in.opts.Timeline = 1
		}
		return in, nil
	}
	startDir, startName := filepath.Split(args[0])
	if dir == "" {
		dir = startDir
		if dir == "" {
			dir = "."
		}
	}
	src, err := openArchive(dir)
	if errors.Is(err, xlog.ErrNoSegments) {
		return nil, usageErr("could not locate WAL file %q", startName)
	}
	if err != nil {
		return nil, openErr([]string{dir}, err)
	}
	in.src = src
	sn, ok := archive.ParseName(startName)
	if !ok || sn.History {
		return nil, usageErr("could not locate WAL file %q", startName)
	}
	name := sn.Segment
	if !hasFile(src, startName) {
		return nil, usageErr("could not locate WAL file %q", startName)
	}
	segSize, err := segmentSizeOf(src, startName)
	if err != nil {
		return nil, err
	}
	in.opts.Timeline = name.TLI
	segno := name.SegNo(segSize)
	ss := xlog.LSN(segSize)
	if in.opts.Start == 0 {
		in.opts.Start = xlog.LSN(segno) * ss
	} else if uint64(in.opts.Start)/uint64(segSize) != segno {
		return nil, usageErr("start WAL location %s is not inside file %q", in.opts.Start, startName)
	}
	endSeg := segno
	if len(args) == 2 {
		_, endName := filepath.Split(args[1])
		en, ok := archive.ParseName(endName)
		if !ok || en.History || !hasFile(src, endName) {
			return nil, usageErr("could not open file %q", endName)
		}
		in.opts.Timeline = en.TLI
		endSeg = en.Segment.SegNo(segSize)
		if endSeg < segno {
			return nil, usageErr("ENDSEG %s is before STARTSEG %s", args[1], args[0])
		}
	}
	if in.opts.End == 0 {
		in.opts.End = xlog.LSN(endSeg+1) * ss
	}
	if uint64(in.opts.End)/uint64(segSize) != endSeg && in.opts.End != xlog.LSN(endSeg+1)*ss {
		return nil, usageErr("end WAL location %s is not inside file %q", in.opts.End, filepath.Base(args[len(args)-1]))
	}
	return in, nil
}

// isSegmentName reports whether a path's base name is a WAL segment file's
// (plain, compressed, partial or pgBackRest's).
func isSegmentName(p string) bool {
	n, ok := archive.ParseName(filepath.Base(p))
	return ok && !n.History
}

// hasFile reports whether src has the file named base, by its stored name
// or by its segment file name.
func hasFile(src xlog.Source, base string) bool {
	for _, f := range src.Segments() {
		if sameFile(f, base) {
			return true
		}
	}
	return false
}

func sameFile(f xlog.SegmentFile, base string) bool {
	if filepath.Base(f.Path) == base {
		return true
	}
	name := f.Name.String()
	if f.Partial {
		name += ".partial"
	}
	return name == base
}

// segmentSizeOf reads the segment size from the long header of the named file.
func segmentSizeOf(src xlog.Source, base string) (uint32, error) {
	for _, f := range src.Segments() {
		if !sameFile(f, base) {
			continue
		}
		fh, err := src.Open(f)
		if err != nil {
			return 0, badFirstSegment(src, f, usageErr("could not open file %q: %v", base, err))
		}
		defer fh.Close()
		var b [xlog.LongPageHeaderSize]byte
		if n, err := fh.ReadAt(b[:], 0); n < len(b) {
			return 0, badFirstSegment(src, f, &exitError{code: exitProblem, msg: fmt.Sprintf("could not read file %q: read %d of %d (%v)", base, n, len(b), err)})
		}
		h, _ := xlog.ParsePageHeader(b[:])
		if !xlog.ValidSegmentSize(h.SegmentSize) {
			return 0, badFirstSegment(src, f, &exitError{code: exitProblem, msg: fmt.Sprintf("invalid WAL segment size in WAL file %q (%d byte(s))", base, h.SegmentSize)})
		}
		return h.SegmentSize, nil
	}
	return 0, errors.New("not found")
}
