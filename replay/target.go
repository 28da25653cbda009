package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Target is a recovery target as postgresql.conf's recovery_target_*
// settings give it: one of LSN, XID, Time or Name, with Inclusive
// (recovery_target_inclusive, true by default in PostgreSQL).
type Target struct {
	LSN       xlog.LSN
	XID       xlog.XID
	Time      time.Time
	Name      string
	Inclusive bool
}

// ErrTarget is the sentinel of a target that is given wrongly.
var ErrTarget = errors.New("invalid recovery target")

func (t Target) kinds() int {
	n := 0
	if t.LSN != 0 {
		n++
	}
	if t.XID != 0 {
		n++
	}
	if !t.Time.IsZero() {
		n++
	}
	if t.Name != "" {
		n++
	}
	return n
}

// String names the target as the setting that gives it.
func (t Target) String() string {
	switch {
	case t.LSN != 0:
		return fmt.Sprintf("recovery_target_lsn = '%s'", t.LSN)
	case t.XID != 0:
		return fmt.Sprintf("recovery_target_xid = '%d'", t.XID)
	case !t.Time.IsZero():
		return fmt.Sprintf("recovery_target_time = '%s'", t.Time.UTC().Format("2006-01-02 15:04:05.999999+00"))
	case t.Name != "":
		return fmt.Sprintf("recovery_target_name = '%s'", t.Name)
	}
	return "the end of the WAL"
}

// stopsBefore is recoveryStopsBefore (xlogrecovery.c, xlog.c before 15):
// whether recovery ends before applying rec.
// end is rec's transaction end (rmgr.XactEnd), nil if it is none.
func (t Target) stopsBefore(rec *decode.Record, end *rmgr.XactEndInfo) bool {
	if t.LSN != 0 && !t.Inclusive && rec.LSN >= t.LSN {
		return true
	}
	if end == nil {
		return false
	}
	if t.XID != 0 && !t.Inclusive && end.XID == t.XID {
		return true
	}
	if !t.Time.IsZero() && !end.Time.IsZero() {
		if t.Inclusive {
			return end.Time.After(t.Time)
		}
		return !end.Time.Before(t.Time)
	}
	return false
}

// stopsAfter is recoveryStopsAfter: whether recovery ends just after
// applying rec.
func (t Target) stopsAfter(rec *decode.Record, end *rmgr.XactEndInfo) bool {
	if t.Name != "" && rec.Header.Rmid == xlog.RmgrXLOG {
		if name, _, ok := rmgr.RestorePoint(rec); ok && name == t.Name {
			return true
		}
	}
	if t.LSN != 0 && t.Inclusive && rec.LSN >= t.LSN {
		return true
	}
	if t.XID != 0 && t.Inclusive && end != nil && end.XID == t.XID {
		return true
	}
	return false
}
