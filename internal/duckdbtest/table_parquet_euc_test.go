package duckdbtest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/walscope/walscope/internal/pgtest"
)

// TestTableParquetMultibyteEncodings: databases in EUC_JP, EUC_JIS_2004,
// EUC_CN, EUC_KR and EUC_TW, a table whose name and a column's name are
// not ASCII, text of each encoding's characters (kana, JIS X 0212 and
// plane-2 codes, EUC_JIS_2004's combining sequence and a character past
// U+FFFF, CNS 11643 plane 2): `walscope table --format parquet` read by
// DuckDB gives each value as the server's `COPY ... TO STDOUT` with
// client_encoding UTF8, the column names and the relation's name (the
// file's walscope.relation) in UTF-8 as the server gives them
// (convert_from), and --columns and --relation take the UTF-8 name;
// `--format jsonl` is the server's row_to_json through a UTF8 client;
// `--format copy`
// gives the stored bytes. `rows --format
// parquet` of an UPDATE in the EUC_JP database: the relation column and
// the old_/new_ columns' names in UTF-8, their values the server's COPY
// of the row before and after with client_encoding UTF8. A valid EUC_JP
// code the server has no UTF8 equivalent for (0xa9 0xa1: its COPY to a
// UTF8 client fails) is a row error naming the column, the bytes and the
// encoding, and the other rows are written.
func TestTableParquetMultibyteEncodings(t *testing.T) {
	s, archive, base := archivingServer(t, "euc", "")
	texts := map[string][]string{ // characters each encoding has, and a column name
		"EUC_JP":       {"名前", "日本語のテキスト", "ｶﾀｶﾅ 半角", "丂 ① ～"},
		"EUC_JIS_2004": {"名前", "か゚ (combining)", "𠀋 past U+FFFF", "ㇰ ①"},
		"EUC_CN":       {"名称", "中文字符", "简体 ・", "ａｂｃ"},
		"EUC_KR":       {"이름", "한국어", "漢字 表", "①ㄱ"},
		"EUC_TW":       {"名稱", "中文", "乂 plane 2", "繁體"},
	}
	encs := []string{"EUC_JP", "EUC_JIS_2004", "EUC_CN", "EUC_KR", "EUC_TW"}
	for _, e := range encs {
		db := strings.ToLower(e)
		s.Query(t, "create database "+db+" encoding '"+e+"' lc_collate 'C' lc_ctype 'C' template template0")
		var values []string
		for _, v := range texts[e][1:] {
			values = append(values, "('"+v+"')")
		}
		s.QueryDB(t, db, `set client_encoding = 'UTF8'; create table "表" (id serial, "`+texts[e][0]+`" text, vc varchar(20), arr text[]);
insert into "表" ("`+texts[e][0]+`", vc, arr) select v, left(v, 20), array[v, null, v || '"'] from (values `+strings.Join(values, ", ")+`) x(v)`)
	}
	// a transaction for rows --format parquet: its old and new row
	jpRow := `set client_encoding = 'UTF8'; copy (select * from "表" where id = 2) to stdout`
	jpJSON := `set client_encoding = 'UTF8'; select row_to_json(t) from "表" t where id = 2`
	jpBefore, jpBeforeJSON := s.QueryDB(t, "euc_jp", jpRow), s.QueryDB(t, "euc_jp", jpJSON)
	xid := s.QueryDB(t, "euc_jp", `set client_encoding = 'UTF8'; with u as (update "表" set "名前" = "名前" || ' 改', arr = array['配列'] where id = 2 returning 1) select txid_current() from u`)
	jpAfter, jpAfterJSON := s.QueryDB(t, "euc_jp", jpRow), s.QueryDB(t, "euc_jp", jpJSON)
	// stored in EUC_JP without a UTF8 equivalent: convert_from to the
	// database's own encoding only verifies the bytes
	badXid := s.QueryDB(t, "euc_jp", `begin; create table bad (id int, txt text); insert into bad values (1, 'ok'), (2, convert_from('\xa9a1', 'EUC_JP')), (3, 'ok too'); select 'xid ' || txid_current(); commit`)
	s.Query(t, "select pg_create_restore_point('euc')")
	s.Query(t, "select pg_switch_wal()")
	want := map[string][]string{}
	wantJSON := map[string][]string{} // row_to_json through a UTF8 client
	relName := map[string]string{}    // the table's name as stored (bytes of the encoding)
	for _, e := range encs {
		db := strings.ToLower(e)
		want[e] = s.QueryDB(t, db, `set client_encoding = 'UTF8'; copy "表" to stdout`)
		wantJSON[e] = s.QueryDB(t, db, `set client_encoding = 'UTF8'; select row_to_json(t) from "表" t`)
		h := s.QueryDB(t, db, "set client_encoding = 'UTF8'; select encode(convert_to('表', '"+e+"'), 'hex')")
		b, err := hex.DecodeString(h[0])
		if err != nil {
			t.Fatal(err)
		}
		relName[e] = string(b)
	}
	_, badErr := s.TryQueryDB("euc_jp", "set client_encoding = 'UTF8'; copy bad to stdout")
	if badErr == nil || !strings.Contains(badErr.Error(), "0xa9 0xa1") {
		t.Fatalf("the server's COPY of bad to a UTF8 client: %v, want its error", badErr)
	}
	badCopy := s.QueryDB(t, "euc_jp", "copy (select * from bad where id <> 2) to stdout")
	if err := s.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	values := 0
	for _, e := range encs {
		rel := strings.ToLower(e) + ".public." + relName[e]
		file := filepath.Join(t.TempDir(), e+".parquet")
		run(t, "table", "--backup", base, "--relation", rel, "--target-name", "euc", "--format", "parquet", "--out", file, archive)
		n := tally{typed: map[string]int{}}
		compareWithCopy(t, db, file, e, []duckColumn{{"id", "INTEGER"}, {texts[e][0], "VARCHAR"}, {"vc", "VARCHAR"}, {"arr", "VARCHAR"}}, want[e], &n)
		if n.rows != 3 {
			t.Fatalf("%s: %d rows compared", e, n.rows)
		}
		values += n.values
		for key, want := range map[string]string{"walscope.relation": `public."表"`, "walscope.table": "表"} {
			var meta string
			if err := db.QueryRow("SELECT decode(value) FROM parquet_kv_metadata('" + file + "') WHERE decode(key) = '" + key + "'").Scan(&meta); err != nil {
				t.Fatal(err)
			}
			if meta != want {
				t.Errorf("%s: %s %q, want %q", e, key, meta, want)
			}
		}
		// --columns in UTF-8
		picked := filepath.Join(t.TempDir(), e+"-picked.parquet")
		run(t, "table", "--backup", base, "--relation", rel, "--target-name", "euc", "--format", "parquet", "--columns", texts[e][0]+",id", "--out", picked, archive)
		if got := describe(t, db, picked); fmt.Sprint(got) != fmt.Sprint([]duckColumn{{texts[e][0], "VARCHAR"}, {"id", "INTEGER"}}) {
			t.Errorf("%s: --columns %s,id gives the columns %v", e, texts[e][0], got)
		}
		// --format jsonl: UTF-8, as row_to_json reaches a UTF8 client
		if got := run(t, "table", "--backup", base, "--relation", rel, "--target-name", "euc", "--format", "jsonl", archive); got != strings.Join(wantJSON[e], "\n")+"\n" {
			t.Errorf("%s: table --format jsonl:\n%s\nwant the server's row_to_json with client_encoding UTF8:\n%s", e, got, strings.Join(wantJSON[e], "\n"))
		}
		// --format copy: the bytes as stored, not UTF-8
		stored := run(t, "table", "--backup", base, "--relation", rel, "--target-name", "euc", archive)
		if stored == strings.Join(want[e], "\n")+"\n" || !strings.Contains(stored, "\t") {
			t.Errorf("%s: --format copy printed UTF-8, not the database's encoding", e)
		}
		// --relation in UTF-8, as a terminal gives it: the same table
		if got := run(t, "table", "--backup", base, "--relation", strings.ToLower(e)+".public.表", "--target-name", "euc", archive); got != stored {
			t.Errorf("%s: --relation %s.public.表 (UTF-8) gives\n%s\nwant the table given in its stored bytes:\n%s", e, strings.ToLower(e), got, stored)
		}
	}
	t.Logf("%d encodings, %d values identical to the server's COPY with client_encoding UTF8", len(encs), values)

	// rows --format parquet: old_ and new_ columns, the relation column
	file := filepath.Join(t.TempDir(), "rows.parquet")
	run(t, "rows", "--backup", base, "--xid", xid[len(xid)-1], "--relation", "euc_jp.public."+relName["EUC_JP"], "--format", "parquet", "--out", file, archive)
	var changes [][]any
	for _, c := range [][]string{{"op", "relation"}, {"old_id", "old_名前", "old_vc", "old_arr"}, {"new_id", "new_名前", "new_vc", "new_arr"}} {
		var cols []duckColumn
		for _, n := range c {
			cols = append(cols, duckColumn{n, "VARCHAR"})
		}
		changes = append(changes, readDuck(t, db, file, cols)...)
	}
	if len(changes) != 3 || fmt.Sprint(changes[0]) != `[update public."表"]` {
		t.Fatalf("rows: %v, want one update of public.\"表\"", changes)
	}
	for key, want := range map[string]string{"walscope.relation": `public."表"`, "walscope.table": "表"} {
		var meta string
		if err := db.QueryRow("SELECT decode(value) FROM parquet_kv_metadata('" + file + "') WHERE decode(key) = '" + key + "'").Scan(&meta); err != nil {
			t.Fatal(err)
		}
		if meta != want {
			t.Errorf("rows: %s %q, want %q", key, meta, want)
		}
	}
	for i, image := range [][]string{jpBefore, jpAfter} {
		for j, f := range pgtest.CopyFields(image[0]) {
			if d := sameValue(t, "VARCHAR", changes[i+1][j], f); d != "" {
				t.Errorf("rows: %s column %d: %s", []string{"old", "new"}[i], j, d)
			}
		}
	}
	t.Logf("rows: the update's old and new rows (%q, %q) are the server's COPY with client_encoding UTF8", jpBefore[0], jpAfter[0])
	// rows --format jsonl: relation, keys and values in UTF-8
	line := run(t, "rows", "--backup", base, "--xid", xid[len(xid)-1], "--relation", "euc_jp.public."+relName["EUC_JP"], "--format", "jsonl", archive)
	var change struct {
		Relation string          `json:"relation"`
		Old      json.RawMessage `json:"old"`
		New      json.RawMessage `json:"new"`
	}
	if err := json.Unmarshal([]byte(line), &change); err != nil || !utf8.ValidString(line) {
		t.Fatalf("rows --format jsonl: %v (valid UTF-8: %v)\n%s", err, utf8.ValidString(line), line)
	}
	if change.Relation != `public."表"` || string(change.Old) != jpBeforeJSON[0] || string(change.New) != jpAfterJSON[0] {
		t.Errorf("rows --format jsonl: relation %s, old %s, new %s; want public.\"表\" and the server's row_to_json %s, %s", change.Relation, change.Old, change.New, jpBeforeJSON[0], jpAfterJSON[0])
	}

	// the character the server cannot give a UTF8 client
	file = filepath.Join(t.TempDir(), "bad.parquet")
	cmd := exec.Command(walscopeBin, "table", "--backup", base, "--relation", "euc_jp.public.bad", "--target-name", "euc", "--format", "parquet", "--out", file, archive)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("table bad: %v (want exit status 1)\n%s", err, stderr.String())
	}
	for _, w := range []string{"txt", "0xa9 0xa1", "EUC_JP"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("table bad: the error does not say %q:\n%s", w, stderr.String())
		}
	}
	n := tally{typed: map[string]int{}}
	compareWithCopy(t, db, file, "bad", []duckColumn{{"id", "INTEGER"}, {"txt", "VARCHAR"}}, badCopy, &n)
	// --format jsonl: the same row error, the other rows written
	cmd = exec.Command(walscopeBin, "table", "--backup", base, "--relation", "euc_jp.public.bad", "--target-name", "euc", "--format", "jsonl", archive)
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "0xa9 0xa1") || !strings.Contains(stderr.String(), "txt") {
		t.Errorf("table bad --format jsonl: %v (want exit status 1 naming txt and 0xa9 0xa1)\n%s", err, stderr.String())
	}
	if string(out) != "{\"id\":1,\"txt\":\"ok\"}\n{\"id\":3,\"txt\":\"ok too\"}\n" {
		t.Errorf("table bad --format jsonl wrote:\n%s", out)
	}
	t.Logf("bad: %s; the %d other rows written", strings.TrimSpace(stderr.String()), n.rows)
	// rows --format jsonl of the transaction that inserted them: the
	// change named, the other two written (it stopped at the first)
	var xidOfBad string
	for _, l := range badXid {
		if x, ok := strings.CutPrefix(l, "xid "); ok {
			xidOfBad = x
		}
	}
	cmd = exec.Command(walscopeBin, "rows", "--backup", base, "--xid", xidOfBad, "--relation", "euc_jp.public.bad", "--format", "jsonl", archive)
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "0xa9 0xa1") || !strings.Contains(stderr.String(), "insert") {
		t.Errorf("rows bad --format jsonl: %v (want exit status 1 naming the insert and 0xa9 0xa1)\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"new":{"id":1,"txt":"ok"}`) || !strings.Contains(lines[1], `"new":{"id":3,"txt":"ok too"}`) {
		t.Errorf("rows bad --format jsonl wrote:\n%s", out)
	}
	t.Logf("rows bad: %s; %d other changes written", strings.TrimSpace(stderr.String()), len(lines))
}
