package table_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestLiteralSettingsReadBack: fixtures/pages' table kinds (every type) at
// after-insert, as INSERTs of literals printed with display settings no
// server reads back safely (DateStyle German, DMY; IntervalStyle
// sql_standard; extra_float_digits 0; America/St_Johns), run by a real
// PostgreSQL 15 whose session has other settings again (DateStyle SQL, MDY;
// IntervalStyle postgres_verbose; lc_monetary unset by the script's
// preamble): with LiteralSettings and LiteralPreamble the table comes back
// with exactly the standby's COPY text; with the display settings as they
// are, it does not (the server refuses the script or reads other values).
func TestLiteralSettingsReadBack(t *testing.T) {
	server, client := pgtest.Need(t, 15)
	d := filepath.Join(testwal.Root(t), "fixtures", "pages")
	dir := t.TempDir()
	for _, a := range []string{"archive.tar.zst", "expected.tar.zst"} {
		if err := testwal.UntarZstd(filepath.Join(d, a), dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: src, Options: xlog.Options{FollowHistory: true},
		Target: replay.Target{Name: "after-insert", Inclusive: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rel, err := r.Resolve("kinds", 0)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := table.Open(r, rel)
	if err != nil {
		t.Fatal(err)
	}
	display := typeout.DefaultSettings()
	for name, value := range map[string]string{"DateStyle": "German, DMY", "IntervalStyle": "sql_standard", "extra_float_digits": "0", "TimeZone": "America/St_Johns"} {
		if err := display.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	script := func(as string, st typeout.Settings, preamble string) string {
		f := &typeout.Formatter{Settings: st, Types: rel.Catalog, Major: b.MajorVersion()}
		var sb strings.Builder
		sb.WriteString("BEGIN;\n" + preamble + tab.CreateTable(as, nil))
		var val []byte
		err := tab.Scan(func(row *table.Row) error {
			line := []byte("INSERT INTO " + as + " VALUES (")
			for i, c := range tab.Columns {
				if i > 0 {
					line = append(line, ", "...)
				}
				if row.Nulls[i] {
					line = append(line, "NULL"...)
					continue
				}
				var err error
				if val, err = f.Append(val[:0], c.Attribute.TypID, row.Values[i]); err != nil {
					return err
				}
				line = typeout.AppendLiteral(line, val, table.FormatType(rel.Catalog, c.Attribute.TypID, c.Attribute.TypMod))
			}
			sb.Write(append(line, ");\n"...))
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteString("COMMIT;\n")
		return sb.String()
	}
	want, err := os.ReadFile(filepath.Join(dir, "expected", "after-insert", "kinds.copy"))
	if err != nil {
		t.Fatal(err)
	}
	work := pgtest.WorkDir(t, "walscope-table-literal-", "WALSCOPE_KEEP")
	s := pgtest.New(t, work, "sql", 15, server, client)
	s.InitDB(t, "", "datestyle = 'SQL, MDY'\nintervalstyle = 'postgres_verbose'\nlc_monetary = 'C'\n")
	s.Start(t)
	s.Query(t, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
	run := func(as, sql string) (string, error) {
		if _, err := s.TryQueryDB("postgres", sql); err != nil {
			return "", err
		}
		out, err := s.TryQueryDB("postgres", "SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; SET TimeZone = 'UTC'; COPY "+as+" TO STDOUT")
		return strings.Join(out, "\n") + "\n", err
	}
	got, err := run("kinds_safe", script("kinds_safe", table.LiteralSettings(display), table.LiteralPreamble))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("with LiteralSettings the table differs from the standby's:\n%s\n---\n%s", got, want)
	}
	naive, err := run("kinds_naive", script("kinds_naive", display, ""))
	if err == nil && naive == string(want) {
		t.Error("literals printed with the display settings read back the same: the test shows nothing")
	}
	t.Logf("%d rows back identical through LiteralSettings; with the display settings: %v", strings.Count(got, "\n"), firstLine(err))
}

func firstLine(err error) string {
	if err == nil {
		return "other values"
	}
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, "ERROR") {
			return strings.TrimSpace(l)
		}
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}
