package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

func rowsCommand() *cli.Command {
	return &cli.Command{
		Name:      "rows",
		Usage:     "the rows one transaction inserted, updated or deleted (and those of a TRUNCATE or DROP TABLE), from a base backup and the WAL, and the SQL that undoes it",
		ArgsUsage: "WAL...",
		Description: "Exit status: 0 done; 1 damaged input, or changes that could not be decoded (the others are written, the output marked incomplete); " +
			"2 usage or unreadable input; 3 the transaction's end is not in the WAL read, it was rolled back, or the xid is a subtransaction's; 4 no such relation (or an ambiguous name); " +
			"5 backup and WAL of different systems; 6 a column of a type walscope cannot render (see --unknown-as-bytea); " +
			"7 without --backup: rows whose old or new version the WAL does not hold (counted on standard error per table and reason, the others written; with --format sql, the changes the script cannot undo).",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "backup", Usage: "the base backup at `PATH` (data directory, pg_basebackup -Fp or -Ft, a pgBackRest backup, a Barman backup; several for a PostgreSQL 17 incremental chain, oldest first)"},
			&cli.StringFlag{Name: "xid", Usage: "the transaction `XID` (its subtransactions that committed with it included)"},
			&cli.StringFlag{Name: "relation", Aliases: []string{"R"}, Usage: "only the changes of the table `REL` (schema.table, table, database.schema.table), by its name just before the commit"},
			&cli.StringFlag{Name: "database", Usage: "resolve --relation in database `OID` only"},
			&cli.StringFlag{Name: "format", Value: "jsonl", Usage: "output `FORMAT`: jsonl (one change a line: lsn, xid, relation, op, old, new), copy (the old rows of deletes, updates, truncates and drops, in COPY's text format; one table), parquet (one change a row: lsn, xid, relation, op, old_ and new_ columns typed; one table; give --out or redirect standard output) or sql (the script that undoes the transaction)"},
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` (replaced when complete) instead of standard output"},
			&cli.BoolFlag{Name: "unknown-as-bytea", Usage: "print a value of a type walscope cannot render as its stored bytes in bytea's hex form, instead of failing"},
			&cli.StringFlag{Name: "timezone", Usage: "TimeZone `ZONE` (default: the backup's postgresql.conf and postgresql.auto.conf)"},
			&cli.StringFlag{Name: "datestyle", Usage: "DateStyle `STYLE` for copy (default: the backup's configuration; sql always writes ISO)"},
			&cli.StringFlag{Name: "intervalstyle", Usage: "IntervalStyle `STYLE` for copy (default: the backup's configuration; sql always writes postgres)"},
			&cli.StringFlag{Name: "extra-float-digits", Usage: "extra_float_digits `N` (default: the backup's configuration, else 1; sql always writes exact floats)"},
			&cli.StringFlag{Name: "memory", Value: "256MB", Usage: "hold at most `SIZE` of pages in memory; more go to a temporary file"},
			cacheDirFlag(),
			&cli.StringFlag{Name: "catalog", Usage: "without --backup: the relations' columns and types from `FILE`, made on the database by walscope rows --catalog-query | psql -XAtq -d DB -o FILE (plain, or compressed with zstd or gzip; without it, from the catalog pages the WAL read shows, when it shows all that is needed)"},
			&cli.BoolFlag{Name: "catalog-query", Usage: "print the query that makes the --catalog file, and exit"},
			&cli.StringFlag{Name: "start-lsn", Usage: "without --backup: start reading the WAL at `LSN` (default: its first segment)"},
			&cli.StringFlag{Name: "block-size", Value: "8192", Usage: "without --backup: the cluster's BLCKSZ `BYTES`"},
		},
		Action: act(rowsAction),
	}
}

// exitNotInWAL: without --backup, rows whose old or new version the WAL
// does not hold (the others are written).
const exitNotInWAL = 7

func rowsAction(c *cli.Command) error {
	if c.Bool("catalog-query") {
		fmt.Fprintln(c.Root().Writer, rows.CatalogQuery+";")
		return nil
	}
	outFormat := c.String("format")
	switch outFormat {
	case "jsonl", "copy", "sql", "parquet":
	default:
		return usageErr("unrecognized value for option --format: %s (jsonl, copy, parquet or sql)", outFormat)
	}
	s := c.String("xid")
	if s == "" {
		return usageErr("give --xid: the transaction whose rows are wanted (walscope pitr and events name it)")
	}
	x, err := strconv.ParseUint(s, 10, 32)
	if err != nil || x < 3 {
		return usageErr("invalid transaction ID for option --xid: %q", s)
	}
	walOnly := len(c.StringSlice("backup")) == 0
	if walOnly && outFormat == "parquet" {
		return usageErr("--format parquet needs --backup: without one, rows may hold only their key columns")
	}
	mem, err := parseByteSize(c.String("memory"))
	if err != nil || mem <= 0 {
		return usageErr("invalid size for option --memory: %q", c.String("memory"))
	}
	var db uint32
	if s := c.String("database"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return usageErr("invalid database OID for option --database: %q", s)
		}
		db = uint32(v)
	}
	if c.Args().Len() == 0 {
		return usageErr("give the WAL: an archive or pg_wal directory, or files")
	}
	cfg := rows.Config{Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(x), Relation: c.String("relation"), Database: db, MemoryBytes: mem, TempDir: os.TempDir()}
	// the settings: the defaults and the flags (a wrong flag is said
	// before the WAL is read), the backup's files once it is open
	settings, err := flagSettings(c, typeout.DefaultSettings())
	if err != nil {
		return err
	}
	var major int
	var b *backup.Backup              // the backup, once open
	var pending *replay.PendingBackup // a compressed tar being opened meanwhile
	if walOnly {
		if f := c.String("catalog"); f != "" {
			if cfg.Catalog, err = readRowsCatalog(f); err != nil {
				return err
			}
			major = int(cfg.Catalog.Version)
		}
		if s := c.String("start-lsn"); s != "" {
			if cfg.Start, err = xlog.ParseLSN(s); err != nil {
				return usageErr("invalid LSN for option --start-lsn: %q", s)
			}
		}
		bs, err := strconv.ParseUint(c.String("block-size"), 10, 32)
		if err != nil || bs < 1024 || bs > 32768 || bs&(bs-1) != 0 {
			return usageErr("invalid block size for option --block-size: %q (a power of 2 from 1024 to 32768)", c.String("block-size"))
		}
		cfg.BlockSize = uint32(bs)
	} else {
		// the WAL's first reading (the files the transaction changes)
		// goes on while the backup is opened: from the backup's start,
		// read ahead of the backup (rows.StartPrescan); and the replay
		// too (replay.PendingBackup): opening a compressed tar inflates
		// it to its end (pg_control is its last member), which the
		// replay mostly need not wait for
		if paths := c.StringSlice("backup"); len(paths) == 1 {
			if l, err := backup.ReadLabel(paths[0]); err == nil {
				if src, err := archive.Open(c.Args().Slice()...); err == nil {
					cfg.WAL = src
					// the prescan's and the replay's readers share the
					// cores with the opening of a compressed tar, which
					// keeps one (replay.OpenBackupAhead)
					// (taken first, before the prescan's readers take
					// them all)
					cores := stream.NewCores()
					if backup.InflatesToEnd(paths[0]) {
						// not a directory, which opens at once and then
						// gives its TOAST files to hold from the start;
						// BLCKSZ taken as PostgreSQL's default until open
						pending = replay.OpenBackupAhead(l.StartLSN, 8192, cores, func() (*backup.Backup, error) { return openBackup(c) })
					}
					cfg.Prescan = rows.StartPrescan(src, cfg.Options, cfg.XID, l.StartLSN, 0, cores)
					defer cfg.Prescan.Stop()
				}
			}
		}
		if pending != nil {
			cfg.Backup = pending
			defer func() {
				if b, _ := pending.Opened(); b != nil {
					b.Close()
				}
			}()
		} else {
			var err error
			if b, err = openBackup(c); err != nil {
				return err
			}
			defer b.Close()
			cfg.Backup = replay.OpenBackup(b)
		}
	}
	if cfg.WAL == nil {
		src, err := archive.Open(c.Args().Slice()...)
		if err != nil {
			return readerSetupError(err)
		}
		cfg.WAL = src
	}
	// the changes are read one at a time as they are written (Open, not
	// Changes): memory does not grow with the transaction's size
	res, err := rows.Open(cfg)
	if pending != nil {
		var oerr error
		b, oerr = pending.Opened()
		if oerr == nil && b.BlockSize() != pending.BlockSize() {
			// the replay took BLCKSZ wrongly: again with the backup's
			if err == nil {
				res.Close()
			}
			cfg.Backup = replay.OpenBackup(b)
			res, err = rows.Open(cfg)
		}
		if oerr != nil {
			if err == nil {
				res.Close()
			}
			return oerr // the backup's problem, whatever the replay said
		}
	}
	if b != nil {
		// the settings, read from the backup's configuration files
		var serr error
		if settings, serr = backupSettings(c, b); serr != nil {
			if err == nil {
				res.Close()
			}
			return serr
		}
		major = b.MajorVersion()
	}
	if errors.Is(err, rows.ErrNoCatalog) {
		return &exitError{code: exitUsage, noHint: true, msg: err.Error() + ": give --backup PATH, or --catalog FILE made by: walscope rows --catalog-query | psql -XAtq -d DB -o FILE"}
	}
	if errors.Is(err, rows.ErrCatalogFile) {
		return usageErr("--catalog %s: %v", c.String("catalog"), err)
	}
	if errors.Is(err, rows.ErrNoEnd) || errors.Is(err, rows.ErrNotCommitted) || errors.Is(err, rows.ErrSubtransaction) {
		return &exitError{code: exitUnreachable, noHint: true, msg: err.Error()}
	}
	if err != nil {
		return replayError(err)
	}
	defer res.Close()
	if major == 0 {
		major = int(res.Replay().Version()) // the catalog from the WAL
	}

	unknownAsBytea := c.Bool("unknown-as-bytea")
	textOf := func(st typeout.Settings, types typeout.Types) table.ValueText {
		f := &typeout.Formatter{Settings: st, Types: types, Major: major}
		return func(dst []byte, typ uint32, datum []byte) ([]byte, error) {
			out, err := f.Append(dst, typ, datum)
			if err != nil && unknownAsBytea && errors.Is(err, typeout.ErrUnsupported) {
				return typeout.AppendByteaHex(dst, datum), nil
			}
			return out, err
		}
	}
	if (outFormat == "copy" || outFormat == "parquet") && len(res.Relations) > 1 {
		var names []string
		for _, r := range res.Relations {
			names = append(names, r.Name())
		}
		return usageErr("transaction %d changed %d tables (%s): give --relation for --format %s", x, len(names), strings.Join(names, ", "), outFormat)
	}
	// A transaction writes in one database: its relations share a catalog,
	// which gives the formatter its types (enums, domains, arrays).
	f := &rows.Format{Literal: typeout.AppendLiteral, CopyText: func(dst, s []byte) []byte { return typeout.AppendCopyText(dst, s, '\t') }}
	if len(res.Relations) > 0 {
		cat := res.Relations[0].Catalog
		iso := settings
		iso.Set("DateStyle", "ISO, MDY")
		f.Text, f.ISOText = textOf(settings, cat), textOf(iso, cat)
		if outFormat == "jsonl" {
			// JSON is UTF-8: row_to_json's text and keys as a UTF8 client
			// gets them
			f.Text, f.ISOText = table.UTF8Text(cat, f.Text), table.UTF8Text(cat, f.ISOText)
			f.Name = func(name string) string { return table.ParquetName(cat, name) }
		}
		if outFormat == "sql" {
			// literals the server reads back whatever its own settings:
			// ISO dates, postgres intervals, exact floats, set in the
			// script too
			lit := iso
			lit.Set("IntervalStyle", "postgres")
			lit.Set("extra_float_digits", "1")
			f.Text = textOf(lit, cat)
			f.Settings = "SET LOCAL DateStyle = 'ISO, MDY';\nSET LOCAL IntervalStyle = 'postgres';\nSET LOCAL extra_float_digits = 1;\n"
		}
	}
	var bad problems
	var notUndone []string
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		var line []byte
		if outFormat == "sql" && walOnly {
			not, err := f.WriteUndoPartial(bw, res)
			if err != nil {
				bw.Flush()
				return err
			}
			notUndone = not
			return bw.Flush()
		}
		if outFormat == "sql" {
			if err := f.WriteUndo(bw, res); err != nil {
				if errors.Is(err, typeout.ErrUnsupported) || errors.Is(err, typeout.ErrUnknownType) {
					bw.Flush()
					return err
				}
				bad.add("undo script", err.Error())
			}
			return bw.Flush()
		}
		for ch, err := range res.All() {
			if err != nil {
				return err
			}
			if ch.Err != nil {
				bad.add(fmt.Sprintf("%s of %s", ch.Op, ch.Rel.Name()), fmt.Sprintf("%s at %s of %s: %v", ch.Op, ch.LSN, ch.Rel.Name(), ch.Err))
				continue
			}
			line = line[:0]
			if outFormat == "jsonl" {
				if line, err = f.AppendJSON(line, ch); err == nil {
					line = append(line, '\n')
				}
			} else if ch.Old != nil && (ch.Old.Unknown == nil || ch.Old.Complete()) {
				line, err = f.AppendCopy(line, ch.Rel, ch.Old)
			}
			if err != nil {
				if errors.Is(err, typeout.ErrUnsupported) || errors.Is(err, typeout.ErrUnknownType) {
					return err
				}
				// a value the output cannot carry (text without a UTF-8
				// equivalent in JSON): the change named, the others
				// written (exit 1), as table and Parquet do
				bad.add(fmt.Sprintf("%s of %s", ch.Op, ch.Rel.Name()), fmt.Sprintf("%s at %s of %s: %v", ch.Op, ch.LSN, ch.Rel.Name(), err))
				continue
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	if outFormat == "parquet" {
		err = rowsParquet(c, res, f.Text, &bad)
	} else if out := c.String("out"); out != "" {
		err = writeAtomic(out, write)
	} else {
		err = write(c.Root().Writer)
	}
	if err != nil {
		if errors.Is(err, typeout.ErrUnsupported) || errors.Is(err, typeout.ErrUnknownType) {
			return &exitError{code: exitUnrenderable, noHint: true, msg: err.Error() + " (--unknown-as-bytea prints its stored bytes)"}
		}
		if _, ok := err.(*exitError); ok {
			return err
		}
		return replayError(err)
	}
	if outFormat != "sql" { // the script says them in comments
		for _, s := range res.Skipped {
			fmt.Fprintf(c.Root().ErrWriter, "walscope: warning: %s\n", s)
		}
		for _, name := range res.Created {
			fmt.Fprintf(c.Root().ErrWriter, "walscope: %s was created by the transaction: its rows are inserts, and the undo (--format sql) drops it\n", name)
		}
	}
	// the rows a table's changes while unlogged touched (not in the WAL:
	// no change given), the first rows.MaxMissingComments named
	named := 0
	for _, u := range res.Unlogged {
		for _, g := range [...]struct {
			what string
			rows []*rows.Row
		}{{"gone (deleted, or the version an update replaced)", u.Gone}, {"new (inserted, or an update's new version)", u.New}} {
			for _, r := range g.rows {
				if named++; named > rows.MaxMissingComments {
					continue
				}
				if j, err := f.AppendRowJSON(nil, u.Rel, r); err == nil {
					fmt.Fprintf(c.Root().ErrWriter, "walscope: %s: changed while unlogged (%s to %s), not in the WAL: %s %s\n", u.Rel.Name(), u.From, u.To, g.what, j)
				}
			}
		}
	}
	if named > rows.MaxMissingComments {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: %d more rows changed while unlogged (%d in all; the first %d are named above)\n", named-rows.MaxMissingComments, named, rows.MaxMissingComments)
	}
	// tables unlogged throughout: the WAL cannot say what the
	// transaction did to them
	for _, name := range res.UnloggedTables {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: warning: table %s is unlogged: none of its changes is in the WAL, so whatever the transaction did to its rows is not given (nor undone)\n", name)
	}
	if walOnly || len(res.Missing) > 0 {
		// what the WAL lacks is said even when changes could not be
		// decoded (exit 1 then wins); with a backup: the changes of a
		// table the transaction had unlogged
		if err := walOnlyMissing(c, res, notUndone); err != nil && bad.n == 0 {
			return err
		}
	}
	if bad.n > 0 {
		return &exitError{code: exitProblem, noHint: true, msg: fmt.Sprintf("%d changes could not be decoded, the output is incomplete: %s", bad.n, bad.String())}
	}
	if c.String("relation") != "" && len(res.UnloggedTables) > 0 {
		return &exitError{code: exitNotInWAL, noHint: true, msg: fmt.Sprintf("table %s is unlogged: its changes are not in the WAL, none can be given", res.UnloggedTables[0])}
	}
	return nil
}

// rowsParquet writes the changes of res's one relation as a Parquet file
// (rows.Parquet); changes that cannot be decoded are added to bad and left
// out.
func rowsParquet(c *cli.Command, res *rows.Result, text table.ValueText, bad *problems) error {
	if len(res.Relations) == 0 {
		return usageErr("transaction %d changed no table's rows: no Parquet file to write", res.XID)
	}
	if bf := res.Relations[0].Before; bf != nil {
		// one set of columns per file: the versions of before are in
		// other columns than those the transaction left
		return usageErr("transaction %d changed the definition of table %s (ALTER TABLE): its rows are in the columns of before and in those it left, and a Parquet file has one set of columns: give --format jsonl", res.XID, bf.Name())
	}
	p := rows.NewParquet(res.Relations[0])
	meta := map[string]string{"walscope.relation": table.ParquetName(res.Relations[0].Catalog, res.Relations[0].Name()), "walscope.xid": fmt.Sprint(res.XID)}
	return writeParquet(c, p.Schema, meta, bad, func(w export.RowWriter) error {
		var r export.Row
		for ch, err := range res.All() {
			if err != nil {
				return err
			}
			if ch.Err != nil {
				bad.add(fmt.Sprintf("%s of %s", ch.Op, ch.Rel.Name()), fmt.Sprintf("%s at %s of %s: %v", ch.Op, ch.LSN, ch.Rel.Name(), ch.Err))
				continue
			}
			if r, err = p.Append(r[:0], ch, text); err != nil {
				return err
			}
			if err := w.Write(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// readRowsCatalog reads a --catalog file of rows (rows.ReadCatalog), plain
// or compressed with zstd or gzip.
func readRowsCatalog(path string) (*rows.CatalogFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--catalog: %v", err)
	}
	defer f.Close()
	// a catalog file kept compressed is read as it is (zstd or gzip)
	br := bufio.NewReader(f)
	var in io.Reader = br
	switch head, _ := br.Peek(4); {
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, usageErr("--catalog %s: %v", path, err)
		}
		defer zr.Close()
		in = zr
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		gr, err := gzip.NewReader(br)
		if err != nil {
			return nil, usageErr("--catalog %s: %v", path, err)
		}
		in = gr
	}
	cat, err := rows.ReadCatalog(in, 0)
	if err != nil {
		return nil, usageErr("--catalog %s: %v", path, err)
	}
	return cat, nil
}

// walOnlyMissing says on standard error, without a backup, the rows whose
// old or new version the WAL does not hold, per table, operation and
// reason, and the changes the undo script cannot undo: exit status 7 if
// there are any.
func walOnlyMissing(c *cli.Command, res *rows.Result, notUndone []string) error {
	n := 0
	for _, m := range res.Missing {
		which := "old"
		if !m.Old {
			which = "new"
		}
		if m.Rows == 0 {
			fmt.Fprintf(c.Root().ErrWriter, "walscope: %s: every row: %s\n", m.Relation, m.Reason)
			n++
			continue
		}
		fmt.Fprintf(c.Root().ErrWriter, "walscope: %s: %d %s rows without their %s version in the WAL: %s\n", m.Relation, m.Rows, m.Op, which, m.Reason)
		n += m.Rows
	}
	for _, s := range notUndone {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: not undone: %s\n", s)
	}
	if n == 0 && len(notUndone) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d row versions are not in the WAL read (without --backup); the others are written", n)
	if !res.WALOnly {
		msg = "changes of a table the transaction had unlogged (ALTER TABLE SET UNLOGGED) are not in the WAL (counted above): the others are written, and the undo script does not undo them"
	}
	if len(notUndone) > 0 {
		msg = fmt.Sprintf("%d changes cannot be undone from the WAL alone (listed in the script); the script undoes the others", len(notUndone))
	}
	return &exitError{code: exitNotInWAL, noHint: true, msg: msg}
}

// rowSettingFlags are the flags that override the backup's settings.
var rowSettingFlags = []struct{ flag, name string }{{"timezone", "TimeZone"}, {"datestyle", "DateStyle"}, {"intervalstyle", "IntervalStyle"}, {"extra-float-digits", "extra_float_digits"}}

// flagSettings is st with the setting flags applied.
func flagSettings(c *cli.Command, st typeout.Settings) (typeout.Settings, error) {
	for _, o := range rowSettingFlags {
		if v := c.String(o.flag); v != "" {
			if err := st.Set(o.name, v); err != nil {
				return st, usageErr("--%s: %v", o.flag, err)
			}
		}
	}
	return st, nil
}

// backupSettings are the backup's settings (postgresql.conf,
// postgresql.auto.conf and the files they include), the flags applied.
func backupSettings(c *cli.Command, b *backup.Backup) (typeout.Settings, error) {
	st, err := typeout.LoadSettings("", typeout.ConfigFiles{ReadFile: b.ReadFile, ReadDir: b.ReadDir})
	if err != nil && !errors.Is(err, typeout.ErrSetting) {
		return st, &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("the backup's configuration: %v", err)}
	}
	return flagSettings(c, st)
}
