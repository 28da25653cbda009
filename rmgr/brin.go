package rmgr

import "github.com/walscope/walscope/xlog"

// BRIN resource manager (id 17), mirroring brin_identify in
// src/backend/access/rmgrdesc/brindesc.c; info values from
// src/include/access/brin_xlog.h.
//
// brin_identify switches on info & ~XLR_INFO_MASK with XLOG_BRIN_INIT_PAGE
// (0x80) in the case labels: INSERT+INIT (0x90) and UPDATE+INIT (0xA0) have
// names, every other value with 0x80 set is UNKNOWN. DESUMMARIZE (0x50) exists
// from 10 on. Unchanged from 10 to 18 (verified 13.16, 15.18, 17.12, 18.6).

const brinInitPage = 0x80

var brinNames = nameTable(
	entry{0x00, "CREATE_INDEX"},
	entry{0x10, "INSERT"},
	entry{0x10 | brinInitPage, "INSERT+INIT"},
	entry{0x20, "UPDATE"},
	entry{0x20 | brinInitPage, "UPDATE+INIT"},
	entry{0x30, "SAMEPAGE_UPDATE"},
	entry{0x40, "REVMAP_EXTEND"},
	entry{0x50, "DESUMMARIZE"},
)

var brinManager = Manager{
	ID:       xlog.RmgrBRIN,
	Name:     "BRIN",
	Desc:     brinDesc,
	Identify: func(_ xlog.Version, info uint8) string { return brinNames.masked(info) },
}
