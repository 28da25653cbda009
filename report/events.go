package report

import (
	"strconv"
	"time"

	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/names"
)

// maxReportEvents bounds the events table; the note says how many more
// `walscope events` lists.
const maxReportEvents = 500

// eventsTable is the timeline of walscope events: one row per event, in
// WAL order, relations named through the side's catalog (and the names
// the WAL carries, where the catalog has them).
func eventsTable(s *ReportSide) (reportTable, string) {
	t := reportTable{Columns: []string{"time (UTC)", "timeline", "LSN", "kind", "relation", "xid", "outcome", "rows", "first LSN", "detail"},
		Numeric: []bool{false, true, false, false, false, true, false, true, false, false}}
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
		incident.NameSchemas(s.WALNames, &all[i])
		ev := &format.NamedEvent{Event: all[i], Name: s.Events.EventName(namer, &all[i])}
		xid, rows := "", ""
		if ev.XID != 0 {
			xid = strconv.FormatUint(uint64(ev.XID), 10)
		}
		if ev.Rows > 0 {
			rows = reportCount(ev.Rows)
		}
		t.Rows = append(t.Rows, []string{format.EventTimeCell(&ev.Event, time.UTC), strconv.Itoa(int(ev.TLI)), ev.LSN.String(), string(ev.Kind),
			format.EventRelationCell(ev), xid, ev.Outcome, rows, ev.FirstLSN.String(), ev.Detail})
	}
	note := "Relations created, dropped, truncated and rewritten, deletes and updates of at least 1,000 rows per transaction and relation, databases, checkpoints, timeline switches, backups, restore points and setting changes, from the WAL alone (walscope events). A time marked ~ is the last timestamp the WAL carried before the event."
	if len(all) > len(t.Rows) {
		note += " The first " + strconv.Itoa(len(t.Rows)) + " of " + strconv.Itoa(len(all)) + " events are shown; walscope events lists them all."
	}
	if len(all) == 0 {
		note = "No events in the WAL read."
	}
	return t, note
}
