package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/xlog/stream"
)

func eventsCommand() *cli.Command {
	kinds := make([]string, len(incident.EventKinds))
	for i, k := range incident.EventKinds {
		kinds[i] = string(k)
	}
	flags := append(walFlags(),
		&cli.StringFlag{Name: "since", Usage: "only events at or after `TIME` (RFC 3339, or PostgreSQL's 'YYYY-MM-DD HH:MM:SS+ZZ')"},
		&cli.StringFlag{Name: "until", Usage: "only events at or before `TIME`"},
		&cli.StringFlag{Name: "relation", Aliases: []string{"R"}, Usage: "only events of relation `REL`: a name (schema.name or name), T/D/R, or a relfilenode"},
		&cli.StringSliceFlag{Name: "kind", Usage: "only events of `KIND` (repeatable, or a comma list): " + strings.Join(kinds, ", ")},
		&cli.Uint64Flag{Name: "min-rows", Value: 1000, Usage: "report deletes and updates of at least `N` rows per transaction and relation (with --relation, by default all of that relation's)"},
		&cli.StringFlag{Name: "catalog", Usage: "name relations from `FILE`, a CSV export of pg_class (see README)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or csv"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print any output, except for errors"},
		&cli.IntFlag{Name: "blcksz", Value: 8192, Usage: "data page size BLCKSZ of the cluster (WAL does not record it)"},
		&cli.IntFlag{Name: "span-bytes", Value: 32 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span"},
	)
	return &cli.Command{
		Name:      "events",
		Usage:     "the timeline of what happened: relations created, dropped, truncated, rewritten; large deletes and updates; checkpoints, timelines, backups, restore points, settings",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    act(eventsAction),
	}
}

// eventFilter selects the events printed.
type eventFilter struct {
	since, until time.Time
	kinds        map[incident.EventKind]bool
	rel          string
	relLoc       *decode.RelFileLocator
	relNumber    uint32
}

func parseEventFilter(c *cli.Command) (*eventFilter, error) {
	f := &eventFilter{}
	var err error
	for _, opt := range []string{"since", "until"} {
		s := c.String(opt)
		if s == "" {
			continue
		}
		t, ok := parseEventTime(s)
		if !ok {
			return nil, usageErr("invalid time %q for option --%s (RFC 3339, or 'YYYY-MM-DD HH:MM:SS+ZZ')", s, opt)
		}
		if opt == "since" {
			f.since = t
		} else {
			f.until = t
		}
	}
	for _, list := range c.StringSlice("kind") {
		for _, k := range strings.Split(list, ",") {
			k = strings.ReplaceAll(strings.TrimSpace(strings.ToLower(k)), "-", "_")
			if k == "" {
				continue
			}
			known := false
			for _, ek := range incident.EventKinds {
				known = known || string(ek) == k
			}
			if !known {
				return nil, usageErr("unrecognized event kind %q", k)
			}
			if f.kinds == nil {
				f.kinds = map[incident.EventKind]bool{}
			}
			f.kinds[incident.EventKind(k)] = true
		}
	}
	if s := c.String("relation"); s != "" {
		parts := strings.Split(s, "/")
		switch {
		case len(parts) == 3:
			var v [3]uint64
			for i := range parts {
				if v[i], err = strconv.ParseUint(parts[i], 10, 32); err != nil {
					return nil, usageErr("invalid relation specification: %q (a name, T/D/R or a relfilenode)", s)
				}
			}
			f.relLoc = &decode.RelFileLocator{SpcOID: uint32(v[0]), DBOID: uint32(v[1]), RelNumber: uint32(v[2])}
		case len(parts) == 1 && strings.Trim(s, "0123456789") == "":
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil || n == 0 {
				return nil, usageErr("invalid relfilenode %q", s)
			}
			f.relNumber = uint32(n)
		case len(parts) == 1:
			f.rel = s
		default:
			return nil, usageErr("invalid relation specification: %q (a name, T/D/R or a relfilenode)", s)
		}
	}
	return f, nil
}

// parseEventTime reads RFC 3339 or PostgreSQL's timestamptz output; a time
// without a zone is in the local zone (TZ).
func parseEventTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07",
		"2006-01-02 15:04:05.999999999 MST", "2006-01-02T15:04:05.999999999Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (f *eventFilter) match(ev *format.NamedEvent) bool {
	if f.kinds != nil && !f.kinds[ev.Kind] {
		return false
	}
	if !f.since.IsZero() || !f.until.IsZero() {
		t := ev.Time
		if t.IsZero() {
			t = ev.AsOf
		}
		if t.IsZero() || !f.since.IsZero() && t.Before(f.since) || !f.until.IsZero() && t.After(f.until) {
			return false
		}
	}
	switch {
	case f.relLoc != nil:
		return ev.HasRel && (ev.Rel == *f.relLoc || ev.Replaced == *f.relLoc)
	case f.relNumber != 0:
		return ev.HasRel && (ev.Rel.RelNumber == f.relNumber || ev.Replaced.RelNumber == f.relNumber)
	case f.rel != "":
		if ev.Name == "" {
			return false
		}
		if ev.Name == f.rel {
			return true
		}
		_, short, ok := strings.Cut(ev.Name, ".")
		return ok && short == f.rel
	}
	return true
}

// eventNamers starts learning the names the WAL carries (beside the
// events' own reading) and loads --catalog: relations are named by the
// catalog first, then by the WAL.
func eventNamers(c *cli.Command, in *input) (names.Catalog, *names.NamesReading, error) {
	cat, err := loadCatalog(c)
	if err != nil {
		return nil, nil, err
	}
	return cat, names.StartNames(in.src, in.opts, c.Int("blcksz")), nil
}

func eventsAction(c *cli.Command) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	filter, err := parseEventFilter(c)
	if err != nil {
		return err
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	cat, nameSrc, err := eventNamers(c, in)
	if err != nil {
		return err
	}
	defer nameSrc.Wait()
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	stderr := c.Root().ErrWriter
	quiet := c.Bool("quiet")
	ev, res, bound, err := readEvents(in, incident.EventsConfig{MinRows: minRows(c, c.String("relation") != "")}, c.Int("blcksz"), jobs(c), max(1, c.Int("span-bytes")), stderr, quiet)
	if err != nil {
		return err
	}
	if !quiet {
		w, err := nameSrc.Wait()
		if err != nil {
			return readerSetupError(err)
		}
		namer := names.FirstName{cat, w}
		all := ev.Finish()
		var out []format.NamedEvent
		for i := range all {
			ne := format.NameEvent(ev, namer, w, &all[i])
			if filter.match(&ne) {
				out = append(out, ne)
			}
		}
		switch outFormat {
		case "json":
			err = format.WriteEventsJSON(stdout, out, time.Local)
		case "csv":
			err = format.EventsTable(out, time.Local, true).WriteCSV(stdout)
		default:
			err = format.EventsTable(out, time.Local, false).WriteText(stdout)
			if err == nil {
				err = format.WriteEventsRowsBack(stdout, out)
			}
		}
		if err != nil {
			return err
		}
	}
	stdout.Flush()
	return streamEnd(stderr, res, in.pgMode, quiet, bound)
}

// readEvents opens the stream, with a progress bar, and reads its events
// (incident.ReadEvents: on every core).
func readEvents(in *input, cfg incident.EventsConfig, blcksz, workers, spanBytes int, stderr io.Writer, quiet bool) (*incident.Events, stream.Result, string, error) {
	s, err := stream.Open(in.src, stream.Config{Reader: in.opts, Workers: workers, SpanBytes: spanBytes})
	if err != nil {
		return nil, stream.Result{}, "", readerSetupError(err)
	}
	bar := startProgress(stderr, quiet, int64(s.Limit())-int64(s.Start()), int64(s.SegmentSize()))
	defer bar.finish()
	if bar != nil {
		s.SetProgress(bar.add)
	}
	ev, res, err := incident.ReadEvents(s, cfg, blcksz)
	if err != nil {
		return nil, res, "", readerSetupError(err)
	}
	return ev, res, rangeBound(in, s), nil
}
