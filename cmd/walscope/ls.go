package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/xlog/archive"
)

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list the WAL files of an archive: layout, compression, sizes, timelines, gaps, duplicates and other problems",
		Description: "PATH is a directory (pg_wal, a data directory, pg_receivewal's, a wal-g, pgBackRest or Barman repository),\n" +
			"a tar file or segment files; the default is the current directory. Every file is read whole (decompressed)\n" +
			"unless --quick. Exits 1 if a file has a problem, 2 if the input cannot be read or holds no segment file.",
		ArgsUsage: "[PATH...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
			&cli.BoolFlag{Name: "quick", Usage: "read only the first bytes of each file: sizes as the format declares them (? where it does not), no SHA-1 check, content compared only for duplicates"},
		},
		Action: act(lsAction),
	}
}

// lsReport is ls's JSON output.
type lsReport struct {
	Layout  archive.Layout     `json:"layout"`
	Repo    *archive.RepoInfo  `json:"repository,omitempty"`
	Files   []archive.FileFact `json:"files"`
	Summary archive.Summary    `json:"summary"`
	// NotRead are the files beside the WAL files that were not read, with
	// the reason (not problems: nothing is skipped silently).
	NotRead []archive.NotRead `json:"not_read,omitempty"`
}

// lsAction exits 0 when no file has a problem, 1 when one has, 2 for usage
// errors and inputs that cannot be opened or hold no WAL file.
func lsAction(c *cli.Command) error {
	format := c.String("format")
	if format != "text" && format != "json" {
		return usageErr("unrecognized value for option --format: %s", format)
	}
	paths := c.Args().Slice()
	if len(paths) == 0 {
		paths = []string{"."}
	}
	src, err := openArchive(paths...)
	if err != nil {
		return openErr(paths, err)
	}
	defer src.Close()
	facts, err := src.FactsWith(archive.FactsOptions{Quick: c.Bool("quick")})
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	if len(facts) == 0 {
		return usageErr("could not find any WAL file in %s", strings.Join(paths, " "))
	}
	rep := lsReport{Layout: src.Layout(), Repo: src.Repo(), Files: facts, Summary: archive.Summarize(facts), NotRead: src.NotRead()}
	out := bufio.NewWriter(c.Root().Writer)
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeLsText(out, &rep)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	// Timeline history files alone: listed, then the error every command
	// gives an input with nothing to read (exit 2).
	if err := noSegment(paths, src); err != nil {
		return err
	}
	// The exit code of the classes found, as every command gives it: a file
	// walscope may not read is an input problem (2), the others bad WAL (1).
	if rep.Summary.Problems[archive.ProblemUnreadable.Class()] > 0 {
		return &exitError{code: exitUsage, noHint: true}
	}
	for _, n := range rep.Summary.Problems {
		if n > 0 {
			return &exitError{code: exitProblem}
		}
	}
	return nil
}

func writeLsText(out *bufio.Writer, rep *lsReport) {
	fmt.Fprintf(out, "layout: %s", rep.Layout)
	if r := rep.Repo; r != nil {
		if r.Stanza != "" {
			fmt.Fprintf(out, ", stanza %s", r.Stanza)
		}
		if r.ArchiveID != "" {
			fmt.Fprintf(out, ", archive id %s", r.ArchiveID)
		}
		if r.SystemID != 0 {
			fmt.Fprintf(out, ", archive.info system identifier %d, version %s", r.SystemID, r.Version)
		}
		if r.Note != "" {
			fmt.Fprintf(out, " (%s)", r.Note)
		}
	}
	fmt.Fprintln(out)
	rows := [][]string{{"NAME", "TLI", "COMPRESSION", "STORED", "SIZE", "PATH"}}
	for _, f := range rep.Files {
		comp, size := string(f.Compression), fmt.Sprint(f.Size)
		if comp == "" {
			comp = "?"
		}
		if f.TarCompression != "" && f.TarCompression != archive.None {
			comp += ", tar " + string(f.TarCompression)
		}
		if f.Size < 0 {
			size = "?"
		}
		where := f.Path
		if f.Member != "" {
			where += ":" + f.Member
		}
		rows = append(rows, []string{f.Name, fmt.Sprint(uint32(f.Timeline)), comp, fmt.Sprint(f.StoredSize), size, where})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for k, r := range rows {
		for i, c := range r {
			switch {
			case i == len(r)-1:
				fmt.Fprint(out, c)
			case i == 1 || i == 3 || i == 4: // numbers right-aligned
				fmt.Fprintf(out, "%*s  ", widths[i], c)
			default:
				fmt.Fprintf(out, "%-*s  ", widths[i], c)
			}
		}
		fmt.Fprintln(out)
		if k > 0 {
			for _, p := range rep.Files[k-1].Problems {
				fmt.Fprintf(out, "    %s: %s\n", p.Kind.Class(), p.Message)
			}
		}
	}
	s := rep.Summary
	for _, t := range s.Timelines {
		if t.Segments == 0 {
			fmt.Fprintf(out, "timeline %d: history file only\n", t.TLI)
			continue
		}
		fmt.Fprintf(out, "timeline %d: %d segment files, %s to %s, %d gaps\n", t.TLI, t.Segments, t.First, t.Last, t.Gaps)
	}
	fmt.Fprintf(out, "%d files (%d segment, %d history), %d bytes stored, %d bytes decompressed", s.Files, s.Segments, s.Histories, s.StoredBytes, s.Bytes)
	if s.SystemID != 0 {
		fmt.Fprintf(out, ", system identifier %d", s.SystemID)
	}
	fmt.Fprintln(out)
	var kinds []string
	total := 0
	for k, n := range s.Problems {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		total += n
	}
	sort.Strings(kinds)
	if total == 0 {
		fmt.Fprintln(out, "no problems")
	} else {
		fmt.Fprintf(out, "%d problems: %s\n", total, strings.Join(kinds, ", "))
	}
	if len(rep.NotRead) > 0 {
		fmt.Fprintf(out, "%d other files not read:\n", len(rep.NotRead))
		for _, n := range rep.NotRead {
			fmt.Fprintf(out, "  %s: %s\n", n.Path, n.Reason)
		}
	}
}
