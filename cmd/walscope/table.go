package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
)

func tableCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringSliceFlag{Name: "backup", Usage: "the base backup at `PATH` (data directory, pg_basebackup -Fp or -Ft, a pgBackRest backup, a Barman backup; several for a PostgreSQL 17 incremental chain, oldest first)"},
		&cli.StringFlag{Name: "relation", Aliases: []string{"R"}, Usage: "the table `REL`: a name (schema.table, table, database.schema.table) as of the target"},
		&cli.StringFlag{Name: "database", Usage: "resolve --relation in database `OID` only (default: every database; an ambiguous name is an error)"},
	}, targetFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "format", Value: "copy", Usage: "output `FORMAT`: copy (as COPY ... TO STDOUT), csv (as COPY ... (FORMAT csv, HEADER)), jsonl (one row_to_json object a line), parquet (typed columns where exact, else the text; give --out or redirect standard output) or sql (CREATE TABLE and INSERTs)"},
		&cli.StringFlag{Name: "columns", Usage: "only the columns `A,B,...`, in that order"},
		&cli.StringFlag{Name: "as", Usage: "with --format sql: the table `NAME` the statements create (default: the relation's name with _restored)"},
		&cli.StringFlag{Name: "out", Usage: "write to `FILE` (replaced when complete) instead of standard output"},
		&cli.BoolFlag{Name: "unknown-as-bytea", Usage: "print a value of a type walscope cannot render as its stored bytes in bytea's hex form, instead of failing"},
		&cli.StringFlag{Name: "timezone", Usage: "TimeZone `ZONE` (default: the backup's postgresql.conf and postgresql.auto.conf)"},
		&cli.StringFlag{Name: "datestyle", Usage: "DateStyle `STYLE` (default: the backup's configuration)"},
		&cli.StringFlag{Name: "intervalstyle", Usage: "IntervalStyle `STYLE` (default: the backup's configuration)"},
		&cli.StringFlag{Name: "extra-float-digits", Usage: "extra_float_digits `N` (default: the backup's configuration, else 1)"},
		&cli.StringFlag{Name: "memory", Value: "256MB", Usage: "hold at most `SIZE` of pages in memory; more go to a temporary file"},
		cacheDirFlag(),
	)
	return &cli.Command{
		Name:      "table",
		Usage:     "a table's rows as of a recovery target, from a base backup and the WAL, without a server, in PostgreSQL's own text",
		ArgsUsage: "WAL...",
		Description: "Exit status: 0 done; 1 damaged input, or rows that could not be read (the others are written, the output marked incomplete); " +
			"2 usage or unreadable input; 3 the target cannot be reached; 4 no such relation at the target (or an ambiguous name); 5 backup and WAL of different systems; " +
			"6 a column of a type walscope cannot render (see --unknown-as-bytea).",
		Flags:  flags,
		Action: act(tableAction),
	}
}

const exitUnrenderable = 6

func tableAction(c *cli.Command) error {
	outFormat := c.String("format")
	switch outFormat {
	case "copy", "csv", "jsonl", "sql", "parquet":
	default:
		return usageErr("unrecognized value for option --format: %s (copy, csv, jsonl, parquet or sql)", outFormat)
	}
	if c.String("relation") == "" {
		return usageErr("give --relation: the table, by name as of the target")
	}
	r, b, _, _, err := replayRelation(c)
	if err != nil {
		return err
	}
	defer b.Close()
	defer r.Close()
	db := uint32(0)
	if s := c.String("database"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return usageErr("invalid database OID for option --database: %q", s)
		}
		db = uint32(v)
	}
	rel, err := r.Resolve(c.String("relation"), db)
	if err != nil {
		return replayError(err)
	}
	tab, err := table.Open(r, rel)
	if err != nil {
		return replayError(err)
	}
	settings, err := typeout.LoadSettings("", typeout.ConfigFiles{ReadFile: b.ReadFile, ReadDir: b.ReadDir})
	if err != nil && !errors.Is(err, typeout.ErrSetting) {
		return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("the backup's configuration: %v", err)}
	}
	monetary := err
	for _, o := range []struct{ flag, name string }{{"timezone", "TimeZone"}, {"datestyle", "DateStyle"}, {"intervalstyle", "IntervalStyle"}, {"extra-float-digits", "extra_float_digits"}} {
		if v := c.String(o.flag); v != "" {
			if err := settings.Set(o.name, v); err != nil {
				return usageErr("--%s: %v", o.flag, err)
			}
		}
	}
	f := &typeout.Formatter{Settings: settings, Types: rel.Catalog, Major: b.MajorVersion()}
	if outFormat == "sql" {
		// literals a server reads back as the same values whatever its
		// settings: ISO dates, postgres intervals, exact floats, set by
		// the script's SET LOCALs (table.LiteralPreamble)
		f.Settings = table.LiteralSettings(settings)
	}
	iso := &typeout.Formatter{Settings: settings, Types: rel.Catalog, Major: b.MajorVersion()}
	iso.Settings.Set("DateStyle", "ISO, MDY")
	// COPY, with no column list, leaves out generated columns (copy.c's
	// CopyGetAttnums); row_to_json and the INSERTs keep them.
	cols, err := pickColumns(tab, c.String("columns"), outFormat == "copy" || outFormat == "csv")
	if err != nil {
		return err
	}
	unknownAsBytea := c.Bool("unknown-as-bytea")
	text := func(dst []byte, typ uint32, datum []byte) ([]byte, error) {
		out, err := f.Append(dst, typ, datum)
		if err != nil && unknownAsBytea && errors.Is(err, typeout.ErrUnsupported) {
			return typeout.AppendByteaHex(dst, datum), nil
		}
		return out, err
	}
	isoText := func(dst []byte, typ uint32, datum []byte) ([]byte, error) { return iso.Append(dst, typ, datum) }
	// JSON is UTF-8: row_to_json's text and keys as a UTF8 client gets them
	jsonText, jsonISO := table.UTF8Text(rel.Catalog, text), table.UTF8Text(rel.Catalog, isoText)
	name := tab.QualifiedName()
	as := c.String("as")
	if as == "" {
		as = table.QuoteIdent(rel.Class.Name + "_restored")
	}
	var bad problems
	if outFormat == "parquet" {
		err = tableParquet(c, tab, cols, text, &bad)
	}
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		var line, val []byte
		switch outFormat {
		case "csv":
			for i, ci := range cols {
				if i > 0 {
					line = append(line, ',')
				}
				line = typeout.DefaultCSV.Append(line, []byte(tab.Columns[ci].Attribute.Name), false, len(cols) == 1)
			}
			bw.Write(append(line, '\n'))
		case "sql":
			fmt.Fprintf(bw, "-- %s as of the target, rebuilt by walscope\nBEGIN;\n%s%s", name, table.LiteralPreamble, tab.CreateTable(as, cols))
		}
		jsonKeys := make([][]byte, len(cols))
		for i, ci := range cols {
			jsonKeys[i] = []byte(table.ParquetName(rel.Catalog, tab.Columns[ci].Attribute.Name))
		}
		err := tab.Scan(func(row *table.Row) error {
			line = line[:0]
			switch outFormat {
			case "jsonl":
				line = append(line, '{')
			case "sql":
				line = fmt.Appendf(line, "INSERT INTO %s (", as)
				for i, ci := range cols {
					if i > 0 {
						line = append(line, ", "...)
					}
					line = append(line, table.QuoteIdent(tab.Columns[ci].Attribute.Name)...)
				}
				line = append(line, ") VALUES ("...)
			}
			for i, ci := range cols {
				col := tab.Columns[ci]
				if i > 0 {
					switch outFormat {
					case "copy":
						line = append(line, '\t')
					case "csv", "jsonl":
						line = append(line, ',')
					default:
						line = append(line, ", "...)
					}
				}
				if outFormat == "jsonl" {
					line = typeout.AppendJSONString(line, jsonKeys[i])
					line = append(line, ':')
				}
				if row.Nulls[ci] {
					switch outFormat {
					case "copy":
						line = append(line, `\N`...)
					case "jsonl":
						line = append(line, "null"...)
					case "sql":
						line = append(line, "NULL"...)
					}
					continue
				}
				var err error
				if outFormat == "jsonl" {
					line, err = table.AppendJSONValue(line, rel.Catalog, col.Attribute.TypID, row.Values[ci], jsonText, jsonISO)
				} else {
					val, err = text(val[:0], col.Attribute.TypID, row.Values[ci])
					switch outFormat {
					case "copy":
						line = typeout.AppendCopyText(line, val, '\t')
					case "csv":
						line = typeout.DefaultCSV.Append(line, val, false, len(cols) == 1)
					case "sql":
						line = typeout.AppendLiteral(line, val, table.FormatType(rel.Catalog, col.Attribute.TypID, col.Attribute.TypMod))
					}
				}
				if err != nil {
					rerr := &table.RowError{Block: row.Block, Offset: row.Offset, Column: col.Attribute.Name, Err: err}
					if errors.Is(err, typeout.ErrUnsupported) || errors.Is(err, typeout.ErrUnknownType) {
						return rerr
					}
					// a value the output cannot carry (text without a UTF-8
					// equivalent in JSON): the row named, the others
					// written, as in Parquet
					bad.add("rows", rerr.Error())
					return nil
				}
			}
			switch outFormat {
			case "jsonl":
				line = append(line, '}')
			case "sql":
				line = append(line, ");"...)
			}
			line = append(line, '\n')
			_, err := bw.Write(line)
			return err
		}, func(err error) error {
			bad.add("rows", err.Error())
			return nil
		})
		if err != nil {
			return err
		}
		if outFormat == "sql" {
			if bad.n > 0 {
				bw.WriteString("-- INCOMPLETE: rows that could not be read are missing; the transaction is not committed\nROLLBACK;\n")
			} else {
				bw.WriteString("COMMIT;\n")
			}
		}
		return bw.Flush()
	}
	if outFormat == "parquet" {
		// written above
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
	if monetary != nil && outFormat != "jsonl" {
		_ = monetary // lc_monetary other than C: money columns fail with it when met
	}
	if bad.n > 0 {
		return &exitError{code: exitProblem, noHint: true, msg: fmt.Sprintf("%d rows could not be read, the output is incomplete: %s", bad.n, bad.String())}
	}
	return nil
}

// pickColumns returns the indexes of --columns in tab.Columns (all when
// none given).
func pickColumns(tab *table.Table, list string, skipGenerated bool) ([]int, error) {
	var out []int
	if list == "" {
		for i, c := range tab.Columns {
			if skipGenerated && c.Attribute.Generated != 0 {
				continue
			}
			out = append(out, i)
		}
		return out, nil
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := -1
		for i, c := range tab.Columns {
			// as stored, or in UTF-8 (a terminal's) when the database's
			// encoding is another
			if c.Attribute.Name == name || table.ParquetName(tab.Relation().Catalog, c.Attribute.Name) == name {
				found = i
			}
		}
		if found < 0 {
			return nil, &exitError{code: exitNoRelation, noHint: true, msg: fmt.Sprintf("--columns: %s has no column %q at the target", tab.QualifiedName(), name)}
		}
		out = append(out, found)
	}
	return out, nil
}

// tableParquet writes the rows of tab's columns cols as one Parquet file
// (package table's ParquetColumns types them); rows that cannot be read
// are added to bad and left out.
func tableParquet(c *cli.Command, tab *table.Table, cols []int, text table.ValueText, bad *problems) error {
	rel := tab.Relation()
	picked := make([]table.Column, len(cols))
	for i, ci := range cols {
		picked[i] = tab.Columns[ci]
	}
	pcs := table.ParquetColumns(rel.Catalog, picked, "")
	schema := table.ParquetSchema(table.ParquetName(rel.Catalog, rel.Class.Name), nil, pcs)
	meta := map[string]string{"walscope.relation": table.ParquetName(rel.Catalog, tab.QualifiedName())}
	return writeParquet(c, schema, meta, bad, func(w export.RowWriter) error {
		var r export.Row
		return tab.Scan(func(row *table.Row) error {
			var err error
			if r, err = table.AppendParquetRow(r[:0], pcs, cols, row.Block, row.Offset, row.Values, row.Nulls, text); err != nil {
				if errors.Is(err, typeout.ErrUnsupported) || errors.Is(err, typeout.ErrUnknownType) {
					return err
				}
				bad.add("rows", err.Error())
				return nil
			}
			return w.Write(r)
		}, func(err error) error {
			bad.add("rows", err.Error())
			return nil
		})
	})
}

// writeParquet writes a Parquet file of schema s, its rows from fill (a
// file for which bad holds something gets a walscope.incomplete key): to
// --out, under a temporary name renamed when complete (package export's
// writer), or to standard output when it is not a terminal (made in a
// temporary directory, then copied).
func writeParquet(c *cli.Command, s *export.Schema, meta map[string]string, bad *problems, fill func(export.RowWriter) error) error {
	out := c.String("out")
	var tmpDir string
	if out == "" {
		if isTerminal(c.Root().Writer) {
			return usageErr("--format parquet writes a binary file: give --out FILE, or redirect standard output")
		}
		var err error
		if tmpDir, err = os.MkdirTemp("", "walscope-parquet-"); err != nil {
			return err
		}
		defer os.RemoveAll(tmpDir)
		out = filepath.Join(tmpDir, s.Table+".parquet")
	}
	w, err := export.Create(out, export.Parquet, s, export.Options{Metadata: meta})
	if err != nil {
		return err
	}
	if err := fill(w); err != nil {
		w.Abort()
		return err
	}
	if bad.n > 0 {
		// the file is written, as the other formats are, and says it
		// lacks what could not be read (the exit status says it too)
		if m, ok := w.(export.MetadataAdder); ok {
			m.AddMetadata("walscope.incomplete", fmt.Sprintf("%d rows or changes could not be read and are missing: %s", bad.n, bad.String()))
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if tmpDir == "" {
		return nil
	}
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(c.Root().Writer, f)
	return err
}
