package xactstate_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// Bad input: each case is an error that names what and where, and wraps its
// sentinel.
func TestNewRejects(t *testing.T) {
	good := withCRC(twoPhaseState(1000, 2))
	badCRC := append([]byte(nil), good...)
	badCRC[80] ^= 1
	wrongXID := withCRC(twoPhaseState(1001, 0))
	short := withCRC(twoPhaseState(1000, 2)[:60])
	cases := []struct {
		name      string
		files     fstest.MapFS
		v         xlog.Version
		blockSize int
		sentinel  error
		mentions  []string
	}{
		{"block size", fstest.MapFS{}, xlog.V15, 3000, xactstate.ErrSetup, []string{"BLCKSZ 3000"}},
		{"version", fstest.MapFS{}, 9, 8192, xactstate.ErrSetup, []string{"PostgreSQL 9"}},
		{"2PC CRC", fstest.MapFS{"pg_twophase/000003E8": {Data: badCRC}}, xlog.V15, 8192, xactstate.ErrCorrupt, []string{"pg_twophase/000003E8", "CRC-32C", "transaction 1000"}},
		{"2PC of another xid", fstest.MapFS{"pg_twophase/000003E8": {Data: wrongXID}}, xlog.V15, 8192, xactstate.ErrCorrupt, []string{"pg_twophase/000003E8", "of transaction 1001"}},
		{"2PC too short", fstest.MapFS{"pg_twophase/000003E8": {Data: short}}, xlog.V15, 8192, xactstate.ErrCorrupt, []string{"pg_twophase/000003E8", "too short"}},
		{"2PC unreadable", fstest.MapFS{"pg_twophase/000003E8": {Mode: fs.ModeDir}}, xlog.V15, 8192, nil, []string{"pg_twophase/000003E8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := xactstate.New(xactstate.FS(c.files), c.v, c.blockSize)
			if err == nil {
				t.Fatalf("New accepted it: %v", st.PreparedXIDs())
			}
			if c.sentinel != nil && !errors.Is(err, c.sentinel) {
				t.Errorf("%v does not wrap %v", err, c.sentinel)
			}
			for _, m := range c.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q does not mention %q", err, m)
				}
			}
		})
	}
	// The same file, intact, in both name forms (8 hex digits up to 17,
	// epoch and xid from 18), is a prepared transaction with its
	// subtransactions.
	for _, name := range []string{"000003E8", "00000000000003E8"} {
		st, err := xactstate.New(xactstate.FS(fstest.MapFS{"pg_twophase/" + name: {Data: good}}), xlog.V15, 8192)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.PreparedXIDs(); len(got) != 1 || got[0] != 1000 {
			t.Errorf("%s: prepared %v", name, got)
		}
		st.Finish()
		for _, x := range []xlog.XID{1000, 1001, 1002} {
			if s := st.Status(x); s != xactstate.Prepared {
				t.Errorf("%s: Status(%d) = %v", name, x, s)
			}
		}
		if p := st.Parent(1002); p != 1000 {
			t.Errorf("%s: Parent(1002) = %d", name, p)
		}
	}
}

// A pg_xact segment that ends inside a page is damage: the answer reads
// zeros and Err names the file.
func TestShortSegment(t *testing.T) {
	st, err := xactstate.New(xactstate.FS(fstest.MapFS{"pg_xact/0000": {Data: make([]byte, 8192+100)}}), xlog.V15, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Status(5); s != xactstate.InProgress || st.Err() != nil {
		t.Fatalf("xid 5 on the whole first page: %v, %v", s, st.Err())
	}
	if s := st.Status(32768 + 5); s != xactstate.InProgress {
		t.Errorf("xid on the torn page: %v", s)
	}
	err = st.Err()
	if !errors.Is(err, xactstate.ErrCorrupt) || !strings.Contains(err.Error(), "pg_xact/0000 at offset 8192") {
		t.Errorf("Err = %v", err)
	}
}
