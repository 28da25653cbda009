package main

import (
	"io/fs"
	"path"

	"github.com/urfave/cli/v3"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/whatif"
)

// spacingCarry is what an append's checkpoint spacing estimate needs
// beyond the WAL (export.SpacingCarry): the server's checkpoint settings
// the flags give (serverCheckpoints checked them already), and the growth
// aggregate of the last batch (nil: none), whose simulation it resumes,
// with its state file read from the dataset (dsFS; one that cannot be read
// leaves the batch without the estimate, which growth says).
func spacingCarry(c *cli.Command, last *export.Batch, dsFS fs.FS) *export.SpacingCarry {
	g, _ := givenCheckpoints(c, whatif.DefaultCheckpointSettings)
	out := &export.SpacingCarry{Given: g}
	if last != nil {
		out.Previous = last.Growth
		if name := export.SpacingStateFile(last.Growth); name != "" {
			out.State, _ = fs.ReadFile(dsFS, path.Join(export.ManifestDir, name))
		}
	}
	return out
}
