package rows_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
)

// hexFormat prints every datum as hex and quotes it plainly: enough to see
// the script's shape without package typeout.
func hexFormat() *rows.Format {
	text := func(dst []byte, _ uint32, datum []byte) ([]byte, error) { return hex.AppendEncode(dst, datum), nil }
	return &rows.Format{Text: text,
		Literal: func(dst, s []byte, typ string) []byte {
			return append(append(append(append(dst, '\''), s...), "'::"...), typ...)
		},
		CopyText: func(dst, s []byte) []byte { return append(dst, s...) }}
}

// TestUndoIncomplete: a change that could not be decoded is named in the
// script (its operation, LSN and relation), the other changes are still
// written, the script ends in ROLLBACK instead of COMMIT, and WriteUndo
// returns the error.
func TestUndoIncomplete(t *testing.T) {
	b, wal, facts := fixture(t)
	f := facts[0] // delete: an insert, deletes of acct and notes
	res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var whole bytes.Buffer
	if err := hexFormat().WriteUndo(&whole, res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(whole.String(), "COMMIT;\n") || strings.Count(whole.String(), "INSERT INTO ") != 78 {
		t.Fatalf("complete script: %d INSERTs (78 deleted rows), ends %q", strings.Count(whole.String(), "INSERT INTO "), whole.String()[max(0, whole.Len()-20):])
	}
	damaged := errors.New("toast value 1234 in relation 5678: no chunk")
	res.Changes[3].Err, res.Changes[3].Old = damaged, nil
	var out bytes.Buffer
	err = hexFormat().WriteUndo(&out, res)
	if !errors.Is(err, damaged) || !strings.Contains(err.Error(), res.Changes[3].LSN.String()) {
		t.Errorf("WriteUndo error %v: not the damage, or not positioned", err)
	}
	s := out.String()
	if !strings.Contains(s, "-- MISSING: delete at "+res.Changes[3].LSN.String()+" of public.acct: toast value 1234") ||
		!strings.HasSuffix(s, "ROLLBACK;\n") || strings.Count(s, "INSERT INTO ") != 77 {
		t.Errorf("incomplete script: %d INSERTs (77 expected), named: %v, ends %q", strings.Count(s, "INSERT INTO "),
			strings.Contains(s, "-- MISSING"), s[max(0, len(s)-20):])
	}
}

// TestUndoMissingCapped: with every one of the update incident's 376
// changes undecodable, the script names the first MaxMissingComments in a
// comment each, counts the rest in one line, and still ends in ROLLBACK.
func TestUndoMissingCapped(t *testing.T) {
	b, wal, facts := fixture(t)
	f := facts[1] // update: 376 updates
	res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	n := len(res.Changes)
	if n <= rows.MaxMissingComments {
		t.Fatalf("%d changes: not more than the cap", n)
	}
	for i := range res.Changes {
		res.Changes[i].Err, res.Changes[i].Old, res.Changes[i].New = errors.New("damaged"), nil, nil
	}
	var out bytes.Buffer
	if err := hexFormat().WriteUndo(&out, res); err == nil {
		t.Fatal("no error")
	}
	s := out.String()
	more := fmt.Sprintf("-- MISSING: %d more changes that could not be decoded (%d in all; the first %d are named above)\n", n-rows.MaxMissingComments, n, rows.MaxMissingComments)
	if c := strings.Count(s, "-- MISSING: update at "); c != rows.MaxMissingComments || !strings.Contains(s, more) || !strings.HasSuffix(s, "ROLLBACK;\n") {
		t.Errorf("%d changes: %d named, summary %v, ends %q", n, c, strings.Contains(s, more), s[max(0, len(s)-20):])
	}
}
