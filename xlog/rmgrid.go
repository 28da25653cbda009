package xlog

// RmgrID is a resource manager id, xl_rmid (src/include/access/rmgrlist.h).
// The list has been the same from 9.6 to 18; ids 128 to 255 are custom
// resource managers (PostgreSQL 15 and later).
type RmgrID uint8

// Built-in resource manager ids, in rmgrlist.h order.
const (
	RmgrXLOG              RmgrID = 0
	RmgrTransaction       RmgrID = 1
	RmgrStorage           RmgrID = 2
	RmgrCLOG              RmgrID = 3
	RmgrDatabase          RmgrID = 4
	RmgrTablespace        RmgrID = 5
	RmgrMultiXact         RmgrID = 6
	RmgrRelMap            RmgrID = 7
	RmgrStandby           RmgrID = 8
	RmgrHeap2             RmgrID = 9
	RmgrHeap              RmgrID = 10
	RmgrBtree             RmgrID = 11
	RmgrHash              RmgrID = 12
	RmgrGin               RmgrID = 13
	RmgrGist              RmgrID = 14
	RmgrSequence          RmgrID = 15
	RmgrSPGist            RmgrID = 16
	RmgrBRIN              RmgrID = 17
	RmgrCommitTs          RmgrID = 18
	RmgrReplicationOrigin RmgrID = 19
	RmgrGeneric           RmgrID = 20
	RmgrLogicalMessage    RmgrID = 21

	RmgrMaxBuiltin          = RmgrLogicalMessage
	RmgrMinCustom    RmgrID = 128 // RM_MIN_CUSTOM_ID
	RmgrExperimental        = RmgrMinCustom
)

// Valid reports whether a record of version v may carry this rmgr id, as
// xlogreader's ValidXLogRecordHeader checks it: built-in ids always, custom
// ids only from PostgreSQL 15.
func (id RmgrID) Valid(v Version) bool {
	if id <= RmgrMaxBuiltin {
		return true
	}
	return id >= RmgrMinCustom && v >= V15
}
