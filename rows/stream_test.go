package rows_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
)

// changeText is one change as the comparisons below see it: all of it.
func changeText(c *rows.Change) string {
	return fmt.Sprintf("%s %d %s %s %s %s %v", c.LSN, c.XID, c.Op, c.Rel.Name(), rowText(c.Old), rowText(c.New), c.Err)
}

// TestOpenSpilled: for each incident of fixtures/rows (deletes, updates,
// inserts, a TRUNCATE after changes of the same table, a DROP TABLE,
// rolled-back savepoints), Open with a change budget of one byte (the
// replay writes every change to its file, and they are read back from
// it) gives through All exactly the changes Changes holds in memory, in
// the same order; Backward gives them in reverse; the undo script and the
// JSON lines written from the stream are byte-identical to those written
// from the changes in memory; a second All gives them again.
func TestOpenSpilled(t *testing.T) {
	b, wal, facts := fixture(t)
	compared, spilled := 0, int64(0)
	for _, f := range facts {
		cfg := rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID), TempDir: t.TempDir()}
		whole, err := rows.Changes(cfg)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		var want []string
		for i := range whole.Changes {
			want = append(want, changeText(&whole.Changes[i]))
		}
		cfg.ChangeMemoryBytes = 1
		res, err := rows.Open(cfg)
		if err != nil {
			t.Fatalf("%s: Open: %v", f.Name, err)
		}
		if res.Changes != nil {
			t.Errorf("%s: Open holds the changes in memory", f.Name)
		}
		total, onDisk := res.Replay().ChangeBytes()
		if total == 0 || onDisk != total {
			t.Errorf("%s: %d bytes of changes, %d of them in the file: not all spilled", f.Name, total, onDisk)
		}
		spilled += onDisk
		for pass := range 2 {
			var got []string
			for c, err := range res.All() {
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				got = append(got, changeText(c))
			}
			if len(got) == 0 || !slices.Equal(got, want) || res.Len() != len(want) {
				t.Fatalf("%s (pass %d): %d changes streamed (Len %d), %d in memory, or they differ", f.Name, pass, len(got), res.Len(), len(want))
			}
		}
		var back []string
		for c, err := range res.Backward() {
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			back = append(back, changeText(c))
		}
		slices.Reverse(back)
		if !slices.Equal(back, want) {
			t.Errorf("%s: Backward is not All reversed (%d changes)", f.Name, len(back))
		}
		var undoWhole, undoStream, jsonWhole, jsonStream bytes.Buffer
		if err := hexFormat().WriteUndo(&undoWhole, whole); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if err := hexFormat().WriteUndo(&undoStream, res); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !bytes.Equal(undoWhole.Bytes(), undoStream.Bytes()) {
			t.Errorf("%s: the undo script from the stream differs from the one from memory:\n%s\n----\n%s", f.Name, undoStream.String(), undoWhole.String())
		}
		for _, out := range []struct {
			res *rows.Result
			buf *bytes.Buffer
		}{{whole, &jsonWhole}, {res, &jsonStream}} {
			for c, err := range out.res.All() {
				if err != nil {
					t.Fatal(err)
				}
				line, err := hexFormat().AppendJSON(nil, c)
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				out.buf.Write(append(line, '\n'))
			}
		}
		if jsonWhole.Len() == 0 || !bytes.Equal(jsonWhole.Bytes(), jsonStream.Bytes()) {
			t.Errorf("%s: the JSON lines from the stream differ from those from memory", f.Name)
		}
		compared += len(want)
		whole.Close()
		res.Close()
	}
	t.Logf("%d changes of %d transactions identical read back from the file (%d bytes spilled), forward, backward, as undo script and JSON", compared, len(facts), spilled)
}
