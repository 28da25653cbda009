package rmgr

import (
	"bytes"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Tablespace descriptions: tblspc_desc in
// src/backend/access/rmgrdesc/tblspcdesc.c, payloads from
// src/include/commands/tablespace.h. The same in 10 to 18 (verified 13.16,
// 15.18 and 18.6 sources; 15.18 pg_waldump; 17.12's pg_waldump has the same
// strings): CREATE "%u \"%s\"" of xl_tblspc_create_rec {Oid ts_id; char
// ts_path[] (NUL-terminated)}, DROP "%u" of xl_tblspc_drop_rec {Oid ts_id}.

const (
	tblspcCreate = 0x00 // XLOG_TBLSPC_CREATE
	tblspcDrop   = 0x10 // XLOG_TBLSPC_DROP
)

// tblspcDesc is the Tablespace manager's Desc.
func tblspcDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlog.InfoMask {
	case tblspcCreate:
		id := r.u32()
		if !r.ok() {
			return dst
		}
		dst = appendUint(dst, uint64(id))
		dst = append(dst, " \""...)
		dst = append(dst, tblspcCString(r.rest())...)
		dst = append(dst, '"')
	case tblspcDrop:
		id := r.u32()
		if !r.ok() {
			return dst
		}
		dst = appendUint(dst, uint64(id))
	}
	return dst
}

// tblspcCString returns b up to its first NUL, as %s prints a C string; all
// of b when it has none (PostgreSQL would read on past the record).
func tblspcCString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
