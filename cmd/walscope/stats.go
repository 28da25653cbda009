package main

import (
	"bufio"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/analyze"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog"
)

func statsCommand() *cli.Command {
	flags := append(walFlags(), filterFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "by", Value: "rmgr", Usage: "group by `KEY`: rmgr (pg_waldump --stats) or record (--stats=record)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text (pg_waldump's table), json or csv"},
	)
	return &cli.Command{
		Name:      "stats",
		Usage:     "summarize WAL volume as pg_waldump --stats does",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    statsAction,
	}
}

func statsAction(c *cli.Context) error {
	var perRecord bool
	switch c.String("by") {
	case "rmgr":
	case "record":
		perRecord = true
	default:
		return usageErr("unrecognized value for option --by: %s", c.String("by"))
	}
	format := c.String("format")
	if format != "text" && format != "json" && format != "csv" {
		return usageErr("unrecognized value for option --format: %s", format)
	}
	stdout := bufio.NewWriterSize(c.App.Writer, 64<<10)
	defer stdout.Flush()
	var st analyze.Stats
	quiet := c.Bool("quiet")
	return scan(c, stdout, scanPlan{
		spanBytes:   32 << 20,
		headersOnly: true, // counting needs the headers only
		newSink:     func(bool) recordSink { return &statsSink{} },
		merge: func(s recordSink) error {
			st.Merge(&s.(*statsSink).st)
			return nil
		},
		done: func(_ xlog.LSN, v xlog.Version) error {
			if quiet {
				return nil
			}
			if st.Version == 0 {
				st.Version = v
			}
			switch format {
			case "json":
				return export.WriteStatsJSON(stdout, &st, perRecord)
			case "csv":
				return export.WriteStatsCSV(stdout, &st, perRecord)
			}
			stdout.Write(export.AppendStatsTable(nil, &st, perRecord))
			return nil
		},
	})
}

// statsSink counts one span's records.
type statsSink struct{ st analyze.Stats }

func (s *statsSink) record(_ *decode.Decoder, d *decode.Record) error {
	s.st.Add(d)
	return nil
}
