package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare two archives per resource manager and record type",
		ArgsUsage: "A B",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "by", Value: "record", Usage: "rows per `KEY`: record or rmgr"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or csv"},
			&cli.IntFlag{Name: "blcksz", Value: 8192, Usage: "data page size BLCKSZ"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "read with `N` workers (default: one per core)"},
		},
		Action: act(compareAction),
	}
}

// compareAction puts two streams side by side (the same workload at two
// wal_levels or two XLOG_BLCKSZ, say): per row the records and WAL bytes of
// each, the difference and the ratio B/A, and a warning on stderr when their
// starting conditions differ.
func compareAction(c *cli.Command) error {
	if c.NArg() != 2 {
		return usageErr("compare needs two inputs, A and B")
	}
	switch c.String("by") {
	case "record", "rmgr":
	default:
		return usageErr("unrecognized value for option --by: %s", c.String("by"))
	}
	switch c.String("format") {
	case "text", "json", "csv":
	default:
		return usageErr("unrecognized value for option --format: %s", c.String("format"))
	}
	perRecord := c.String("by") == "record"
	var prof [2]*stats.Profile
	for i, path := range c.Args().Slice() {
		src, err := openArchive(path) // local, or s3://, gs://, azblob://
		if err != nil {
			return openErr([]string{path}, err)
		}
		p, err := stats.ProfileStream(src, xlog.Options{FollowHistory: true}, c.Int("blcksz"), jobs(c))
		if err != nil {
			return readerSetupError(err)
		}
		prof[i] = p
	}
	a, b := prof[0], prof[1]
	if a.AfterCheckpoint != b.AfterCheckpoint {
		which := map[bool]string{true: "right after a checkpoint", false: "in the middle of a checkpoint cycle"}
		fmt.Fprintf(c.Root().ErrWriter, "walscope: warning: the two streams start differently: A %s, B %s; "+
			"the one that did not start after a checkpoint may lack the page images of its first changes\n",
			which[a.AfterCheckpoint], which[b.AfterCheckpoint])
	}
	rowsA := rowMap(&a.Stats, perRecord)
	rowsB := rowMap(&b.Stats, perRecord)
	var names []string
	seen := map[string]bool{}
	for _, r := range append(a.Stats.Rows(perRecord), b.Stats.Rows(perRecord)...) {
		if !seen[r.Name] && (rowsA[r.Name].Count > 0 || rowsB[r.Name].Count > 0) {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	}
	t := &format.Table{
		Columns: []string{"type", "records_a", "records_b", "bytes_a", "bytes_b", "fpi_bytes_a", "fpi_bytes_b", "bytes_diff", "bytes_ratio"},
		Numeric: []bool{false, true, true, true, true, true, true, true, true},
	}
	row := func(name string, x, y stats.Counter) {
		ratio := ""
		if x.Total() > 0 {
			ratio = strconv.FormatFloat(float64(y.Total())/float64(x.Total()), 'f', 3, 64)
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprint(x.Count), fmt.Sprint(y.Count), fmt.Sprint(x.Total()), fmt.Sprint(y.Total()),
			fmt.Sprint(x.FPILen), fmt.Sprint(y.FPILen), fmt.Sprint(int64(y.Total()) - int64(x.Total())), ratio})
	}
	for _, n := range names {
		row(n, rowsA[n], rowsB[n])
	}
	ta, tb := a.Stats.Totals(), b.Stats.Totals()
	row("Total", ta, tb)
	out := bufio.NewWriter(c.Root().Writer)
	defer out.Flush()
	if c.String("format") == "text" {
		fmt.Fprintf(out, "A: %s, %d-byte pages, wal_level %s, %s to %s\nB: %s, %d-byte pages, wal_level %s, %s to %s\n\n",
			c.Args().Get(0), a.PageSize, a.WalLevel, a.Start, a.End,
			c.Args().Get(1), b.PageSize, b.WalLevel, b.Start, b.End)
	}
	if err := t.Write(out, c.String("format")); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return compareEnd(c, prof)
}

// compareEnd: the comparison covers each stream up to where it ends; a
// stream that ends in an error (damage, a file walscope may not read) is then
// reported as every command reports it, with its class and exit code,
// naming the input (the first of two such errors on its own line).
func compareEnd(c *cli.Command, prof [2]*stats.Profile) error {
	var last *exitError
	for i, p := range prof {
		if p.Err == nil {
			continue
		}
		e, ok := endOfRun(io.Discard, p.End, p.Err, true, true).(*exitError)
		if !ok || e == nil {
			continue
		}
		e.msg = fmt.Sprintf("%s (%s): %s", "AB"[i:i+1], c.Args().Get(i), e.msg)
		if last != nil {
			fmt.Fprintf(c.Root().ErrWriter, "walscope: error: %s\n", last.msg)
			e.code = max(e.code, last.code)
		}
		last = e
	}
	if last == nil {
		return nil
	}
	return last
}

func rowMap(s *stats.Stats, perRecord bool) map[string]stats.Counter {
	m := map[string]stats.Counter{}
	for _, r := range s.Rows(perRecord) {
		m[r.Name] = r.Counter
	}
	return m
}
