package rmgr

// Helpers shared by the per-manager files. Every built-in rm_identify of
// PostgreSQL 10 to 18 is a switch over xl_info: most over
// info & ~XLR_INFO_MASK, Transaction over info & XLOG_XACT_OPMASK, and
// CommitTs and ReplicationOrigin over the whole byte. A name table indexed by
// info >> 4 reproduces each of them exactly.

// xlrInfoMask is XLR_INFO_MASK (src/include/access/xlogrecord.h): the low four
// bits of xl_info belong to the WAL machinery, not to the resource manager.
const xlrInfoMask = 0x0F

// names maps info >> 4 to the name rm_identify returns; "" stands for NULL.
type names [16]string

// entry is one case of an rm_identify switch.
type entry struct {
	info uint8 // the case label, already including any INIT_PAGE bit
	name string
}

// nameTable builds a table from switch cases.
func nameTable(cases ...entry) names {
	var t names
	for _, c := range cases {
		if c.info&xlrInfoMask != 0 {
			panic("rmgr: case label with XLR_INFO_MASK bits")
		}
		t[c.info>>4] = c.name
	}
	return t
}

// with returns a copy of t with the cases added or replaced.
func (t names) with(cases ...entry) names {
	for _, c := range cases {
		t[c.info>>4] = c.name
	}
	return t
}

// masked mirrors "switch (info & ~XLR_INFO_MASK)".
func (t *names) masked(info uint8) string { return t[info>>4] }

// unmasked mirrors "switch (info)": a record with any XLR_INFO_MASK bit set
// matches no case, and rm_identify returns NULL.
func (t *names) unmasked(info uint8) string {
	if info&xlrInfoMask != 0 {
		return ""
	}
	return t[info>>4]
}
