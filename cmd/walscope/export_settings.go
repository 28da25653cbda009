package main

import (
	"time"

	"github.com/urfave/cli/v3"

	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
)

// serverCheckpointFlags are export's flags for the checkpoint settings the
// server had. The WAL records neither; the spacing of the checkpoints
// shows them only where it repeats, and a night's batch reads few
// checkpoints, so one WAL-triggered checkpoint of a night can be left
// "requested" where the whole archive's export names it "wal" (issue 29).
func serverCheckpointFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "current-max-wal-size", Usage: "max_wal_size `SIZE` the server had: checkpoints the spacing alone leaves requested or unknown are named wal where they fall due by it"},
		&cli.StringFlag{Name: "current-checkpoint-timeout", Usage: "checkpoint_timeout `TIME` the server had: checkpoints the spacing alone leaves requested or unknown are named time where they fall due by it"},
		&cli.Float64Flag{Name: "checkpoint-completion-target", Usage: "with --current-max-wal-size: the checkpoint_completion_target `T` the server had (default 0.9; 0.5 before 14)"},
	}
}

// givenCheckpoints returns the checkpoint settings the stream had, as
// --checkpoint-completion-target, --current-max-wal-size and
// --current-checkpoint-timeout give them (whatif's and export's flags),
// over base.
func givenCheckpoints(c *cli.Command, base whatif.CheckpointSettings) (g whatif.GivenSettings, err error) {
	g = whatif.GivenSettings{Base: base, CompletionTarget: c.IsSet("checkpoint-completion-target")}
	if g.CompletionTarget {
		t := c.Float64("checkpoint-completion-target")
		if t < 0 || t > 1 {
			return g, usageErr("invalid value for option --checkpoint-completion-target: %v (0 to 1)", t)
		}
		g.Base.CompletionTarget = t
	}
	if v := c.String("current-max-wal-size"); v != "" {
		if g.MaxWALSize, err = whatif.ParseSize(v); err != nil {
			return g, usageErr("invalid value for option --current-max-wal-size: %v", err)
		}
	}
	if v := c.String("current-checkpoint-timeout"); v != "" {
		if g.Timeout, err = whatif.ParseTimeout(v); err != nil {
			return g, usageErr("invalid value for option --current-checkpoint-timeout: %v", err)
		}
	}
	return g, nil
}

// serverCheckpoints returns CheckPointSegments (from max_wal_size, for
// the WAL's segment size and version) and checkpoint_timeout as the flags
// give them, 0 for each not given.
func serverCheckpoints(c *cli.Command, segSize uint32, v xlog.Version) (segs int, timeout time.Duration, err error) {
	g, err := givenCheckpoints(c, whatif.DefaultCheckpointSettings)
	if err != nil {
		return 0, 0, err
	}
	cur, _ := whatif.CurrentSettings(stats.Inferred{}, segSize, v, g)
	if g.MaxWALSize != 0 {
		segs = cur.CheckpointSegments(segSize, v)
	}
	if g.Timeout != 0 {
		timeout = cur.Timeout
	}
	return segs, timeout, nil
}

// applyServerCheckpoints names the causes of cycles' checkpoints that the
// spacing alone left requested or unknown by the server's settings
// (stats.ApplySettings; segs and timeout as serverCheckpoints gives them,
// nothing done when both are 0), with earlier (the checkpoints of the
// batches before, of an append) as the spacing's start; earlier is not
// changed.
func applyServerCheckpoints(segs int, timeout time.Duration, earlier, cycles []stats.CycleInfo) {
	if segs == 0 && timeout == 0 {
		return
	}
	all := append(append(make([]stats.CycleInfo, 0, len(earlier)+len(cycles)), earlier...), cycles...)
	stats.ApplySettings(all, segs, timeout)
	copy(cycles, all[len(earlier):])
}
