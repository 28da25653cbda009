package format

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/names"
)

// NamedEvent is an event with its relation's name ("" if unknown).
type NamedEvent struct {
	incident.Event
	Name string
	// Relkind is the relation's pg_class.relkind as the WAL last showed it
	// ('r' a table, 'i' an index, ...; 0 unknown).
	Relkind byte
}

// NameEvent names one of ev's events: the schemas a dropped schema held
// (incident.NameSchemas), its relation's name (namer first, then the names
// the WAL carries) and relkind. w may be nil.
func NameEvent(ev *incident.Events, namer names.RelNamer, w *names.WALNames, e *incident.Event) NamedEvent {
	incident.NameSchemas(w, e)
	ne := NamedEvent{Event: *e, Name: ev.EventName(namer, e)}
	if e.HasRel && e.Rel.RelNumber != 0 {
		if r, ok := w.Lookup(e.Rel); ok {
			ne.Relkind = r.Kind
		} else if r, ok := w.Lookup(e.Replaced); ok && e.Replaced.RelNumber != 0 {
			ne.Relkind = r.Kind
		}
	}
	return ne
}

// EventJSON is one event as `walscope events --format json` writes it:
// every key is always present, null where the event has no such thing.
type EventJSON struct {
	Kind         string  `json:"kind"`
	Relation     *string `json:"relation"`      // tablespace/database/relfilenode
	RelationName *string `json:"relation_name"` // schema.name, from the namer
	Replaced     *string `json:"replaced"`      // the file a rewrite or truncation replaced
	Database     *uint32 `json:"database"`      // the database's OID
	XID          *uint32 `json:"xid"`           // top-level transaction
	Outcome      *string `json:"outcome"`       // commit, abort, open
	FirstLSN     string  `json:"first_lsn"`
	LSN          string  `json:"lsn"`
	Time         *string `json:"time"`     // the event's own time (commit, checkpoint, ...)
	WALTime      *string `json:"wal_time"` // the last timestamp in the WAL at or before lsn
	Timeline     uint32  `json:"timeline"`
	Rows         *uint64 `json:"rows"`
	Detail       string  `json:"detail"`
	// RowsBack and RowsUndo are the commands that give a committed
	// event's rows back (EventRowsCommands); null where there are none.
	RowsBack *string `json:"rows_back"`
	RowsUndo *string `json:"rows_undo"`
}

// EventTimeRFC3339 is the layout of times in JSON and CSV: RFC 3339 with
// microseconds and the zone.
const EventTimeRFC3339 = "2006-01-02T15:04:05.000000Z07:00"

// EventTimeText is the layout of times in the text output (pg_waldump's,
// in the zone TZ names).
const EventTimeText = "2006-01-02 15:04:05.000000 MST"

func relString(ev *incident.Event) string {
	r := ev.Rel
	return fmt.Sprintf("%d/%d/%d", r.SpcOID, r.DBOID, r.RelNumber)
}

func ptr[T any](v T) *T { return &v }

// EventToJSON converts one event.
func EventToJSON(ev *NamedEvent, loc *time.Location) EventJSON {
	j := EventJSON{Kind: string(ev.Kind), FirstLSN: ev.FirstLSN.String(), LSN: ev.LSN.String(), Timeline: uint32(ev.TLI), Detail: ev.Detail}
	if ev.HasRel {
		j.Database = ptr(ev.Rel.DBOID)
		if ev.Rel.RelNumber != 0 {
			j.Relation = ptr(relString(&ev.Event))
		}
	}
	if ev.Name != "" {
		j.RelationName = ptr(ev.Name)
	}
	if ev.Replaced.RelNumber != 0 {
		r := ev.Replaced
		j.Replaced = ptr(fmt.Sprintf("%d/%d/%d", r.SpcOID, r.DBOID, r.RelNumber))
	}
	if ev.XID != 0 {
		j.XID = ptr(uint32(ev.XID))
	}
	if ev.Outcome != "" {
		j.Outcome = ptr(ev.Outcome)
	}
	if !ev.Time.IsZero() {
		j.Time = ptr(ev.Time.In(loc).Format(EventTimeRFC3339))
	}
	if !ev.AsOf.IsZero() {
		j.WALTime = ptr(ev.AsOf.In(loc).Format(EventTimeRFC3339))
	}
	if hasRows(&ev.Event) {
		j.Rows = ptr(ev.Rows)
	}
	back, undo := EventRowsCommands(ev)
	j.RowsBack, j.RowsUndo = strp(back), strp(undo)
	return j
}

// EventRowsCommands returns the commands that give a committed event's rows
// back: tableCmd, `walscope table`, prints its relation as it was just
// before the event's commit (the recovery target that undoes it, exclusive,
// as pitr sets it); rowsCmd, `walscope rows`, writes the SQL that undoes
// the event's transaction in that relation (for a dropped schema: in every
// table of the transaction). Deletes, updates, truncations and dropped
// tables have both; a rewrite (its rows are still there, perhaps changed
// by ALTER TABLE) has the table command only; "" where there is none: an
// event rolled back or still open, one without a transaction, a relation
// without a name (the table command needs one). BACKUP stands for a base
// backup taken before the event, WAL for the WAL the event was read from.
func EventRowsCommands(ev *NamedEvent) (tableCmd, rowsCmd string) {
	if ev.Outcome != "commit" || ev.XID == 0 || ev.LSN == 0 {
		return "", ""
	}
	if !userTable(ev) {
		return "", ""
	}
	named := ev.HasRel && ev.Rel.RelNumber != 0 && ev.Name != ""
	db := uint32(0)
	if ev.HasRel {
		db = ev.Rel.DBOID
	}
	table := func() string { return tableCommand("BACKUP", ev.Name, db, ev.LSN) }
	rows := func(relation bool) string {
		if relation && named {
			return rowsCommand("BACKUP", ev.XID, ev.Name, db)
		}
		return rowsCommand("BACKUP", ev.XID, "", 0)
	}
	switch ev.Kind {
	case incident.EventDelete, incident.EventUpdate, incident.EventTruncate:
		if named {
			tableCmd = table()
		}
		return tableCmd, rows(true)
	case incident.EventDrop:
		if ev.Rel.RelNumber == 0 {
			return "", "" // a database's files: not rows
		}
		if named {
			tableCmd = table()
		}
		return tableCmd, rows(true)
	case incident.EventRewrite:
		if named {
			tableCmd = table()
		}
		return tableCmd, ""
	case incident.EventDropSchema:
		return "", rows(false)
	}
	return "", ""
}

// firstNormalObjectID is FirstNormalObjectId (transam.h): files below are
// the system's own, as created by initdb.
const firstNormalObjectID = 16384

// userTable tells the events whose rows a DBA gets back: of a table or
// materialized view (an index, a sequence or a TOAST table is rebuilt with
// its table), not of a system catalog; a relation the WAL did not name is
// taken as a user's table when its file is not one of initdb's.
func userTable(ev *NamedEvent) bool {
	if ev.Kind == incident.EventDropSchema {
		return true // the schema's tables: rows --xid without --relation
	}
	if !ev.HasRel || ev.Rel.RelNumber == 0 {
		return false
	}
	switch ev.Relkind {
	case 0, 'r', 'm':
	default:
		return false
	}
	for _, sys := range []string{"pg_catalog.", "pg_toast.", "information_schema."} {
		if strings.HasPrefix(ev.Name, sys) {
			return false
		}
	}
	return ev.Name != "" || ev.Rel.RelNumber >= firstNormalObjectID
}

// WriteEventsRowsBack writes, after the text table, the commands that give
// the events' rows back (EventRowsCommands): one paragraph per transaction
// and relation, naming its events (a TRUNCATE after deletes in one
// transaction is one paragraph); nothing when no event has any.
func WriteEventsRowsBack(w io.Writer, evs []NamedEvent) error {
	type group struct {
		lsn        string
		xid        uint32
		rel        string
		kinds      []string
		back, undo string
	}
	var groups []*group
	seen := map[[2]string]*group{}
	for i := range evs {
		ev := &evs[i]
		back, undo := EventRowsCommands(ev)
		if back == "" && undo == "" {
			continue
		}
		g := seen[[2]string{back, undo}]
		if g == nil {
			g = &group{lsn: ev.LSN.String(), xid: uint32(ev.XID), rel: EventRelationCell(ev), back: back, undo: undo}
			seen[[2]string{back, undo}] = g
			groups = append(groups, g)
		}
		if k := string(ev.Kind); !slices.Contains(g.kinds, k) {
			g.kinds = append(g.kinds, k)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	b := []byte("\nRows back (BACKUP: a base backup taken before the event; WAL: the WAL read here):\n")
	for _, g := range groups {
		b = fmt.Appendf(b, "  %s xid %d %s (%s):\n", g.lsn, g.xid, g.rel, strings.Join(g.kinds, ", "))
		for _, c := range []string{g.back, g.undo} {
			if c != "" {
				b = fmt.Appendf(b, "    %s\n", c)
			}
		}
	}
	_, err := w.Write(b)
	return err
}

// WriteEventsJSON writes the events as a JSON array.
func WriteEventsJSON(w io.Writer, evs []NamedEvent, loc *time.Location) error {
	out := make([]EventJSON, len(evs))
	for i := range evs {
		out[i] = EventToJSON(&evs[i], loc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// EventsTable is the events as a table: for CSV, the JSON keys as columns
// (times RFC 3339); for text (csv false), columns a DBA reads, times in
// pg_waldump's layout, a time the event does not have of its own shown as
// "~" and the last WAL timestamp before it.
func EventsTable(evs []NamedEvent, loc *time.Location, csv bool) *Table {
	if csv {
		t := &Table{Columns: []string{"kind", "relation", "relation_name", "replaced", "database", "xid", "outcome", "first_lsn", "lsn", "time", "wal_time", "timeline", "rows", "detail", "rows_back", "rows_undo"}}
		s := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		for i := range evs {
			j := EventToJSON(&evs[i], loc)
			row := []string{j.Kind, s(j.Relation), s(j.RelationName), s(j.Replaced), "", "", s(j.Outcome), j.FirstLSN, j.LSN, s(j.Time), s(j.WALTime), strconv.Itoa(int(j.Timeline)), "", j.Detail, s(j.RowsBack), s(j.RowsUndo)}
			if j.Database != nil {
				row[4] = strconv.FormatUint(uint64(*j.Database), 10)
			}
			if j.XID != nil {
				row[5] = strconv.FormatUint(uint64(*j.XID), 10)
			}
			if j.Rows != nil {
				row[12] = strconv.FormatUint(*j.Rows, 10)
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	t := &Table{Columns: []string{"time", "tli", "lsn", "kind", "relation", "xid", "outcome", "rows", "first lsn", "detail"},
		Numeric: []bool{false, true, false, false, false, true, false, true, false, false}}
	for i := range evs {
		ev := &evs[i]
		t.Rows = append(t.Rows, []string{EventTimeCell(&ev.Event, loc), strconv.Itoa(int(ev.TLI)), ev.LSN.String(), string(ev.Kind),
			EventRelationCell(ev), xidCell(ev), ev.Outcome, rowsCell(ev), ev.FirstLSN.String(), ev.Detail})
	}
	return t
}

// EventTimeCell is the time of the text output: the event's own, or "~"
// and the last WAL timestamp before it.
func EventTimeCell(ev *incident.Event, loc *time.Location) string {
	switch {
	case !ev.Time.IsZero():
		return ev.Time.In(loc).Format(EventTimeText)
	case !ev.AsOf.IsZero():
		return "~" + ev.AsOf.In(loc).Format(EventTimeText)
	}
	return ""
}

// EventRelationCell is "name (T/D/R)", "T/D/R", or "database D" for
// database events.
func EventRelationCell(ev *NamedEvent) string {
	if !ev.HasRel {
		return ""
	}
	if ev.Rel.RelNumber == 0 {
		return fmt.Sprintf("database %d", ev.Rel.DBOID)
	}
	if ev.Name != "" {
		return ev.Name + " (" + relString(&ev.Event) + ")"
	}
	return relString(&ev.Event)
}

func xidCell(ev *NamedEvent) string {
	if ev.XID == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(ev.XID), 10)
}

func rowsCell(ev *NamedEvent) string {
	if hasRows(&ev.Event) {
		return strconv.FormatUint(ev.Rows, 10)
	}
	return ""
}

// hasRows tells the events that count rows: deletes, updates, schema drops
// (pg_namespace rows), rolled-back drops (pg_class rows).
func hasRows(ev *incident.Event) bool {
	switch ev.Kind {
	case incident.EventDelete, incident.EventUpdate, incident.EventDropSchema:
		return true
	case incident.EventDrop:
		return ev.Rows > 0
	}
	return false
}
