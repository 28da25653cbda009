package main

import (
	"github.com/urfave/cli/v3"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/whatif"
)

// spacingCarry is what an append's checkpoint spacing estimate needs
// beyond the WAL (export.SpacingCarry): the server's checkpoint settings
// the flags give (serverCheckpoints checked them already), and the growth
// aggregate of the last batch (nil: none), whose simulation it resumes.
func spacingCarry(c *cli.Command, last *export.Batch) *export.SpacingCarry {
	g, _ := givenCheckpoints(c, whatif.DefaultCheckpointSettings)
	out := &export.SpacingCarry{Given: g}
	if last != nil {
		out.Previous = last.Growth
	}
	return out
}
