package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/backup"
	format "github.com/walscope/walscope/format"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/xlog"
)

func pitrCommand() *cli.Command {
	kinds := make([]string, len(incident.PITRKinds))
	for i, k := range incident.PITRKinds {
		kinds[i] = string(k)
	}
	flags := append(walFlags(),
		&cli.StringFlag{Name: "relation", Aliases: []string{"R"}, Usage: "the relation `REL`: a name (schema.name or name), T/D/R, or a relfilenode"},
		&cli.StringSliceFlag{Name: "event", Usage: "the event `KIND` to stop before (repeatable, or a comma list): " + strings.Join(kinds, ", ") + " (default: any)"},
		&cli.StringFlag{Name: "database", Usage: "only relations of database `OID`"},
		&cli.StringFlag{Name: "catalog", Usage: "name relations from `FILE`, a CSV export of pg_class (see README)"},
		&cli.StringFlag{Name: "target", Value: "lsn", Usage: "the setting printed uncommented: lsn, xid or time"},
		&cli.StringFlag{Name: "target-lsn", Usage: "check recovery_target_lsn `LSN` instead of finding an event"},
		&cli.StringFlag{Name: "target-xid", Usage: "check recovery_target_xid `XID`"},
		&cli.StringFlag{Name: "target-time", Usage: "check recovery_target_time `TIME` (RFC 3339, or 'YYYY-MM-DD HH:MM:SS+ZZ')"},
		&cli.StringFlag{Name: "target-name", Usage: "check recovery_target_name `NAME` (a restore point)"},
		&cli.StringFlag{Name: "backup", Usage: "check that recovery from the base backup at `PATH` (data directory, backup_label, base.tar[.gz|.zst|.lz4], a .backup file, a pgBackRest backup, stanza or repository, a Barman backup or server directory) reaches the target"},
		&cli.Uint64Flag{Name: "min-rows", Value: 1000, Usage: "deletes and updates of at least `N` rows per transaction and relation are events (with --relation, by default every delete and update of that relation is)"},
		&cli.StringFlag{Name: "xid", Usage: "with --relation: the event of transaction `XID` among the relation's candidates"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
		&cli.IntFlag{Name: "blcksz", Value: 8192, Usage: "data page size BLCKSZ of the cluster (WAL does not record it)"},
		&cli.IntFlag{Name: "span-bytes", Value: 32 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span"},
	)
	return &cli.Command{
		Name:      "pitr",
		Usage:     "the recovery settings that stop just before an event (the first drop, truncate, rewrite, delete or update of a relation), and whether a backup and the archive reach it",
		ArgsUsage: "PATH...",
		Flags:     flags,
		Action:    act(pitrAction),
	}
}

func pitrAction(c *cli.Command) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	chosen := c.String("target")
	if chosen != "lsn" && chosen != "xid" && chosen != "time" {
		return usageErr("unrecognized value for option --target: %s (lsn, xid or time)", chosen)
	}
	q := incident.PITRQuery{}
	var scanCfg incident.PITRScanConfig
	hand := 0
	if s := c.String("target-lsn"); s != "" {
		l, err := xlog.ParseLSN(s)
		if err != nil || l == 0 {
			return usageErr("invalid WAL location for option --target-lsn: %q", s)
		}
		q.Target, chosen, scanCfg.TargetLSN = &incident.Target{Kind: "lsn", LSN: l}, "lsn", l
		hand++
	}
	if s := c.String("target-xid"); s != "" {
		x, err := strconv.ParseUint(s, 10, 32)
		if err != nil || x < 3 {
			return usageErr("invalid transaction ID for option --target-xid: %q", s)
		}
		q.Target, chosen = &incident.Target{Kind: "xid", XID: xlog.XID(x)}, "xid"
		hand++
	}
	if s := c.String("target-time"); s != "" {
		t, ok := parseEventTime(s)
		if !ok {
			return usageErr("invalid time %q for option --target-time (RFC 3339, or 'YYYY-MM-DD HH:MM:SS+ZZ')", s)
		}
		q.Target, chosen = &incident.Target{Kind: "time", Time: t}, "time"
		hand++
	}
	if s := c.String("target-name"); s != "" {
		q.Target, chosen = &incident.Target{Kind: "name", Name: s}, "name"
		hand++
	}
	if hand > 1 {
		return usageErr("give at most one of --target-lsn, --target-xid, --target-time, --target-name")
	}
	rel := c.String("relation")
	if hand == 1 && rel != "" {
		return usageErr("give --relation or a --target-* option, not both")
	}
	if hand == 0 && rel == "" {
		return usageErr("give --relation (the event's relation) or a --target-* option")
	}
	if rel != "" {
		f, err := parseEventFilter(c)
		if err != nil {
			return err
		}
		q.Rel = &incident.RelSpec{Name: f.rel, Loc: f.relLoc, RelNumber: f.relNumber}
		if s := c.String("database"); s != "" {
			d, err := strconv.ParseUint(s, 10, 32)
			if err != nil || d == 0 {
				return usageErr("invalid database OID for option --database: %q", s)
			}
			q.Rel.DBOID = uint32(d)
		}
		for _, list := range c.StringSlice("event") {
			for _, k := range strings.Split(list, ",") {
				k = strings.TrimSpace(strings.ToLower(k))
				if k == "" {
					continue
				}
				known := false
				for _, pk := range incident.PITRKinds {
					known = known || string(pk) == k
				}
				if !known {
					return usageErr("unrecognized event kind %q (drop, truncate, rewrite, delete or update)", k)
				}
				q.Kinds = append(q.Kinds, incident.EventKind(k))
			}
		}
	}
	if p := c.String("backup"); p != "" {
		b, err := backup.ReadBackupLabel(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return usageErr("could not open backup %q: no such file or directory", p)
			}
			return usageErr("backup %q: %v", p, err)
		}
		q.Backup = b
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	if hr, ok := in.src.(xlog.HistoryReader); ok {
		q.Histories = func(tli xlog.TimeLineID) []xlog.HistoryEntry {
			key, ok := hr.Histories()[tli]
			if !ok {
				return nil
			}
			text, err := hr.ReadHistory(key)
			if err != nil {
				return nil
			}
			h, _ := xlog.ParseHistory(text, tli)
			return h
		}
	}
	var cat names.Catalog
	var nameSrc *names.NamesReading
	if q.Rel != nil {
		if cat, nameSrc, err = eventNamers(c, in); err != nil {
			return err
		}
		defer nameSrc.Wait()
	}
	scanCfg.Events = incident.EventsConfig{MinRows: minRows(c, q.Rel != nil)}
	if x := c.String("xid"); x != "" {
		if q.Rel == nil {
			return usageErr("--xid chooses among the events of a relation: give --relation too")
		}
		v, err := strconv.ParseUint(x, 10, 32)
		if err != nil || v == 0 {
			return usageErr("invalid transaction ID for option --xid: %q", x)
		}
		q.XID = xlog.XID(v)
	}
	scanCfg.BlockSize, scanCfg.Workers, scanCfg.SpanBytes = c.Int("blcksz"), jobs(c), max(1, c.Int("span-bytes"))
	scan, err := incident.ScanPITR(in.src, in.opts, scanCfg)
	if err != nil {
		return readerSetupError(err)
	}
	if nameSrc != nil {
		w, err := nameSrc.Wait()
		if err != nil {
			return readerSetupError(err)
		}
		q.Namer = names.FirstName{cat, w}
		q.RowCounts = w.RowCountBefore
	}
	plan, err := incident.PlanPITR(scan, q)
	if err != nil {
		if pe, ok := errors.AsType[*incident.PITRError](err); ok {
			return &exitError{code: pe.Code, msg: pe.Msg, noHint: pe.Input}
		}
		return err
	}
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	if outFormat == "json" {
		err = format.WritePITRJSON(stdout, plan, q.Backup, chosen)
	} else {
		err = format.WritePITRText(stdout, plan, q.Backup, chosen)
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// minRows is the least rows of a delete or update event: --min-rows when
// given; else every delete and update when one relation is asked for (a
// whole-table DELETE of a small table is still the event looked for),
// 1000 otherwise.
func minRows(c *cli.Command, oneRelation bool) uint64 {
	if !c.IsSet("min-rows") && oneRelation {
		return 1
	}
	return max(1, c.Uint64("min-rows"))
}
