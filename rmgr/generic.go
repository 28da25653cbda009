package rmgr

import "github.com/walscope/walscope/xlog"

// Generic resource manager (id 20), mirroring generic_identify in
// src/backend/access/rmgrdesc/genericdesc.c: every record is named "Generic",
// whatever its info (verified 13.16, 15.18, 17.12, 18.6).

var genericManager = Manager{
	ID:       xlog.RmgrGeneric,
	Name:     "Generic",
	Identify: func(xlog.Version, uint8) string { return "Generic" },
	Desc:     genericDesc,
}
