package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/xlog/archive"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check every page, record, prev link and segment, and report all problems",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags: append(walFlags(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
			&cli.IntFlag{Name: "blcksz", Value: 8192, Usage: "data page size BLCKSZ of the cluster"},
		),
		Action: act(verifyAction),
	}
}

// verifyAction exits 0 when everything checked is valid (a clean end of WAL
// is valid), 1 when a problem was found, 2 for usage errors and unreadable
// inputs.
func verifyAction(c *cli.Command) error {
	format := c.String("format")
	if format != "text" && format != "json" {
		return usageErr("unrecognized value for option --format: %s", format)
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	workers := jobs(c)
	rep, err := verify.Verify(in.src, in.opts, c.Int("blcksz"), workers)
	if err != nil {
		// No segment could be read at all (an encrypted repository): the
		// report still says what every file is.
		if rep = verify.UnreadableReport(in.src, err); rep == nil {
			// As every command: unreadable WAL is exit 1, with its class.
			return readerSetupError(err)
		}
	}
	if as, ok := in.src.(*archive.Source); ok {
		sum, problems, err := verify.SummarizeArchive(as)
		if err != nil {
			return &exitError{code: exitUsage, msg: err.Error()}
		}
		rep.AddArchive(sum, problems)
		noRecycledEnd(rep, as)
	}
	out := bufio.NewWriter(c.Root().Writer)
	defer out.Flush()
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeVerifyText(out, rep)
	}
	out.Flush()
	if rep.ByClass[verify.ClassUnreadable] > 0 {
		return &exitError{code: exitUsage, noHint: true} // as every command: an input it may not read
	}
	if !rep.OK() {
		return &exitError{code: exitProblem}
	}
	return nil
}

func writeVerifyText(out *bufio.Writer, rep *verify.VerifyReport) {
	for _, p := range rep.Problems {
		fmt.Fprintf(out, "%s: file %s, offset %d, LSN %s: %s", p.Class, p.File, p.Offset, p.LSNStr, p.Message)
		if p.Resume != "" {
			fmt.Fprintf(out, " (resumed at %s)", p.Resume)
		}
		fmt.Fprintln(out)
	}
	if rep.Version == 0 {
		fmt.Fprintln(out, "no WAL could be read: every segment is encrypted or unrecognised")
	} else {
		fmt.Fprintf(out, "PostgreSQL %d WAL, system identifier %d, %d-byte pages, %d-byte segments\n",
			rep.Version, rep.SystemID, rep.PageSize, rep.SegmentSize)
	}
	fmt.Fprintf(out, "checked %d segments, %d records, %d record bytes\n", rep.Segments, rep.Records, rep.RecordBytes)
	for _, t := range rep.Timelines {
		fmt.Fprintf(out, "timeline %d: %s to %s, %d records\n", t.TLI, t.Start, t.End, t.Records)
	}
	if a := rep.Archive; a != nil {
		fmt.Fprintf(out, "archive (%s): %d files, %d bytes stored, %d bytes of WAL\n", strings.Join(a.Layouts, ", "), a.Files, a.StoredBytes, a.Bytes)
		for _, t := range a.Timelines {
			fmt.Fprintf(out, "  timeline %d: %d segments (%s to %s), %d partial\n", t.TLI, t.Segments, t.First, t.Last, t.Partial)
		}
		classes := slices.Sorted(maps.Keys(a.Problems))
		for _, k := range classes {
			fmt.Fprintf(out, "  %s: %d files\n", k, a.Problems[k])
		}
	}
	// Files not read, by reason (in order: one line per run of files
	// skipped for one reason).
	for i := 0; i < len(rep.NotRead); {
		j := i + 1
		for j < len(rep.NotRead) && rep.NotRead[j].Reason == rep.NotRead[i].Reason {
			j++
		}
		// (by name: the same in every layout; --format json gives paths)
		if j-i == 1 {
			fmt.Fprintf(out, "not read: %s: %s\n", rep.NotRead[i].Name, rep.NotRead[i].Reason)
		} else {
			fmt.Fprintf(out, "not read: %d files, %s to %s: %s\n", j-i, rep.NotRead[i].Name, rep.NotRead[j-1].Name, rep.NotRead[i].Reason)
		}
		i = j
	}
	if rep.End != nil {
		fmt.Fprintf(out, "end of WAL at %s: %s\n", rep.End.LSNStr, rep.End.Message)
	}
	for _, p := range rep.AfterEnd {
		fmt.Fprintf(out, "after the end: %s: file %s, offset %d: %s\n", p.Class, p.File, p.Offset, p.Message)
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintln(out, "no problems found")
		return
	}
	classes := make([]string, 0, len(rep.ByClass))
	for c := range rep.ByClass {
		classes = append(classes, string(c))
	}
	sort.Strings(classes)
	fmt.Fprintf(out, "%d problems:", len(rep.Problems))
	for _, c := range classes {
		fmt.Fprintf(out, " %s %d", c, rep.ByClass[verify.Class(c)])
	}
	fmt.Fprintln(out)
}

// noRecycledEnd makes an end of WAL at a recycled segment a problem in a
// backup tool's archive, which holds only complete segments (a plain
// directory may be a live pg_wal, which does hold recycled ones).
func noRecycledEnd(rep *verify.VerifyReport, as *archive.Source) {
	switch as.Layout() {
	case archive.LayoutWALG, archive.LayoutPgBackRest, archive.LayoutBarman:
		rep.NoRecycledEnd(fmt.Sprintf("a %s archive holds no recycled segments: the file holds another segment's pages", as.Layout()))
	}
}
