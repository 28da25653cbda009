package xactstate_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"testing/fstest"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// checkAnswers asks st about xid and multi and checks what any answer must
// satisfy, whatever the bytes.
func checkAnswers(t *testing.T, st *xactstate.State, xid xlog.XID, multi xactstate.MultiXactID, infomask uint16) {
	t.Helper()
	s1 := st.Status(xid)
	if s1 > xactstate.Prepared {
		t.Fatalf("Status(%d) = %d", xid, s1)
	}
	if s2 := st.Status(xid); s2 != s1 {
		t.Fatalf("Status(%d): %v then %v", xid, s1, s2)
	}
	if lsn, ok := st.CommitLSN(xid); ok != (s1 == xactstate.Committed && ok) || (ok && lsn == 0 && false) {
		t.Fatalf("CommitLSN(%d) = %v %v with status %v", xid, lsn, ok, s1)
	}
	st.Parent(xid)
	ms, err := st.MultiMembers(multi)
	if err != nil {
		if !errors.Is(err, xactstate.ErrNoMulti) && !errors.Is(err, xactstate.ErrCorrupt) {
			t.Fatalf("MultiMembers(%d): %v wraps neither ErrNoMulti nor ErrCorrupt", multi, err)
		}
		if ms != nil {
			t.Fatalf("MultiMembers(%d): members %v with error %v", multi, ms, err)
		}
	}
	for _, m := range ms {
		if m.XID == 0 {
			t.Fatalf("MultiMembers(%d): the invalid xid among %v", multi, ms)
		}
	}
	h := xactstate.TupleHeader{Xmin: xid, Xmax: xlog.XID(multi), Infomask: infomask}
	v := st.TupleVisible(h)
	if v && !st.XminCommitted(infomask, xid) {
		t.Fatalf("%+v visible but its xmin not committed", h)
	}
	st.Finish()
	if s := st.Status(xid); s == xactstate.InProgress {
		t.Fatalf("Status(%d) in progress after Finish", xid)
	}
}

// FuzzSLRUPages feeds arbitrary pg_xact, pg_subtrans and pg_multixact
// segments (and a 2PC state file) to a State: no answer panics, and the
// answers keep their invariants.
func FuzzSLRUPages(f *testing.F) {
	page := make([]byte, 1024)
	page[0] = 0x1B // xids 0..3: in progress, committed, aborted... as 2-bit fields
	off := make([]byte, 1024)
	binary.LittleEndian.PutUint32(off[4:], 1)
	binary.LittleEndian.PutUint32(off[8:], 3)
	mem := make([]byte, 1024)
	binary.LittleEndian.PutUint32(mem[0:], 0x0500) // flags: member 1 update
	binary.LittleEndian.PutUint32(mem[8:], 700)
	binary.LittleEndian.PutUint32(mem[12:], 701)
	f.Add(page, page, off, mem, []byte{}, uint32(5), uint32(1), uint16(0x1000), uint8(15))
	f.Add(page[:100], []byte{}, off[:9], mem[:17], []byte{}, uint32(4097), uint32(2), uint16(0x0300), uint8(17))
	f.Add(page, page, off, mem, withCRC(twoPhaseState(5, 2)), uint32(6), uint32(1), uint16(0x1000), uint8(5))   // 15
	f.Add(page, page, off, mem, withCRC(twoPhaseState10(5, 2)), uint32(6), uint32(1), uint16(0x1000), uint8(0)) // 10
	f.Fuzz(func(t *testing.T, xact, subtrans, offsets, members, twophase []byte, xid, multi uint32, infomask uint16, ver uint8) {
		v := xlog.Version(10 + ver%9)
		fsys := fstest.MapFS{
			"pg_xact/0000":              {Data: xact},
			"pg_subtrans/0000":          {Data: subtrans},
			"pg_multixact/offsets/0000": {Data: offsets},
			"pg_multixact/members/0000": {Data: members},
		}
		if len(twophase) > 0 {
			fsys["pg_twophase/00000005"] = &fstest.MapFile{Data: twophase}
		}
		st, err := xactstate.New(xactstate.FS(fsys), v, 1024)
		if err != nil {
			if !errors.Is(err, xactstate.ErrCorrupt) {
				t.Fatalf("New: %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, p := range st.PreparedXIDs() {
			if p != 5 {
				t.Fatalf("prepared %d from the file of transaction 5", p)
			}
		}
		checkAnswers(t, st, xlog.XID(xid%8192), xactstate.MultiXactID(multi%300), infomask)
		if err := st.Err(); err != nil && !errors.Is(err, xactstate.ErrCorrupt) {
			t.Fatalf("Err: %v", err)
		}
	})
}

// FuzzRecords feeds arbitrary payloads of the records a State reads: no
// record panics, a problem is an ErrCorrupt, and the answers keep their
// invariants.
func FuzzRecords(f *testing.F) {
	commit := make([]byte, 8+4+4+8) // xact_time, xinfo (SUBXACTS), nsubxacts 2, xids
	binary.LittleEndian.PutUint32(commit[8:], 2)
	binary.LittleEndian.PutUint32(commit[12:], 2)
	binary.LittleEndian.PutUint32(commit[16:], 9)
	binary.LittleEndian.PutUint32(commit[20:], 10)
	create := make([]byte, 12+16)
	binary.LittleEndian.PutUint32(create, 1)
	binary.LittleEndian.PutUint32(create[4:], 1)
	binary.LittleEndian.PutUint32(create[8:], 2)
	binary.LittleEndian.PutUint32(create[12:], 8)
	binary.LittleEndian.PutUint32(create[20:], 9)
	binary.LittleEndian.PutUint32(create[24:], 4)
	f.Add(uint8(1), uint8(0x80), commit, uint32(8), uint32(9), uint32(1), uint8(15))
	f.Add(uint8(6), uint8(0x20), create, uint32(8), uint32(9), uint32(1), uint8(15))
	f.Add(uint8(1), uint8(0x50), []byte{8, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0}, uint32(8), uint32(9), uint32(1), uint8(13))
	f.Add(uint8(3), uint8(0x10), make([]byte, 16), uint32(8), uint32(9), uint32(1), uint8(17))
	f.Add(uint8(0), uint8(0x10), make([]byte, 88), uint32(8), uint32(9), uint32(1), uint8(12))
	f.Add(uint8(1), uint8(0x10), twoPhaseState(8, 2), uint32(8), uint32(9), uint32(1), uint8(16))
	f.Add(uint8(1), uint8(0x10), twoPhaseState10(8, 2), uint32(8), uint32(9), uint32(1), uint8(0))
	f.Fuzz(func(t *testing.T, rmid, info uint8, data []byte, recXID, xid, multi uint32, ver uint8) {
		v := xlog.Version(10 + ver%9)
		st, err := xactstate.New(xactstate.FS(fstest.MapFS{}), v, 8192)
		if err != nil {
			t.Fatal(err)
		}
		rec := &decode.Record{
			Record:   &xlog.Record{LSN: 0x1000000, Version: v, Header: xlog.RecordHeader{Rmid: xlog.RmgrID(rmid % 7), Info: info, XID: xlog.XID(recXID)}},
			MainData: data,
		}
		st.Add(rec)
		if err := st.Err(); err != nil && !errors.Is(err, xactstate.ErrCorrupt) {
			t.Fatalf("Err: %v", err)
		}
		checkAnswers(t, st, xlog.XID(xid), xactstate.MultiXactID(multi), 0x1000)
	})
}

// twoPhaseState builds a 15+ 2PC state of xid with n subtransactions (xid+1
// ...), for seeds.
func twoPhaseState(xid uint32, n int) []byte { return twoPhaseStateOf(0x57F94534, 72, 54, xid, n) }

// twoPhaseState10 is twoPhaseState in PostgreSQL 10's layout (its own magic,
// a 48-byte header).
func twoPhaseState10(xid uint32, n int) []byte { return twoPhaseStateOf(0x57F94533, 48, 46, xid, n) }

func twoPhaseStateOf(magic uint32, hdr, gidlenAt int, xid uint32, n int) []byte {
	b := make([]byte, hdr+8+8*((4*n+7)/8))
	binary.LittleEndian.PutUint32(b, magic)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)+4))
	binary.LittleEndian.PutUint32(b[8:], xid)
	binary.LittleEndian.PutUint32(b[28:], uint32(n))
	binary.LittleEndian.PutUint16(b[gidlenAt:], 2) // gidlen: "g\0"
	b[hdr] = 'g'
	for i := range n {
		binary.LittleEndian.PutUint32(b[hdr+8+4*i:], xid+1+uint32(i))
	}
	return b
}

// withCRC appends a 2PC file's CRC-32C.
func withCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}
