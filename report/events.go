package report

import (
	"strconv"
	"time"

	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/names"
)

// maxReportEvents bounds the events table; the note says how many more
// `walscope events` lists.
const maxReportEvents = 500

// eventsTable is the timeline of walscope events: one row per event, in
// WAL order, relations named through the side's catalog (and the names
// the WAL carries, where the catalog has them).
func eventsTable(s *ReportSide) (reportTable, string) {
	t := reportTable{Columns: []string{"time (UTC)", "timeline", "LSN", "kind", "relation", "xid", "outcome", "rows", "first LSN", "detail", "rows back"},
		Numeric: []bool{false, true, false, false, false, true, false, true, false, false, false},
		Code:    []bool{false, false, false, false, false, false, false, false, false, false, true}}
	if s.Events == nil {
		return t, ""
	}
	all := s.Events.Finish()
	var namer names.RelNamer
	if s.Catalog != nil {
		namer = s.Catalog
	}
	for i := range all {
		if len(t.Rows) == maxReportEvents {
			break
		}
		ne := format.NameEvent(s.Events, namer, s.WALNames, &all[i])
		ev := &ne
		xid, rows := "", ""
		if ev.XID != 0 {
			xid = strconv.FormatUint(uint64(ev.XID), 10)
		}
		if ev.Rows > 0 {
			rows = reportCount(ev.Rows)
		}
		t.Rows = append(t.Rows, []string{format.EventTimeCell(&ev.Event, time.UTC), strconv.Itoa(int(ev.TLI)), ev.LSN.String(), string(ev.Kind),
			format.EventRelationCell(ev), xid, ev.Outcome, rows, ev.FirstLSN.String(), ev.Detail, rowsBackCell(ev)})
	}
	note := "Relations created, dropped, truncated and rewritten, deletes and updates of at least 1,000 rows per transaction and relation, databases, checkpoints, timeline switches, backups, restore points and setting changes, from the WAL alone (walscope events). A time marked ~ is the last timestamp the WAL carried before the event. Rows back: the walscope table command that prints the relation as it was just before the event and the walscope rows command that writes the SQL undoing it (BACKUP: a base backup taken before the event; WAL: this WAL)."
	if len(all) > len(t.Rows) {
		note += " The first " + strconv.Itoa(len(t.Rows)) + " of " + strconv.Itoa(len(all)) + " events are shown; walscope events lists them all."
	}
	if len(all) == 0 {
		note = "No events in the WAL read."
	}
	return t, note
}

// rowsBackCell holds the commands that give the event's rows back
// (format.EventRowsCommands), one a line.
func rowsBackCell(ev *format.NamedEvent) string {
	back, undo := format.EventRowsCommands(ev)
	switch {
	case back == "":
		return undo
	case undo == "":
		return back
	}
	return back + "\n" + undo
}
