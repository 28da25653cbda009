package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// Exit codes of the commands that replay WAL onto a backup (page), one per
// kind of failure besides 1 (damaged input) and 2 (usage, unreadable input).
const (
	exitUnreachable = 3 // the target: before the backup is consistent, beyond the WAL, or WAL missing before it
	exitNoRelation  = 4 // the relation does not exist at the target, or the name is ambiguous
	exitOtherSystem = 5 // backup and WAL of different database systems
)

// targetFlags are the recovery target options, as recovery_target_* take them.
func targetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "target-lsn", Usage: "recovery_target_lsn `LSN`"},
		&cli.StringFlag{Name: "target-xid", Usage: "recovery_target_xid `XID`"},
		&cli.StringFlag{Name: "target-time", Usage: "recovery_target_time `TIME` (RFC 3339, or 'YYYY-MM-DD HH:MM:SS+ZZ')"},
		&cli.StringFlag{Name: "target-name", Usage: "recovery_target_name `NAME` (a restore point)"},
		&cli.BoolFlag{Name: "target-inclusive", Value: true, Usage: "recovery_target_inclusive: stop just after the target (true) or just before it"},
	}
}

func pageCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringSliceFlag{Name: "backup", Usage: "the base backup at `PATH` (data directory, pg_basebackup -Fp or -Ft, a pgBackRest backup, a Barman backup; several for a PostgreSQL 17 incremental chain, oldest first)"},
		&cli.StringFlag{Name: "relation", Aliases: []string{"R"}, Usage: "the relation `REL`: a name (schema.table, table, database.schema.table) as of the target, or T/D/R"},
		&cli.StringFlag{Name: "database", Usage: "resolve --relation in database `OID` only (default: every database; an ambiguous name is an error)"},
		&cli.StringFlag{Name: "fork", Value: "main", Usage: "the `FORK` (only main is replayed)"},
		&cli.BoolFlag{Name: "toast", Usage: "the pages of the relation's TOAST table instead"},
		&cli.StringFlag{Name: "block", Usage: "only block `N` (default: every block)"},
	}, targetFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: raw (the pages' bytes), text or json (page_header and heap_page_items fields)"},
		&cli.StringFlag{Name: "out", Usage: "write to `FILE` (replaced when complete) instead of standard output"},
		&cli.StringFlag{Name: "memory", Value: "256MB", Usage: "hold at most `SIZE` of pages in memory; more go to a temporary file"},
		cacheDirFlag(),
		&cli.IntFlag{Name: "blcksz", Value: 0, Hidden: true, Usage: "data page size (default: the backup's pg_control)"},
	)
	return &cli.Command{
		Name:      "page",
		Usage:     "a relation's pages as of a recovery target, rebuilt from a base backup and the WAL without a server",
		ArgsUsage: "WAL...",
		Description: "Exit status: 0 done; 1 damaged input (a record that cannot be replayed, a page failing its checksum); " +
			"2 usage or unreadable input; 3 the target cannot be reached (before the backup is consistent, beyond the WAL, WAL missing); " +
			"4 no such relation at the target (or an ambiguous name); 5 backup and WAL of different systems.",
		Flags:  flags,
		Action: act(pageAction),
	}
}

// parseTarget reads the --target-* options (at most one; none: the end of
// the WAL).
func parseTarget(c *cli.Command) (replay.Target, error) {
	t := replay.Target{Inclusive: c.Bool("target-inclusive")}
	n := 0
	if s := c.String("target-lsn"); s != "" {
		l, err := xlog.ParseLSN(s)
		if err != nil || l == 0 {
			return t, usageErr("invalid WAL location for option --target-lsn: %q", s)
		}
		t.LSN, n = l, n+1
	}
	if s := c.String("target-xid"); s != "" {
		x, err := strconv.ParseUint(s, 10, 32)
		if err != nil || x < 3 {
			return t, usageErr("invalid transaction ID for option --target-xid: %q", s)
		}
		t.XID, n = xlog.XID(x), n+1
	}
	if s := c.String("target-time"); s != "" {
		tm, ok := parseEventTime(s)
		if !ok {
			return t, usageErr("invalid time %q for option --target-time (RFC 3339, or 'YYYY-MM-DD HH:MM:SS+ZZ')", s)
		}
		t.Time, n = tm, n+1
	}
	if s := c.String("target-name"); s != "" {
		t.Name, n = s, n+1
	}
	if n > 1 {
		return t, usageErr("give at most one of --target-lsn, --target-xid, --target-time, --target-name")
	}
	return t, nil
}

// replayError gives a replay's failure its exit code.
func replayError(err error) error {
	switch {
	case errors.Is(err, replay.ErrBeforeConsistent), errors.Is(err, replay.ErrNotReached), errors.Is(err, replay.ErrWALMissing):
		return &exitError{code: exitUnreachable, msg: err.Error(), noHint: true}
	case errors.Is(err, replay.ErrNoRelation), errors.Is(err, replay.ErrAmbiguous):
		return &exitError{code: exitNoRelation, msg: err.Error(), noHint: true}
	case errors.Is(err, replay.ErrOtherSystem):
		return &exitError{code: exitOtherSystem, msg: err.Error(), noHint: true}
	case errors.Is(err, replay.ErrRedoFailed), errors.Is(err, replay.ErrChecksum), errors.Is(err, backup.ErrDamaged), errors.Is(err, xactstate.ErrCorrupt):
		return &exitError{code: exitProblem, msg: err.Error(), noHint: true}
	case errors.Is(err, backup.ErrNotBackup), errors.Is(err, backup.ErrMissingFile):
		return &exitError{code: exitUsage, msg: err.Error(), noHint: true}
	}
	return readerSetupError(err)
}

// openReplay opens the backup and the WAL and replays to the target,
// holding the blocks of the databases hold says (nil: all).
func openReplay(c *cli.Command, b *backup.Backup, hold func(decode.RelFileLocator) bool) (*replay.Replay, *backup.Backup, error) {
	target, err := parseTarget(c)
	if err != nil {
		return nil, nil, err
	}
	mem, err := parseByteSize(c.String("memory"))
	if err != nil || mem <= 0 {
		return nil, nil, usageErr("invalid size for option --memory: %q", c.String("memory"))
	}
	if c.Args().Len() == 0 {
		return nil, nil, usageErr("give the WAL: an archive or pg_wal directory, or files")
	}
	if b == nil {
		if b, err = openBackup(c); err != nil {
			return nil, nil, err
		}
	}
	src, err := archive.Open(c.Args().Slice()...)
	if err != nil {
		b.Close()
		return nil, nil, readerSetupError(err)
	}
	r, err := replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: src, Options: xlog.Options{FollowHistory: true},
		Target: target, Hold: hold, HoldCatalogs: hold != nil, MemoryBytes: mem, TempDir: os.TempDir()})
	if err != nil {
		b.Close()
		return nil, nil, replayError(err)
	}
	return r, b, nil
}

// openBackup opens --backup.
func openBackup(c *cli.Command) (*backup.Backup, error) {
	paths := c.StringSlice("backup")
	if len(paths) == 0 {
		return nil, usageErr("give --backup PATH: the base backup the pages are rebuilt from")
	}
	b, err := backup.OpenOptions(backup.Options{IndexDir: indexDir(c)}, paths...)
	if err != nil {
		return nil, replayError(err)
	}
	return b, nil
}

// cacheDirFlag is --cache-dir, of the commands that open a backup.
func cacheDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "cache-dir", Usage: "keep in `DIR` what a later run on the same backup reuses: the index of a gzip'd tar (where its members lie, and points inflating can resume from), so that it is not inflated whole again " +
		"(default: $WALSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/walscope or ~/.cache/walscope; none: keep nothing)"}
}

// indexDir is where backup.Options.IndexDir points for --cache-dir: its
// gzip-tar-index directory ("" for none, or when there is no home).
func indexDir(c *cli.Command) string {
	dir := c.String("cache-dir")
	if dir == "" {
		dir = os.Getenv("WALSCOPE_CACHE_DIR")
	}
	if dir == "" {
		home, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, "walscope")
	}
	if dir == "none" {
		return ""
	}
	return filepath.Join(dir, "gzip-tar-index")
}

// replayRelation replays to the target holding only the blocks --relation
// needs: the files its name had at the backup's start (replay.FilesNamed),
// the catalogs and every file the WAL makes, in one reading of the WAL; if
// the name means another file at the target (a table renamed to it since),
// a second reading holds that file.
func replayRelation(c *cli.Command) (*replay.Replay, *backup.Backup, decode.RelFileLocator, string, error) {
	var none decode.RelFileLocator
	var opened *backup.Backup // the backup FilesNamed read, handed to the first reading
	spec := c.String("relation")
	want := map[decode.RelFileLocator]bool{}
	if loc, ok := parseLocator(spec); ok {
		want[loc] = true
	} else if parts, err := catalog.ParseQualifiedName(spec); err != nil {
		return nil, nil, none, "", usageErr("invalid relation name %q: %v", spec, err)
	} else {
		b, err := openBackup(c)
		if err != nil {
			return nil, nil, none, "", err
		}
		files, err := replay.FilesNamed(replay.OpenBackup(b), xlog.Version(b.MajorVersion()), parts[len(parts)-1])
		if err != nil {
			b.Close()
			return nil, nil, none, "", replayError(err)
		}
		for _, f := range files {
			want[f] = true
		}
		opened = b
	}
	hold := func(rel decode.RelFileLocator) bool { return want[rel] }
	for pass := 0; ; pass++ {
		r, b, err := openReplay(c, opened, hold)
		opened = nil
		if err != nil {
			return nil, nil, none, "", err
		}
		loc, name, err := relationOf(c, r)
		if err != nil {
			r.Close()
			b.Close()
			return nil, nil, none, "", err
		}
		if r.Holds(loc) || pass > 0 {
			return r, b, loc, name, nil
		}
		r.Close()
		b.Close()
		want[loc] = true
	}
}

// parseLocator reads T/D/R.
func parseLocator(spec string) (decode.RelFileLocator, bool) {
	f := strings.Split(spec, "/")
	if len(f) != 3 {
		return decode.RelFileLocator{}, false
	}
	var v [3]uint32
	for i, p := range f {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return decode.RelFileLocator{}, false
		}
		v[i] = uint32(n)
	}
	return decode.RelFileLocator{SpcOID: v[0], DBOID: v[1], RelNumber: v[2]}, true
}

// parseByteSize reads 256MB, 1GB, 512kB or a number of bytes.
func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}

// relationOf resolves --relation (and --database) as of the target.
func relationOf(c *cli.Command, r *replay.Replay) (decode.RelFileLocator, string, error) {
	spec := c.String("relation")
	if spec == "" {
		return decode.RelFileLocator{}, "", usageErr("give --relation: a name (schema.table) or T/D/R")
	}
	if f := strings.Split(spec, "/"); len(f) == 3 {
		if c.Bool("toast") {
			return decode.RelFileLocator{}, "", usageErr("--toast takes a relation name, not T/D/R")
		}
		var loc decode.RelFileLocator
		var vals [3]uint64
		for i, p := range f {
			v, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				return loc, "", usageErr("invalid relation specification: %q (a name or T/D/R)", spec)
			}
			vals[i] = v
		}
		loc = decode.RelFileLocator{SpcOID: uint32(vals[0]), DBOID: uint32(vals[1]), RelNumber: uint32(vals[2])}
		return loc, spec, nil
	}
	var db uint32
	if s := c.String("database"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return decode.RelFileLocator{}, "", usageErr("invalid database OID for option --database: %q", s)
		}
		db = uint32(v)
	}
	rel, err := r.Resolve(spec, db)
	if err != nil {
		return decode.RelFileLocator{}, "", replayError(err)
	}
	if c.Bool("toast") {
		t := rel.Catalog.Toast(rel.Class)
		if t == nil {
			return decode.RelFileLocator{}, "", &exitError{code: exitNoRelation, noHint: true, msg: fmt.Sprintf("relation %s has no TOAST table at the target", spec)}
		}
		loc, err := rel.Catalog.Locator(t)
		if err != nil {
			return decode.RelFileLocator{}, "", replayError(err)
		}
		rel.Class, rel.Locator = t, loc
		spec = "pg_toast." + t.Name
	}
	if rel.Class.Am != 0 && rel.Class.Am != 2 { // pg_am: heap is 2
		return decode.RelFileLocator{}, "", &exitError{code: exitProblem, noHint: true,
			msg: fmt.Sprintf("relation %s uses access method %d: only heap relations (and their TOAST tables) are rebuilt", spec, rel.Class.Am)}
	}
	switch rel.Class.Kind {
	case 'r', 't', 'm':
	default:
		return decode.RelFileLocator{}, "", &exitError{code: exitProblem, noHint: true,
			msg: fmt.Sprintf("relation %s is of kind %q: only tables, TOAST tables and materialized views have heap pages", spec, rel.Class.Kind)}
	}
	return rel.Locator, fmt.Sprintf("%s (database %s, %d/%d/%d)", spec, rel.Database.Name, rel.Locator.SpcOID, rel.Locator.DBOID, rel.Locator.RelNumber), nil
}

func pageAction(c *cli.Command) error {
	outFormat := c.String("format")
	if outFormat != "raw" && outFormat != "text" && outFormat != "json" {
		return usageErr("unrecognized value for option --format: %s (raw, text or json)", outFormat)
	}
	if f := c.String("fork"); f != "main" {
		return usageErr("--fork %s: only the main fork is replayed", f)
	}
	var only *uint32
	if s := c.String("block"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return usageErr("invalid block number for option --block: %q", s)
		}
		b := uint32(v)
		only = &b
	}
	if c.String("relation") == "" {
		return usageErr("give --relation: a name (schema.table) or T/D/R")
	}
	r, b, loc, name, err := replayRelation(c)
	if err != nil {
		return err
	}
	defer b.Close()
	defer r.Close()
	n, err := r.NBlocks(loc, decode.ForkMain)
	if err != nil {
		return replayError(err)
	}
	first, last := uint32(0), n
	if only != nil {
		if *only >= n {
			return &exitError{code: exitNoRelation, noHint: true, msg: fmt.Sprintf("block %d of %s: the relation has %d blocks at the target", *only, name, n)}
		}
		first, last = *only, *only+1
	}
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		var page []byte
		if outFormat == "json" {
			bw.WriteString("[")
		}
		for blk := first; blk < last; blk++ {
			var lsn xlog.LSN
			page, lsn, err = r.Page(page[:0], loc, decode.ForkMain, blk)
			if err != nil {
				return replayError(err)
			}
			switch outFormat {
			case "raw":
				bw.Write(page)
			case "text":
				writePageText(bw, name, blk, lsn, page, r.Xacts())
			case "json":
				if blk > first {
					bw.WriteString(",")
				}
				if err := writePageJSON(bw, blk, lsn, page, r.Xacts()); err != nil {
					return err
				}
			}
		}
		if outFormat == "json" {
			bw.WriteString("]\n")
		}
		return bw.Flush()
	}
	if out := c.String("out"); out != "" {
		if err := writeAtomic(out, write); err != nil {
			if _, ok := err.(*exitError); ok {
				return err
			}
			return outputErr("writing %s: %v", out, err)
		}
		return nil
	}
	return write(c.Root().Writer)
}

// pageJSON is one page as --format json prints it: pageinspect's names.
type pageJSON struct {
	Block      uint32           `json:"block"`
	LastChange *string          `json:"last_change_lsn"` // the record that last changed it; null: the backup's page
	Header     map[string]any   `json:"header"`
	Items      []map[string]any `json:"items"`
}

// visible tells whether a snapshot taken at the target sees a line
// pointer's tuple (on a standby paused there).
func visible(xs *xactstate.State, it heap.Item) bool {
	return it.HasTuple && xs.TupleVisible(xactstate.TupleHeader{Xmin: xlog.XID(it.Xmin), Xmax: xlog.XID(it.Xmax),
		Xvac: xlog.XID(it.Field3), Infomask2: it.Infomask2, Infomask: it.Infomask})
}

func writePageJSON(w io.Writer, blk uint32, lsn xlog.LSN, page []byte, xs *xactstate.State) error {
	j := pageJSON{Block: blk, Items: []map[string]any{}}
	if lsn != 0 {
		s := lsn.String()
		j.LastChange = &s
	}
	p, err := heap.ReadPage(page)
	if err == nil {
		h := p.Header
		j.Header = map[string]any{"lsn": xlog.LSN(h.LSN).String(), "checksum": h.Checksum, "flags": h.Flags, "lower": h.Lower,
			"upper": h.Upper, "special": h.Special, "pagesize": h.PageSize, "version": h.Version, "prune_xid": h.PruneXID}
		for _, it := range p.Items {
			m := itemJSON(it)
			m["visible"] = visible(xs, it)
			j.Items = append(j.Items, m)
		}
	} else {
		j.Header = map[string]any{"error": err.Error()}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// itemJSON is heap_page_items()'s row; NULLs as null.
func itemJSON(it heap.Item) map[string]any {
	m := map[string]any{"lp": it.LP, "lp_off": it.LPOff, "lp_flags": it.LPFlags, "lp_len": it.LPLen,
		"t_xmin": nil, "t_xmax": nil, "t_field3": nil, "t_ctid": nil, "t_infomask2": nil, "t_infomask": nil, "t_hoff": nil,
		"t_bits": nil, "t_oid": nil, "t_data": nil}
	if it.HasTuple {
		m["t_xmin"], m["t_xmax"], m["t_field3"] = it.Xmin, it.Xmax, it.Field3
		m["t_ctid"] = fmt.Sprintf("(%d,%d)", it.CtidBlock, it.CtidOffset)
		m["t_infomask2"], m["t_infomask"], m["t_hoff"] = it.Infomask2, it.Infomask, it.Hoff
	}
	if it.HasData {
		if it.Bits != "" {
			m["t_bits"] = it.Bits
		}
		if it.HasOID {
			m["t_oid"] = it.OID
		}
		m["t_data"] = `\x` + hex.EncodeToString(it.Data)
	}
	return m
}

func writePageText(w *bufio.Writer, name string, blk uint32, lsn xlog.LSN, page []byte, xs *xactstate.State) {
	changed := "unchanged since the backup"
	if lsn != 0 {
		changed = "last changed by the record at " + lsn.String()
	}
	fmt.Fprintf(w, "%s block %d: %s\n", name, blk, changed)
	p, err := heap.ReadPage(page)
	if err != nil {
		fmt.Fprintf(w, "  not a heap page: %v\n\n", err)
		return
	}
	h := p.Header
	fmt.Fprintf(w, "  lsn %s checksum %d flags %d lower %d upper %d special %d pagesize %d version %d prune_xid %d\n",
		xlog.LSN(h.LSN), h.Checksum, h.Flags, h.Lower, h.Upper, h.Special, h.PageSize, h.Version, h.PruneXID)
	if len(p.Items) > 0 {
		fmt.Fprintf(w, "  %4s %6s %8s %6s %10s %10s %8s %12s %11s %10s %6s %7s  %s\n", "lp", "lp_off", "lp_flags", "lp_len", "t_xmin", "t_xmax", "t_field3", "t_ctid", "t_infomask2", "t_infomask", "t_hoff", "visible", "t_bits")
	}
	for _, it := range p.Items {
		if !it.HasTuple {
			fmt.Fprintf(w, "  %4d %6d %8d %6d\n", it.LP, it.LPOff, it.LPFlags, it.LPLen)
			continue
		}
		vis := "no"
		if visible(xs, it) {
			vis = "yes"
		}
		fmt.Fprintf(w, "  %4d %6d %8d %6d %10d %10d %8d %12s %11d %10d %6d %7s  %s\n", it.LP, it.LPOff, it.LPFlags, it.LPLen,
			it.Xmin, it.Xmax, it.Field3, fmt.Sprintf("(%d,%d)", it.CtidBlock, it.CtidOffset), it.Infomask2, it.Infomask, it.Hoff, vis, it.Bits)
	}
	w.WriteString("\n")
}
