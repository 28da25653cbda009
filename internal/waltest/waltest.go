// Package waltest holds the test helpers the analysis packages (stats,
// names, incident, whatif) share: reading a fixture's archive decoded, and
// finding and unpacking a fixture set. Tests only.
package waltest

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// ReadSet hands every record of a set's archive, decoded, to each, and
// returns the first record's LSN and where reading ended.
func ReadSet(t testing.TB, dir string, each func(*decode.Record)) (start, end xlog.LSN) {
	t.Helper()
	src, err := xlog.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err != nil {
			if err != io.EOF && !xlog.IsEndOfWAL(err) {
				t.Fatal(err)
			}
			return start, r.EndLSN()
		}
		if start == 0 {
			start = rec.LSN
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		each(d)
	}
}

// FixtureSet unpacks fixtures/NAME (its archive.tar.zst) and returns the
// directory it was unpacked to; false when the fixture has no archive.
func FixtureSet(t *testing.T, name string) (string, bool) {
	root := testwal.Root(t)
	d := filepath.Join(root, "fixtures", name)
	if _, err := os.Stat(filepath.Join(d, "archive.tar.zst")); err != nil {
		return "", false
	}
	return testwal.Extract(t, testwal.Set{Name: "fixtures/" + name, Dir: d}), true
}

// IncidentFact is one object of an incident fixture's facts.json: the
// server's own answers for one event (fixtures/incident/generate.sh).
type IncidentFact struct {
	Kind            string          `json:"kind"`
	Nspname         *string         `json:"nspname"`
	Relname         *string         `json:"relname"`
	OID             *uint32         `json:"oid"`
	Relfilenode     *uint32         `json:"relfilenode"`
	RelfilenodeNext *uint32         `json:"relfilenode_after"`
	DatabaseOID     *uint32         `json:"database_oid"`
	XID             *uint32         `json:"xid"`
	LSNBefore       string          `json:"lsn_before"`
	LSNAfter        string          `json:"lsn_after"`
	CommitTime      *string         `json:"commit_time"`
	Rows            *uint64         `json:"rows"`
	Status          string          `json:"xact_status"`
	Extra           json.RawMessage `json:"extra"`
	Related         []struct {
		Relname     string `json:"relname"`
		Relfilenode uint32 `json:"relfilenode"`
	} `json:"related"`
	RelatedAfter []struct {
		Relname     string `json:"relname"`
		Relfilenode uint32 `json:"relfilenode"`
	} `json:"related_after"`
}
