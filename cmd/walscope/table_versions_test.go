package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/walscope/walscope/internal/pgtest"
)

// outputSettings are the session settings the output functions read.
type outputSettings struct {
	name          string
	timeZone      string
	dateStyle     string
	intervalStyle string
	floatDigits   string
}

// set is the SQL that gives a session these settings.
func (o outputSettings) set() string {
	return fmt.Sprintf("SET TimeZone = '%s';\nSET DateStyle = '%s';\nSET IntervalStyle = '%s';\nSET extra_float_digits = %s;\n",
		o.timeZone, o.dateStyle, o.intervalStyle, o.floatDigits)
}

// conf is the same as configuration file lines.
func (o outputSettings) conf() string {
	return fmt.Sprintf("timezone = '%s'\ndatestyle = '%s'\nintervalstyle = '%s'\nextra_float_digits = %s\n",
		o.timeZone, o.dateStyle, o.intervalStyle, o.floatDigits)
}

// flags are walscope table's flags for them.
func (o outputSettings) flags() []string {
	return []string{"--timezone", o.timeZone, "--datestyle", o.dateStyle, "--intervalstyle", o.intervalStyle, "--extra-float-digits", o.floatDigits}
}

var (
	stJohnsGerman  = outputSettings{"St_Johns/German,DMY/postgres_verbose/0", "America/St_Johns", "German, DMY", "postgres_verbose", "0"}
	kolkataSQL     = outputSettings{"Kolkata/SQL,MDY/iso_8601/3", "Asia/Kolkata", "SQL, MDY", "iso_8601", "3"}
	berlinPostgres = outputSettings{"Berlin/Postgres,DMY/sql_standard/0", "Europe/Berlin", "Postgres, DMY", "sql_standard", "0"}
	stJohnsSQL     = outputSettings{"St_Johns/SQL,DMY/postgres/3", "America/St_Johns", "SQL, DMY", "postgres", "3"}
	kathmanduPG    = outputSettings{"Kathmandu/Postgres,MDY/iso_8601/1", "Asia/Kathmandu", "Postgres, MDY", "iso_8601", "1"}
	utcISO         = outputSettings{"UTC/ISO,MDY/postgres/1", "UTC", "ISO, MDY", "postgres", "1"}
	allSettings    = []outputSettings{stJohnsGerman, kolkataSQL, berlinPostgres, stJohnsSQL, kathmanduPG, utcISO}
)

// tableVersion is one real server `walscope table` is checked against,
// with the output settings its backup's configuration carries.
type tableVersion struct {
	major int
	conf  outputSettings
	// autoConf: the settings by ALTER SYSTEM (postgresql.auto.conf)
	// rather than appended to postgresql.conf
	autoConf bool
	always   bool // run without WALSCOPE_TABLE_VERSIONS=all
}

var tableVersions = []tableVersion{
	{major: 15, conf: stJohnsGerman, always: true},
	{major: 18, conf: kolkataSQL, autoConf: true, always: true},
	{major: 13, conf: berlinPostgres},
	{major: 17, conf: stJohnsSQL, autoConf: true},
}

// TestTableVersions: on real servers of PostgreSQL 15 and 18 (and 13 and 17
// with WALSCOPE_TABLE_VERSIONS=all), a cluster with data checksums, whose
// configuration sets TimeZone, DateStyle, IntervalStyle and
// extra_float_digits other than initdb's (in postgresql.conf, or by ALTER
// SYSTEM in postgresql.auto.conf), has a table of every type of issue 27
// (NULLs, NaN and infinities, negative and huge numerics, time zones and
// dates BC, TOASTed values compressible and not, inline and external, pglz
// and lz4 column compression from 14, arrays with NULLs and quotes, an
// enum, a domain, a user-defined range, its multirange from 14, a
// composite and an array of it, a dropped column), an online base
// backup, then a column added with a default, HOT and non-HOT updates,
// deletes and VACUUM, and incidents each followed by a restore point: a
// DELETE of part of the table, an UPDATE of every row, a TRUNCATE, a DROP
// TABLE, in transactions with subtransactions (one rolled back) while a
// second session commits between their statements or holds its own
// transaction open across the restore point. For each restore point, a
// real server of the same version restores the backup there (paused, hot
// standby) and its COPY TO STDOUT, COPY (FORMAT csv, HEADER) and
// row_to_json equal walscope table's copy, csv and jsonl byte for byte, in
// the same order: with the backup's own settings (walscope reads them from
// the backup, the standby's session has them from the same files), and
// with each of six other settings given as flags to walscope and by SET to
// the standby's session (three of them on 15, the other three on 18, all
// six with WALSCOPE_TABLE_VERSIONS=all). Targets: the restore points, an
// LSN while a transaction is open, a time between two commits, and the
// UPDATE's xid not inclusive. After the DROP, both say there is no such
// table.
func TestTableVersions(t *testing.T) {
	pgtest.Need(t, 15)
	for _, v := range tableVersions {
		t.Run(fmt.Sprint(v.major), func(t *testing.T) {
			if !v.always && os.Getenv("WALSCOPE_TABLE_VERSIONS") != "all" {
				t.Skip("WALSCOPE_TABLE_VERSIONS=all runs this version too")
			}
			if _, why := pgtest.Bin(v.major); why != "" {
				if v.always || os.Getenv("WALSCOPE_TABLE_VERSIONS") == "all" {
					pgtest.SkipOrFail(t, why)
				}
				t.Skip(why)
			}
			runTableVersion(t, v)
		})
	}
}

// kindsSQL makes the types and the table with a value of every type:
// hand-written edge cases, then generated rows.
func kindsSQL(major int, lz4 bool) string {
	numInf := "'NaN'"
	if major >= 14 {
		numInf = "'-Infinity'" // numeric infinities from 14
	}
	multirange := ""
	if major >= 14 {
		multirange = `ALTER TABLE kinds ADD COLUMN mr floatmultirange;
UPDATE kinds SET mr = CASE id % 3 WHEN 0 THEN floatmultirange() WHEN 1 THEN floatmultirange(fr, floatrange(-id, -id / 2.0)) END;
`
	}
	compression := ""
	if major >= 14 {
		compression = "ALTER TABLE kinds ALTER big_pglz SET COMPRESSION pglz;\n"
		if lz4 {
			compression += "ALTER TABLE kinds ALTER big_lz4 SET COMPRESSION lz4;\n"
		}
	}
	return `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'it''s "odd", {x}');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TYPE pair AS (a int, b text, c numeric, d date);
CREATE TYPE floatrange AS RANGE (subtype = float8);
CREATE TABLE kinds (id int PRIMARY KEY, b bool, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, n numeric, n2 numeric(12,3),
  vc varchar(10), bc char(4), ch "char", nm name, tx text, by bytea, u uuid, d date, t time, ttz timetz, ts timestamp(3),
  tstz timestamptz, iv interval, j json, jb jsonb, ip inet, cd cidr, mac macaddr, mac8 macaddr8, m money, e mood, dom posint,
  ai int[], at text[], af float8[], ats timestamptz[], ad date[], r int4range, fr floatrange, tsr tstzrange, p pair, gone text, o oid,
  big_pglz text, big_lz4 text, big_ext text, big_raw bytea) WITH (fillfactor = 70);
ALTER TABLE kinds ALTER big_ext SET STORAGE EXTERNAL;
` + compression + `INSERT INTO kinds VALUES (1, true, -32768, -2147483648, 9223372036854775807, 1.5, 0.1, -123.4500, 3.14159,
  E'v\ta''lue', 'ab', 'x', 'nm', E'back\\slash\nnew line, "quote" ; tab\t\x01 end', '\x00ff7f80', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  '2024-02-29', '23:59:59.999999', '12:00+05:30', '2000-01-01 00:00:00.5', '2026-12-04 10:00:00.5+01', '1 year 2 mons -3 days 04:05:06.7',
  '  {"a" : [1, 2.50],  "a": "dup"} ', '{"b": 1, "a": [true, null, 1e3, 1.0e-5, -0.0], "": "\u00e9\n"}',
  '192.168.1.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', 1234.56, 'it''s "odd", {x}', 7,
  '{1,NULL,3}', '{"a b","q\"uo\\te",NULL,"","NULL",x}', '{0.1,NaN,-Infinity,1e300}', '{"2026-03-08 06:30:00+00",NULL}', '{2024-02-29,infinity}',
  '[1,10)', '(0.5,Infinity]', '[2026-01-01 00:00+00,2026-06-01 00:00+00)', ROW(1, 'a "b", (c)', -1.50, '2000-02-29'), 'drop me', 42,
  NULL, NULL, NULL, NULL);
INSERT INTO kinds VALUES (2, false, 0, 0, -1, 'NaN', '-Infinity', ` + numInf + `, -0.001, '', '', 'Y', '', '', '', '00000000-0000-0000-0000-000000000000',
  'infinity', '00:00', '00:00-12', '-infinity', 'infinity', '-178000000 years', 'null', '[]', '::1', '::/0',
  'ff:ff:ff:ff:ff:ff', '00:00:00:00:00:00:00:00', -0.5, 'sad', 1, '{}', '{}', '{}', '{}', '{}', 'empty', 'empty', 'empty', ROW(NULL, NULL, NULL, NULL), NULL, 0,
  '', '', '', '');
INSERT INTO kinds (id) VALUES (3);
INSERT INTO kinds VALUES (4, NULL, 32767, 2147483647, -9223372036854775808, 1e-45, 5e-324, 'NaN', 999999999.999, 'ten chars!', 'abcd', E'\\', 'n"m', E'\\N', '\x', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '4713-01-01 BC', '24:00:00', '23:59:59.999999-15:59', '294276-12-31 23:59:59.999', '0044-03-15 12:00:00+00 BC', '-1 mons +1 day -00:00:00.000001',
  '{"n": 123456789012345678901234567890.5}', '{"n": 123456789012345678901234567890.5, "e": 1E+2}', '2001:db8::1/64', '2001:db8::/32', '00:00:00:00:00:00', 'ff:ff:ff:ff:ff:ff:ff:ff',
  '-92233720368547758.08', 'happy', 2147483647, '{{1,2},{3,NULL}}', '{{"a","b"},{"c",NULL}}', '{-0,1e-300,3.4028235e38}', '{"1880-06-01 12:00:00+00","0044-03-15 12:00:00+00 BC"}', '{"4713-01-01 BC"}',
  '(,5]', '[-Infinity,0)', '(,)', ROW(-2147483648, '', 'NaN', 'infinity'), 'gone', 4294967295, NULL, NULL, NULL, NULL);
INSERT INTO kinds VALUES (5, true, 1, 1, 1, 3.4028235e38, 1.7976931348623157e308, '123456789012345678901234567890.000000000000000000001', -0.000, 'é', 'é', 'é', 'ü', 'ünïcode ✓', '\xdeadbeef', '01234567-89ab-cdef-0123-456789abcdef',
  '1880-06-01', '12:34:56', '12:34:56.789+14', '1880-06-01 12:00:00', '1880-06-01 12:00:00+00', '1 day -00:00:01',
  '"just a string"', '"just a string"', '::ffff:1.2.3.4/128', '192.168.0.0/16', '01:23:45:67:89:ab', '01:23:45:67:89:ab:cd:ef',
  '92233720368547758.07', 'ok', 3, '{}', '{""}', '{Infinity}', '{infinity}', '{-infinity}',
  '[-5,-1]', '[0,0]', '[2026-03-08 05:30:00+00,)', ROW(0, NULL, 1e-20, NULL), NULL, 1, NULL, NULL, NULL, NULL);
INSERT INTO kinds SELECT g, g % 3 = 0, (g * 37 % 65536 - 32768)::int2, (g * 1000003) % 2147483647 - 1073741823, (1 - 2 * (g % 2)) * g::int8 * 1000000000007,
  ((1 - 2 * (g % 2)) * g / 7.0)::float4, g::float8 / 3 * 10::float8 ^ (g % 40 - 20), round((1 - 2 * (g % 2)) * g::numeric * 1234.56789 / 13, g % 20) * 10::numeric ^ (g % 60 - 30),
  ((1 - 2 * (g % 2)) * g * 3.14159)::numeric(12,3), left(md5(g::text), g % 11), (g % 100)::text, chr(33 + g % 90)::"char", 'name_' || g,
  CASE g % 5 WHEN 0 THEN E'line\nbreak ' || g WHEN 1 THEN E'back\\slash' || g WHEN 2 THEN 'quote"s, comma ' || g WHEN 3 THEN E'tab\there\r' ELSE 'ünïcode ' || g END,
  decode(md5(g::text), 'hex'), md5(g::text)::uuid, date '2000-01-01' + g * 97 - 20000, time '00:00' + g * interval '1 min 7.123456 s',
  format('%s:%s:%s.%s%s%s:%s', g % 24, g % 60, g % 60, g, CASE WHEN g % 2 = 0 THEN '+' ELSE '-' END, g % 14, (g % 4) * 15)::timetz,
  timestamp '1999-12-31 23:59:59.999' + g * interval '37 days 3 hours 1.001 s', timestamptz '2026-03-07 20:00:00+00' + g * interval '1 hour 11 min 0.25 s',
  make_interval(0, g % 13, 0, g % 40 - 20, g % 25 - 12, g % 61, (g * 1.234567) % 60) * (1 - 2 * (g % 2)),
  json_build_object('g', g, 'f', g / 3.0, 's', E'a"b\\c'), jsonb_build_object('g', g, 'f', g / 3.0, 's', E'a"b\\c', 'arr', jsonb_build_array(g, null, 'x')),
  CASE WHEN g % 4 = 0 THEN ('2001:db8::' || to_hex(g) || '/' || (g % 129))::inet ELSE ('10.' || g % 256 || '.' || (g * 7) % 256 || '.1/' || (g % 33))::inet END,
  network(('10.' || g % 256 || '.' || (g * 7) % 256 || '.1/' || (g % 33))::inet), ('08:00:2b:' || lpad(to_hex(g % 256), 2, '0') || ':02:03')::macaddr,
  ('08:00:2b:01:02:03:' || lpad(to_hex(g % 256), 2, '0') || ':ff')::macaddr8, ((1 - 2 * (g % 2)) * g * 123.45)::numeric::money,
  (enum_range(NULL::mood))[g % 4 + 1], g, ARRAY[g, NULL, -g], ARRAY['a b', NULL, E'q"u\\ote', '', 'NULL', g::text], ARRAY[g / 3.0::float8, 'NaN', '-Infinity']::float8[],
  ARRAY[timestamptz '2026-10-25 00:30:00+00' + g * interval '5 min'], ARRAY[date '2000-01-01' + g], int4range(g, g + g % 5), floatrange(g / 3.0, NULL, '(]'),
  tstzrange(timestamptz '2026-11-01 05:00:00+00' + g * interval '1 hour', timestamptz '2026-11-01 05:00:00+00' + g * interval '1 day'),
  ROW(g, CASE g % 3 WHEN 0 THEN NULL WHEN 1 THEN 'x y' ELSE 'q"u,o(te)' END, g / 7.0, date '2000-01-01' + g)::pair, 'gone', g,
  CASE WHEN g % 50 = 0 THEN repeat((SELECT string_agg(md5((g * 100 + h)::text), '') FROM generate_series(1, 100) h), 3) WHEN g % 50 = 25 THEN repeat('compressible ' || g, 400) END,
  CASE WHEN g % 50 = 0 THEN repeat((SELECT string_agg(md5((g * 200 + h)::text), '') FROM generate_series(1, 100) h), 3) WHEN g % 50 = 25 THEN repeat('lz4 ' || g, 900) END,
  CASE WHEN g % 40 = 0 THEN repeat('external, not compressed ', 300) END,
  CASE WHEN g % 60 = 0 THEN (SELECT string_agg(decode(md5((g * 300 + h)::text), 'hex'), '') FROM generate_series(1, 500) h) END
  FROM generate_series(6, 300) g;
ALTER TABLE kinds DROP COLUMN gone;
-- an array of the composite, and (14+) a multirange of the range type
ALTER TABLE kinds ADD COLUMN ap pair[];
UPDATE kinds SET ap = ARRAY[p, NULL, ROW(-id, E'x\\y "z"', NULL, 'infinity')::pair] WHERE id % 4 <> 3;
` + multirange + `CHECKPOINT;
`
}

// tableTarget is one recovery target, as the standby's settings and as
// walscope table's flags, and whether kinds exists there.
type tableTarget struct {
	name     string
	recovery string
	flags    []string
	exists   bool
}

func runTableVersion(t *testing.T, v tableVersion) {
	bin, client := pgtest.Need(t, v.major)
	work := pgtest.WorkDir(t, fmt.Sprintf("table-%d-", v.major), "WALSCOPE_KEEP")
	arch, base := filepath.Join(work, "archive"), filepath.Join(work, "base")
	os.MkdirAll(arch, 0o755)
	pgtest.ChownPG(t, arch)
	p := pgtest.New(t, work, "primary", v.major, bin, client)
	conf := fmt.Sprintf("archive_mode = on\narchive_command = 'cp %%p %s/%%f'\nautovacuum = off\n", arch)
	if !v.autoConf {
		conf += v.conf.conf()
	}
	p.InitDB(t, "--data-checksums", conf)
	p.Start(t)
	if v.autoConf {
		for _, l := range strings.Split(strings.TrimSpace(v.conf.conf()), "\n") {
			name, value, _ := strings.Cut(l, " = ")
			p.Query(t, "ALTER SYSTEM SET "+name+" = "+value)
		}
		p.Query(t, "SELECT pg_reload_conf()")
	}
	lz4 := false
	if v.major >= 14 {
		_, err := p.TryQueryDB("postgres", "SET default_toast_compression = lz4")
		lz4 = err == nil
	}
	p.Query(t, kindsSQL(v.major, lz4))
	// the values are stored as meant: external ones in the TOAST table,
	// compressed ones by the method asked for
	toastRel := p.Query(t, "SELECT reltoastrelid::regclass FROM pg_class WHERE relname = 'kinds'")[0]
	external := p.Query(t, "SELECT count(DISTINCT chunk_id) FROM "+toastRel)[0]
	if external == "0" {
		t.Fatal("no external TOAST values")
	}
	stored := "external values " + external
	if v.major >= 14 {
		methods := p.Query(t, `SELECT m || ' ' || count(*) FROM (SELECT coalesce(pg_column_compression(big_pglz), '-') || '/' || coalesce(pg_column_compression(big_lz4), '-') AS m
  FROM kinds WHERE big_pglz IS NOT NULL) x GROUP BY m ORDER BY m`)
		stored += ", compression of big_pglz/big_lz4: " + strings.Join(methods, ", ")
		want := "pglz/pglz"
		if lz4 {
			want = "pglz/lz4"
		}
		if !strings.Contains(strings.Join(methods, ","), want) {
			t.Fatalf("compression %q, want %s", methods, want)
		}
	}
	t.Logf("PostgreSQL %d: %s", v.major, stored)
	p.BaseBackup(t, base)

	a, b := p.Session(t, "a"), p.Session(t, "b")
	var targets []tableTarget
	rp := func(name string, exists bool) {
		p.Query(t, "SELECT pg_create_restore_point('"+name+"')")
		targets = append(targets, tableTarget{name: name, recovery: "recovery_target_name = '" + name + "'",
			flags: []string{"--target-name", name}, exists: exists})
	}
	// after the backup: a column with a default, HOT and non-HOT updates,
	// a TOASTed value replaced, deletes, VACUUM, rows in the space it freed
	p.Query(t, `ALTER TABLE kinds ADD COLUMN added text DEFAULT 'later', ADD COLUMN added_n numeric DEFAULT -1.50;
INSERT INTO kinds (id, tx, added) VALUES (301, 'after the backup', 'mine');
UPDATE kinds SET tx = tx || ' (hot)' WHERE id % 7 = 0;
UPDATE kinds SET id = id + 1000 WHERE id % 11 = 0;
UPDATE kinds SET big_raw = big_raw || '\x01'::bytea, big_pglz = big_pglz || '!' WHERE id IN (60, 150, 100);
DELETE FROM kinds WHERE id % 13 = 0;
VACUUM kinds;
INSERT INTO kinds (id, n, ai, added_n) VALUES (302, 1e-30, '{}', 3), (303, -1e30, '{NULL}', NULL);
UPDATE kinds SET added = NULL WHERE id = 5`)
	rp("before-delete", true)
	// a DELETE of part of the table: a released and a rolled-back savepoint,
	// a second session committing between the statements and one whose
	// transaction is open across the restore point
	a.Exec("BEGIN")
	a.Exec("DELETE FROM kinds WHERE id % 3 = 0")
	b.Exec("INSERT INTO kinds (id, tx) VALUES (401, 'committed meanwhile')")
	a.Exec("SAVEPOINT s1")
	a.Exec("DELETE FROM kinds WHERE id < 40")
	a.Exec("ROLLBACK TO s1")
	a.Exec("SAVEPOINT s2")
	a.Exec("DELETE FROM kinds WHERE id % 5 = 0 AND id > 200")
	a.Exec("RELEASE s2")
	a.Exec("COMMIT")
	b.Exec("BEGIN")
	b.Exec("INSERT INTO kinds (id, tx) VALUES (402, 'in progress at the target')")
	b.Exec("UPDATE kinds SET tx = 'in progress' WHERE id = 1")
	rp("after-delete", true)
	b.Exec("UPDATE kinds SET tx = 'still in progress' WHERE id = 2")
	lsn := p.Query(t, "SELECT pg_current_wal_insert_lsn()")[0]
	targets = append(targets, tableTarget{name: "lsn-" + lsn, recovery: "recovery_target_lsn = '" + lsn + "'",
		flags: []string{"--target-lsn", lsn}, exists: true})
	b.Exec("COMMIT")
	// a time between two transactions: the commit of the next one is after it
	time.Sleep(20 * time.Millisecond)
	at := p.Query(t, "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'")[0]
	time.Sleep(20 * time.Millisecond)
	b.Exec("DELETE FROM kinds WHERE id = 401")
	targets = append(targets, tableTarget{name: "time-" + at, recovery: "recovery_target_time = '" + at + "'",
		flags: []string{"--target-time", at}, exists: true})
	// an UPDATE of every row, with a rolled-back and a released savepoint
	a.Exec("BEGIN")
	a.Exec("UPDATE kinds SET i4 = i4 / 2, n = n * 2")
	b.Exec("INSERT INTO kinds (id, tx) VALUES (403, 'committed during the update')")
	a.Exec("SAVEPOINT u")
	a.Exec("UPDATE kinds SET tx = upper(tx), ts = ts - interval '1 day'")
	a.Exec("RELEASE u")
	a.Exec("SAVEPOINT v")
	a.Exec("UPDATE kinds SET b = NULL")
	a.Exec("ROLLBACK TO v")
	xid := a.One("SELECT txid_current()")
	a.Exec("COMMIT")
	// the same transaction as a target: up to its commit, not included
	targets = append(targets, tableTarget{name: "xid-" + xid + "-exclusive",
		recovery: "recovery_target_xid = '" + xid + "'\nrecovery_target_inclusive = false",
		flags:    []string{"--target-xid", xid, "--target-inclusive=false"}, exists: true})
	rp("after-update", true)
	// TRUNCATE, and rows inserted after it in the same transaction
	a.Exec("BEGIN")
	a.Exec("INSERT INTO kinds (id, tx) VALUES (500, 'before the truncate')")
	a.Exec("SAVEPOINT t")
	a.Exec("TRUNCATE kinds")
	a.Exec("RELEASE t")
	a.Exec("INSERT INTO kinds (id, tx, f8, tstz, p) VALUES (501, 'after the truncate', 2.5e-7, '2026-03-08 06:00:00+00', ROW(1, 'one', 1, NULL))")
	a.Exec("SAVEPOINT w")
	a.Exec("INSERT INTO kinds (id, tx) VALUES (502, 'rolled back')")
	a.Exec("ROLLBACK TO w")
	a.Exec("COMMIT")
	b.Exec("INSERT INTO kinds (id, tx, big_raw) VALUES (503, 'after, by another session', (SELECT string_agg(decode(md5(h::text), 'hex'), '') FROM generate_series(1, 400) h))")
	rp("after-truncate", true)
	// DROP TABLE in a released savepoint
	a.Exec("BEGIN")
	a.Exec("SAVEPOINT d")
	a.Exec("DROP TABLE kinds")
	a.Exec("RELEASE d")
	a.Exec("COMMIT")
	rp("after-drop", false)
	p.Query(t, "SELECT pg_switch_wal()")
	p.Stop("fast")

	all := os.Getenv("WALSCOPE_TABLE_VERSIONS") == "all"
	type key struct{ settings, target string }
	compared, identical := map[key]int{}, map[key]int{}
	restores := 0
	for _, tg := range targets {
		r := pgtest.Restore(t, work, fmt.Sprintf("restore-%d", restores), v.major, bin, client, base, arch,
			tg.recovery+"\nrecovery_target_action = 'pause'\n")
		r.WaitPaused(t)
		restores++
		if !tg.exists {
			if out := r.Query(t, "SELECT count(*) FROM pg_class WHERE relname = 'kinds'"); out[0] != "0" {
				t.Fatalf("%s: the standby has kinds", tg.name)
			}
			_, stderr, code := walscope(t, "", append(append([]string{"table", "--backup", base, "--relation", "kinds"}, tg.flags...), arch)...)
			if code != exitNoRelation {
				t.Errorf("%s: exit %d, want %d (no such table): %s", tg.name, code, exitNoRelation, stderr)
			}
			r.Stop("immediate")
			os.RemoveAll(r.Dir)
			continue
		}
		variants := []outputSettings{{name: "backup's " + v.conf.name}}
		for i, o := range allSettings {
			// the default run: half of the settings, the other half on the
			// other version (15 and 18); all of them with
			// WALSCOPE_TABLE_VERSIONS=all
			if all || (i+v.major)%2 == 0 {
				variants = append(variants, o)
			}
		}
		for _, o := range variants {
			set, flags := "", []string(nil)
			if o.timeZone != "" {
				set, flags = o.set(), o.flags()
			}
			for _, f := range []struct{ format, sql string }{
				{"copy", "COPY kinds TO STDOUT"},
				{"csv", "COPY kinds TO STDOUT (FORMAT csv, HEADER)"},
				// row_to_json's text unchanged: psql would drop bytes that
				// are not UTF-8 from a query's output (mbvalidate; 13's
				// "char" prints a byte >= 0x80 as itself), COPY's data it
				// writes as received; in CSV with a delimiter and a quote
				// JSON text never holds (it escapes control characters),
				// nothing is escaped or quoted.
				{"jsonl", `COPY (SELECT row_to_json(x) FROM kinds x) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')`},
			} {
				want := rawQuery(t, r, set+f.sql)
				args := append(append([]string{"table", "--backup", base, "--relation", "kinds", "--format", f.format}, tg.flags...), flags...)
				got, stderr, code := walscope(t, "", append(args, arch)...)
				k := key{o.name, tg.name}
				n := strings.Count(want, "\n")
				compared[k] += n
				if code != 0 {
					t.Errorf("%s, %s, %s: exit %d: %s", tg.name, o.name, f.format, code, stderr)
					continue
				}
				if got != want {
					same, diffs := compareLines(got, want)
					identical[k] += same
					t.Errorf("%s, %s, %s: %d of %d lines differ, first:\n%s", tg.name, o.name, f.format, n-same, n, diffs)
					continue
				}
				identical[k] += n
			}
		}
		r.Stop("immediate")
		os.RemoveAll(r.Dir)
	}
	if restores != len(targets) || len(compared) == 0 {
		t.Fatal("nothing compared")
	}
	var keys []key
	for k := range compared {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].settings != keys[j].settings {
			return keys[i].settings < keys[j].settings
		}
		return keys[i].target < keys[j].target
	})
	total, same := 0, 0
	for _, k := range keys {
		t.Logf("PostgreSQL %d, %s, %s: %d of %d lines identical (copy, csv, jsonl)", v.major, k.settings, k.target, identical[k], compared[k])
		total += compared[k]
		same += identical[k]
	}
	settings := map[string]bool{}
	for k := range compared {
		settings[k.settings] = true
	}
	t.Logf("PostgreSQL %d (lz4 %v): %d of %d lines identical over %d targets and %d settings", v.major, lz4, same, total, len(targets)-1, len(settings))
}

// rawQuery runs SQL on the server and returns its standard output
// unchanged.
func rawQuery(t *testing.T, s *pgtest.Server, sql string) string {
	t.Helper()
	cmd := pgtest.AsPostgres("PGCLIENTENCODING=UTF8 " + s.PsqlLine("postgres"))
	cmd.Stdin = strings.NewReader(sql)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, stderr.String())
	}
	return string(out)
}

// compareLines counts the identical lines of got and want and shows the
// first few that differ.
func compareLines(got, want string) (same int, diffs string) {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var sb strings.Builder
	shown := 0
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl == wl {
			if i < len(w)-1 {
				same++
			}
			continue
		}
		if shown < 3 {
			if !utf8.ValidString(gl) || !utf8.ValidString(wl) {
				gl, wl = strconv.Quote(gl), strconv.Quote(wl)
			}
			fmt.Fprintf(&sb, "line %d\nwalscope: %s\nserver:   %s\n", i+1, gl, wl)
			shown++
		}
	}
	return same, sb.String()
}
