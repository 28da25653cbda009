package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
	format "github.com/walscope/walscope/format"
	"github.com/walscope/walscope/whatif"
)

func adviseCommand() *cli.Command {
	cmd := whatifCommand()
	cmd.Name = "advise"
	cmd.Usage = "recommend max_wal_size, checkpoint_timeout and wal_compression, with their predicted effect"
	cmd.Action = act(func(c *cli.Command) error { return whatifRun(c, printAdvice) })
	return cmd
}

// printAdvice prints whatif.Advise's advice: JSON as it is, text and CSV
// as a table (text with the reasons and the settings taken below it).
func printAdvice(w *whatif.WhatIf, stdout *bufio.Writer, outFormat string) error {
	a := whatif.Advise(w)
	if outFormat == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	}
	t := format.AdviceTable(&a)
	if outFormat != "text" {
		return t.Write(stdout, outFormat)
	}
	if !a.First.IsZero() {
		fmt.Fprintf(stdout, "# WAL read: %s to %s (%s), extrapolated to a day\n", a.First.In(time.Local).Format("2006-01-02 15:04:05 MST"),
			a.Last.In(time.Local).Format("2006-01-02 15:04:05 MST"), a.Last.Sub(a.First).Round(time.Second))
	}
	fmt.Fprintf(stdout, "%s\n\n", format.SettingsNote(w.Settings, w.Assumed))
	if err := t.Write(stdout, outFormat); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	for _, r := range a.Recommendations {
		fmt.Fprintf(stdout, "%s %s: %s\n", r.Setting, r.Advised, r.Why)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return nil
}
