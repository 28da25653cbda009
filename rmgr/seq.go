package rmgr

import "github.com/walscope/walscope/xlog"

// Sequence resource manager (id 15), mirroring seq_identify in
// src/backend/access/rmgrdesc/seqdesc.c; info values from
// src/include/commands/sequence.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6).

var seqNames = nameTable(entry{0x00, "LOG"})

var seqManager = Manager{
	ID:       xlog.RmgrSequence,
	Name:     "Sequence",
	Identify: func(_ xlog.Version, info uint8) string { return seqNames.masked(info) },
	Desc:     seqDesc,
}
