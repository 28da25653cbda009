// Package rmgr knows PostgreSQL's resource managers: their names and the names
// of their record types, per major version, exactly as pg_waldump prints them
// (src/include/access/rmgrlist.h and src/backend/access/rmgrdesc/*desc.c).
//
// The registry is a [256]*Manager table indexed by xl_rmid; the built-in
// managers are declared statically, one file per manager, each naming the
// PostgreSQL source it mirrors.
package rmgr

import (
	"fmt"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Manager describes one resource manager.
type Manager struct {
	ID   xlog.RmgrID
	Name string // as pg_waldump prints it, e.g. "Heap2"

	// Identify returns the record type name that pg_waldump of version v prints
	// for a record with this xl_info (the whole byte, flag bits included, as
	// pg_waldump passes it to rm_identify), or "" where rm_identify returns NULL.
	Identify func(v xlog.Version, info uint8) string

	// Desc appends the description pg_waldump of rec.Version prints after the
	// record type name (rm_desc), without allocating. Nil prints nothing.
	Desc func(dst []byte, rec *decode.Record) []byte

	// StatsBucket returns the --stats=record bucket of xl_info (0..15). Nil means
	// info >> 4; the Transaction manager drops its HAS_INFO bit.
	StatsBucket func(info uint8) uint8
}

var builtin = [256]*Manager{
	xlog.RmgrXLOG:              &xlogManager,
	xlog.RmgrTransaction:       &xactManager,
	xlog.RmgrStorage:           &smgrManager,
	xlog.RmgrCLOG:              &clogManager,
	xlog.RmgrDatabase:          &dbaseManager,
	xlog.RmgrTablespace:        &tblspcManager,
	xlog.RmgrMultiXact:         &multixactManager,
	xlog.RmgrRelMap:            &relmapManager,
	xlog.RmgrStandby:           &standbyManager,
	xlog.RmgrHeap2:             &heap2Manager,
	xlog.RmgrHeap:              &heapManager,
	xlog.RmgrBtree:             &btreeManager,
	xlog.RmgrHash:              &hashManager,
	xlog.RmgrGin:               &ginManager,
	xlog.RmgrGist:              &gistManager,
	xlog.RmgrSequence:          &seqManager,
	xlog.RmgrSPGist:            &spgManager,
	xlog.RmgrBRIN:              &brinManager,
	xlog.RmgrCommitTs:          &committsManager,
	xlog.RmgrReplicationOrigin: &replOriginManager,
	xlog.RmgrGeneric:           &genericManager,
	xlog.RmgrLogicalMessage:    &logicalmsgManager,
}

var custom [256]*Manager

// Lookup returns the manager with this id: a built-in one, a registered custom
// one, or nil. It never panics.
func Lookup(id xlog.RmgrID) *Manager {
	if m := builtin[id]; m != nil {
		return m
	}
	return custom[id]
}

// Register adds a custom resource manager (ids 128 to 255). It panics on a
// built-in id or a duplicate, as archive/zip's RegisterDecompressor does.
func Register(m *Manager) {
	if m.ID < xlog.RmgrMinCustom {
		panic(fmt.Sprintf("rmgr: Register of built-in id %d", m.ID))
	}
	if custom[m.ID] != nil {
		panic(fmt.Sprintf("rmgr: duplicate Register of id %d", m.ID))
	}
	custom[m.ID] = m
}

// Name returns pg_waldump's name of the resource manager id: the built-in or
// registered name, or "custom%03d" for an unregistered custom id.
func Name(id xlog.RmgrID) string {
	if m := Lookup(id); m != nil {
		return m.Name
	}
	return fmt.Sprintf("custom%03d", uint8(id))
}

// AppendRecordType appends the record type name pg_waldump of version v prints
// after "desc: " for (id, info): the identify name, or "UNKNOWN (%x)" of
// info&0xF0 where the manager does not know it.
func AppendRecordType(dst []byte, v xlog.Version, id xlog.RmgrID, info uint8) []byte {
	if m := Lookup(id); m != nil && m.Identify != nil {
		if s := m.Identify(v, info); s != "" {
			return append(dst, s...)
		}
	}
	return fmt.Appendf(dst, "UNKNOWN (%x)", info&0xF0)
}

// StatsBucket returns the --stats=record bucket of a record (0..15).
func StatsBucket(id xlog.RmgrID, info uint8) uint8 {
	if m := Lookup(id); m != nil && m.StatsBucket != nil {
		return m.StatsBucket(info)
	}
	return info >> 4
}

// AppendDesc appends the resource manager's description of rec, the text
// pg_waldump prints after the record type name and a space (rm_desc). An
// unregistered custom resource manager prints "rmid: N", as pg_waldump's
// default_desc does.
func AppendDesc(dst []byte, rec *decode.Record) []byte {
	m := Lookup(rec.Header.Rmid)
	if m == nil {
		dst = append(dst, "rmid: "...)
		return appendUint(dst, uint64(rec.Header.Rmid))
	}
	if m.Desc == nil {
		return dst
	}
	return m.Desc(dst, rec)
}
