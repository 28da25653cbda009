package format

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/xlog"
)

// PITRJSON is `walscope pitr --format json`.
type PITRJSON struct {
	Event     PITREventJSON  `json:"event"`
	Target    PITRTargetJSON `json:"target"`
	Reachable *bool          `json:"reachable"`
	Reasons   []string       `json:"reasons"`
	Missing   []string       `json:"missing"`
	WALNeeded PITRWALJSON    `json:"wal_needed"`
	Window    PITRWindowJSON `json:"window"`
	Backup    *PITRBackup    `json:"backup"`
	Notes     []string       `json:"notes"`
	Searched  string         `json:"searched"`
	// Candidates are the committed events of the relation, best first
	// (the event is the first), and Why says why it was chosen; [] and ""
	// for a target given by hand.
	Candidates []PITRCandidateJSON `json:"candidates"`
	Why        string              `json:"why"`
	// RowsBack is the walscope table command that prints the relation as
	// it was just before the event ("" without a relation).
	RowsBack string `json:"rows_back"`
	// RowsUndo is the walscope rows command that writes the SQL undoing
	// the event's transaction ("" when the event has no xid).
	RowsUndo string `json:"rows_undo"`
}

// PITRCandidateJSON is one committed event of the relation asked for.
type PITRCandidateJSON struct {
	Kind       string   `json:"kind"`
	XID        uint32   `json:"xid"`
	CommitLSN  string   `json:"commit_lsn"`
	CommitTime *string  `json:"commit_time"`
	Rows       uint64   `json:"rows"`
	TableRows  *float64 `json:"table_rows"` // pg_class.reltuples before it, where the WAL showed it
	Share      *float64 `json:"share"`      // rows over table_rows
}

// PITREventJSON is the event recovery stops before.
type PITREventJSON struct {
	Kind        string  `json:"kind"`
	Relation    *string `json:"relation"`
	Relfilenode *uint32 `json:"relfilenode"`
	Locator     *string `json:"locator"` // T/D/R
	XID         *uint32 `json:"xid"`
	LSN         string  `json:"lsn"`        // the event's first record
	CommitLSN   string  `json:"commit_lsn"` // the record recovery stops before
	CommitTime  *string `json:"commit_time"`
	AsOf        *string `json:"as_of"` // the last commit time at or before it
	Timeline    uint32  `json:"timeline"`
	Rows        *uint64 `json:"rows"`
	Detail      string  `json:"detail"`
}

// PITRTargetJSON are the settings, as postgresql.conf takes them (strings
// but inclusive).
type PITRTargetJSON struct {
	LSN       string  `json:"recovery_target_lsn"`
	XID       *string `json:"recovery_target_xid"`
	Time      *string `json:"recovery_target_time"`
	Name      *string `json:"recovery_target_name,omitempty"`
	Inclusive bool    `json:"recovery_target_inclusive"`
	Timeline  string  `json:"recovery_target_timeline"`
	Chosen    string  `json:"chosen"` // the one the text prints uncommented: lsn, xid, time or name
}

// PITRWALJSON is the WAL recovery needs.
type PITRWALJSON struct {
	First     *string  `json:"first"`
	Last      *string  `json:"last"`
	Timelines []uint32 `json:"timelines"`
}

// PITRPointJSON is a point in the WAL.
type PITRPointJSON struct {
	LSN      *string `json:"lsn"`
	Time     *string `json:"time"`
	Timeline uint32  `json:"timeline,omitempty"`
	XID      uint32  `json:"xid,omitempty"`
	What     string  `json:"what,omitempty"`
}

// PITRWindowJSON is how far recovery can go.
type PITRWindowJSON struct {
	Earliest PITRPointJSON `json:"earliest"`
	// LatestCommit is the last commit on the target's timeline (or the
	// last timeline read); LatestCommitByTimeline every timeline's.
	LatestCommit           *PITRPointJSON  `json:"latest_commit"`
	LatestCommitByTimeline []PITRPointJSON `json:"latest_commit_by_timeline"`
}

// PITRBackup is the backup checked.
type PITRBackup struct {
	Path          string  `json:"path"`
	StartLSN      string  `json:"start_lsn"`
	CheckpointLSN string  `json:"checkpoint_lsn"`
	StartTimeline uint32  `json:"start_timeline"`
	StopLSN       *string `json:"stop_lsn"`
	Label         string  `json:"label"`
	// Tool: pgBackRest or Barman when the backup was read from their
	// repository; Type is pgBackRest's full, diff or incr.
	Tool      string `json:"tool,omitempty"`
	Type      string `json:"type,omitempty"`
	StartTime string `json:"start_time,omitempty"`
	StopTime  string `json:"stop_time,omitempty"`
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// RowsBackCommand is the `walscope table` command that prints the event's
// relation as it was just before the event (the target, exclusive), or ""
// when the plan names no relation. BACKUP stands for the base backup where
// the plan's is a history file or none was given, WAL for the archive.
func RowsBackCommand(p *incident.PITRPlan, b *backup.BackupLabel) string {
	e := &p.Event
	if e.Relation == "" || p.Settings.LSN == 0 {
		return ""
	}
	bk := "BACKUP"
	if b != nil && strings.HasSuffix(b.Path, "/backup_label") {
		bk = shellWord(strings.TrimSuffix(b.Path, "/backup_label"))
	}
	return tableCommand(bk, e.Relation, 0, p.Settings.LSN)
}

// tableCommand is the `walscope table` command that prints relation rel
// (of database db, 0: any) as it was just before lsn.
func tableCommand(backup, rel string, db uint32, lsn xlog.LSN) string {
	return fmt.Sprintf("walscope table --backup %s --relation %s%s --target-lsn %s --target-inclusive=false WAL...", backup, shellWord(rel), databaseFlag(db), lsn)
}

// rowsCommand is the `walscope rows` command that writes the SQL undoing
// transaction xid (in relation rel of database db only, when rel is given).
func rowsCommand(backup string, xid xlog.XID, rel string, db uint32) string {
	only := ""
	if rel != "" {
		only = " --relation " + shellWord(rel) + databaseFlag(db)
	}
	return fmt.Sprintf("walscope rows --backup %s --xid %d%s --format sql WAL...", backup, xid, only)
}

func databaseFlag(db uint32) string {
	if db == 0 {
		return ""
	}
	return fmt.Sprintf(" --database %d", db)
}

// RowsUndoCommand is the `walscope rows` command that writes the SQL
// undoing the event's transaction (its rows inserted back, set back,
// deleted; a truncated or dropped table's rows recreated), or "" when the
// event has no transaction id. BACKUP and WAL as in RowsBackCommand.
func RowsUndoCommand(p *incident.PITRPlan, b *backup.BackupLabel) string {
	if p.Event.XID == 0 {
		return ""
	}
	bk := "BACKUP"
	if b != nil && strings.HasSuffix(b.Path, "/backup_label") {
		bk = shellWord(strings.TrimSuffix(b.Path, "/backup_label"))
	}
	return rowsCommand(bk, p.Event.XID, "", 0)
}

// shellWord quotes s for a POSIX shell where it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-:+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxOtherCandidates is how many other candidates the text lists.
const maxOtherCandidates = 5

// PITRToJSON makes the JSON of a plan; chosen is lsn, xid, time or name.
func PITRToJSON(p *incident.PITRPlan, b *backup.BackupLabel, chosen string) PITRJSON {
	e := &p.Event
	j := PITRJSON{Reachable: p.Reachable, Reasons: p.Reasons, Missing: p.Missing, Notes: p.Notes, Searched: p.Searched, Why: p.Why, RowsBack: RowsBackCommand(p, b), RowsUndo: RowsUndoCommand(p, b),
		Candidates: make([]PITRCandidateJSON, 0, len(p.Candidates))}
	for _, c := range p.Candidates {
		cj := PITRCandidateJSON{Kind: c.Kind, XID: uint32(c.XID), CommitLSN: c.CommitLSN.String(), CommitTime: strp(incident.PGTime(c.CommitTime)), Rows: c.Rows}
		if c.HasTableRows {
			tr, sh := c.TableRows, c.Share
			cj.TableRows, cj.Share = &tr, &sh
		}
		j.Candidates = append(j.Candidates, cj)
	}
	if j.Reasons == nil {
		j.Reasons = []string{}
	}
	if j.Missing == nil {
		j.Missing = []string{}
	}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	j.Event = PITREventJSON{Kind: e.Kind, Relation: strp(e.Relation), LSN: e.LSN.String(), CommitLSN: e.CommitLSN.String(),
		CommitTime: strp(incident.PGTime(e.CommitTime)), AsOf: strp(incident.PGTime(e.AsOf)), Timeline: uint32(e.TLI), Detail: e.Detail}
	if e.HasRel {
		n := e.Rel.RelNumber
		j.Event.Relfilenode = &n
		j.Event.Locator = strp(fmt.Sprintf("%d/%d/%d", e.Rel.SpcOID, e.Rel.DBOID, e.Rel.RelNumber))
	}
	if e.XID != 0 {
		x := uint32(e.XID)
		j.Event.XID = &x
	}
	if e.Rows != 0 {
		r := e.Rows
		j.Event.Rows = &r
	}
	s := &p.Settings
	j.Target = PITRTargetJSON{LSN: s.LSN.String(), Time: strp(incident.PGTime(s.Time)), Name: strp(s.Name), Inclusive: s.Inclusive,
		Timeline: strconv.FormatUint(uint64(s.TLI), 10), Chosen: chosen}
	if s.XID != 0 {
		j.Target.XID = strp(strconv.FormatUint(uint64(s.XID), 10))
	}
	j.WALNeeded = PITRWALJSON{First: strp(p.FirstSegment), Last: strp(p.LastSegment), Timelines: []uint32{}}
	for _, t := range p.Timelines {
		j.WALNeeded.Timelines = append(j.WALNeeded.Timelines, uint32(t))
	}
	w := &p.Window
	j.Window.Earliest = PITRPointJSON{Time: strp(incident.PGTime(w.EarliestTime)), What: w.EarliestWhat}
	if w.EarliestLSN != 0 {
		j.Window.Earliest.LSN = strp(w.EarliestLSN.String())
	}
	j.Window.LatestCommitByTimeline = []PITRPointJSON{}
	for _, c := range w.LatestCommit {
		pt := PITRPointJSON{LSN: strp(c.LSN.String()), Time: strp(incident.PGTime(c.Time)), Timeline: uint32(c.TLI), XID: uint32(c.XID)}
		j.Window.LatestCommitByTimeline = append(j.Window.LatestCommitByTimeline, pt)
		if c.TLI == s.TLI || j.Window.LatestCommit == nil || c.TLI < s.TLI {
			cp := pt
			j.Window.LatestCommit = &cp
		}
	}
	if b != nil {
		j.Backup = &PITRBackup{Path: b.Path, StartLSN: b.StartLSN.String(), CheckpointLSN: b.CheckpointLSN.String(),
			StartTimeline: uint32(b.StartTLI), Label: b.Label, Tool: b.Tool, Type: b.BackupType}
		if b.Tool != "" {
			j.Backup.StartTime, j.Backup.StopTime = b.StartTime, b.StopTime
		}
		if b.StopLSN != 0 {
			j.Backup.StopLSN = strp(b.StopLSN.String())
		}
	}
	return j
}

// WritePITRJSON writes the plan as JSON.
func WritePITRJSON(w io.Writer, p *incident.PITRPlan, b *backup.BackupLabel, chosen string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(PITRToJSON(p, b, chosen))
}

// WritePITRText writes the plan as postgresql.conf lines ready to paste:
// one comment line naming the event, the chosen target, inclusive and
// timeline; the other targets and the backup check as comment lines.
func WritePITRText(w io.Writer, p *incident.PITRPlan, b *backup.BackupLabel, chosen string) error {
	var sb strings.Builder
	e, s := &p.Event, &p.Settings
	// the comment line
	what := e.Kind
	if e.Kind == "record" {
		what = "the first record at or after the target"
	}
	if e.Relation != "" {
		what += " of " + e.Relation
	} else if e.HasRel {
		what += fmt.Sprintf(" of %d/%d/%d", e.Rel.SpcOID, e.Rel.DBOID, e.Rel.RelNumber)
	}
	if e.RestoreName != "" {
		what += " '" + e.RestoreName + "'"
	}
	if e.XID != 0 {
		what += fmt.Sprintf(", xid %d", e.XID)
	}
	switch {
	case e.Kind == "record" || e.Kind == "restore_point":
		what += fmt.Sprintf(", record at %s", e.CommitLSN)
	case e.Kind == "abort":
		what += fmt.Sprintf(", abort at %s", e.CommitLSN)
	default:
		what += fmt.Sprintf(", commit at %s", e.CommitLSN)
	}
	if !e.CommitTime.IsZero() {
		what += " " + incident.PGTime(e.CommitTime)
	} else if !e.AsOf.IsZero() {
		what += " (after " + incident.PGTime(e.AsOf) + ")"
	}
	what += fmt.Sprintf(", timeline %d", e.TLI)
	if e.Rows != 0 {
		what += fmt.Sprintf(", %d rows", e.Rows)
	}
	fmt.Fprintf(&sb, "# %s\n", what)
	lines := map[string]string{
		"lsn": fmt.Sprintf("recovery_target_lsn = '%s'", s.LSN),
	}
	if s.XID != 0 {
		lines["xid"] = fmt.Sprintf("recovery_target_xid = '%d'", s.XID)
	}
	if !s.Time.IsZero() && s.Name == "" {
		lines["time"] = fmt.Sprintf("recovery_target_time = '%s'", incident.PGTime(s.Time))
	}
	if s.Name != "" {
		lines["name"] = fmt.Sprintf("recovery_target_name = '%s'", strings.ReplaceAll(s.Name, "'", "''"))
	}
	main := lines[chosen]
	if main == "" {
		main = lines["lsn"]
		chosen = "lsn"
	}
	sb.WriteString(main + "\n")
	if chosen != "name" {
		fmt.Fprintf(&sb, "recovery_target_inclusive = %t\n", s.Inclusive)
	}
	fmt.Fprintf(&sb, "recovery_target_timeline = '%d'\n", s.TLI)
	if chosen != "name" {
		for _, k := range []string{"lsn", "xid", "time"} {
			if k != chosen && lines[k] != "" {
				fmt.Fprintf(&sb, "# or: %s\n", lines[k])
			}
		}
	}
	if p.Why != "" {
		fmt.Fprintf(&sb, "# chosen: %s\n", p.Why)
	}
	if n := len(p.Candidates); n > 1 {
		shown := min(n-1, maxOtherCandidates)
		fmt.Fprintf(&sb, "# other candidates (%d of %d; pick one with --xid):\n", shown, n-1)
		for _, c := range p.Candidates[1 : 1+shown] {
			fmt.Fprintf(&sb, "#   %s by xid %d, commit at %s", c.Kind, c.XID, c.CommitLSN)
			if !c.CommitTime.IsZero() {
				sb.WriteString(" " + incident.PGTime(c.CommitTime))
			}
			if c.Rows != 0 {
				fmt.Fprintf(&sb, ", %d rows", c.Rows)
			}
			if c.HasTableRows && c.TableRows > 0 {
				fmt.Fprintf(&sb, " (%.0f%% of ~%.0f)", 100*c.Share, c.TableRows)
			}
			sb.WriteString("\n")
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&sb, "# note: %s\n", n)
	}
	if cmd := RowsBackCommand(p, b); cmd != "" {
		fmt.Fprintf(&sb, "# the rows as they were, without a server: %s\n", cmd)
	}
	if cmd := RowsUndoCommand(p, b); cmd != "" {
		fmt.Fprintf(&sb, "# the SQL that undoes the transaction on the live database, without a server: %s\n", cmd)
	}
	if b != nil {
		if b.Tool != "" {
			what := b.Tool
			if b.BackupType != "" {
				what += " " + b.BackupType
			}
			fmt.Fprintf(&sb, "# backup %s (%s backup %s): start %s (timeline %d), checkpoint %s, stop %s\n", b.Path, what, b.Label, b.StartLSN, b.StartTLI, b.CheckpointLSN, b.StopLSN)
		} else {
			fmt.Fprintf(&sb, "# backup %s: start %s (timeline %d), checkpoint %s\n", b.Path, b.StartLSN, b.StartTLI, b.CheckpointLSN)
		}
	}
	if p.Reachable != nil {
		if *p.Reachable {
			sb.WriteString("# reachable: yes\n")
		} else {
			sb.WriteString("# reachable: NO\n")
			for _, r := range p.Reasons {
				fmt.Fprintf(&sb, "#   %s\n", r)
			}
		}
	}
	if p.FirstSegment != "" {
		var tls []string
		for _, t := range p.Timelines {
			tls = append(tls, strconv.Itoa(int(t)))
		}
		fmt.Fprintf(&sb, "# WAL needed: %s to %s (timeline %s)\n", p.FirstSegment, p.LastSegment, strings.Join(tls, ", "))
	}
	if len(p.Missing) > 0 {
		fmt.Fprintf(&sb, "# missing or damaged: %s\n", strings.Join(p.Missing, " "))
	}
	if p.Window.EarliestLSN != 0 {
		t := ""
		if !p.Window.EarliestTime.IsZero() {
			t = " (after " + incident.PGTime(p.Window.EarliestTime) + ")"
		}
		fmt.Fprintf(&sb, "# earliest: %s%s, %s\n", p.Window.EarliestLSN, t, p.Window.EarliestWhat)
	}
	for _, c := range p.Window.LatestCommit {
		fmt.Fprintf(&sb, "# latest commit on timeline %d: %s %s (xid %d)\n", c.TLI, c.LSN, incident.PGTime(c.Time), c.XID)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
