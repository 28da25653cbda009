package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Storage resource manager (id 2), mirroring smgr_identify in
// src/backend/access/rmgrdesc/smgrdesc.c; info values from
// src/include/catalog/storage_xlog.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6). 0x00 is unused.

const (
	smgrCreate   = 0x10
	smgrTruncate = 0x20
)

var smgrNames = nameTable(
	entry{smgrCreate, "CREATE"},
	entry{smgrTruncate, "TRUNCATE"},
)

var smgrManager = Manager{
	ID:       xlog.RmgrStorage,
	Name:     "Storage",
	Identify: func(_ xlog.Version, info uint8) string { return smgrNames.masked(info) },
	Desc:     smgrDesc,
}

// SmgrCreate decodes a Storage CREATE record (xl_smgr_create in
// src/include/catalog/storage_xlog.h: RelFileLocator, then ForkNumber): the
// relation file a transaction created.
func SmgrCreate(rec *decode.Record) (rel decode.RelFileLocator, fork decode.ForkNumber, ok bool) {
	if rec.Header.Rmid != xlog.RmgrStorage || rec.Header.Info&0xF0 != smgrCreate || len(rec.MainData) < 16 {
		return rel, 0, false
	}
	r := newDataReader(rec.MainData)
	rel = decode.RelFileLocator{SpcOID: r.u32(), DBOID: r.u32(), RelNumber: r.u32()}
	fork = decode.ForkNumber(r.i32())
	return rel, fork, r.ok()
}

// SmgrTruncate decodes a Storage TRUNCATE record (xl_smgr_truncate:
// BlockNumber blkno, RelFileLocator, int flags): the relation file cut to
// blocks blocks.
func SmgrTruncate(rec *decode.Record) (rel decode.RelFileLocator, blocks uint32, ok bool) {
	if rec.Header.Rmid != xlog.RmgrStorage || rec.Header.Info&0xF0 != smgrTruncate || len(rec.MainData) < 20 {
		return rel, 0, false
	}
	r := newDataReader(rec.MainData)
	blocks = r.u32()
	rel = smgrReadRel(&r)
	return rel, blocks, r.ok()
}
