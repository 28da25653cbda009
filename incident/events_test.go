package incident

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/xlog"
)

// readEvents reads a set's archive with one reader into Events.
func readEvents(t *testing.T, dir string, cfg EventsConfig) []Event {
	t.Helper()
	ev := NewEvents(cfg)
	waltest.ReadSet(t, filepath.Join(dir, "archive"), ev.Add)
	return ev.Finish()
}

// TestEventsRewrite: over real PostgreSQL 15 WAL of VACUUM FULL t, TRUNCATE
// u, CLUSTER t and REINDEX TABLE t (fixtures/rewrite), every file a command
// gave a relation, as pg_class said after each command (relfilenodes.csv),
// is a rewrite or truncate event naming the file it replaced, with the
// kind of the command, all of one command in one transaction; and there is
// no other such event.
func TestEventsRewrite(t *testing.T) {
	dir, _ := waltest.FixtureSet(t, "rewrite")
	truth, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "rewrite", "relfilenodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{"start", "vacuum full t", "truncate u", "cluster t", "reindex t"}
	kind := map[string]EventKind{"vacuum full t": EventRewrite, "truncate u": EventTruncate, "cluster t": EventRewrite, "reindex t": EventRewrite}
	files := map[string]map[string]uint32{} // step -> relation -> file
	for _, l := range strings.Split(strings.TrimSpace(string(truth)), "\n")[1:] {
		f := strings.Split(l, ",")
		n, _ := strconv.ParseUint(f[2], 10, 32)
		if files[f[0]] == nil {
			files[f[0]] = map[string]uint32{}
		}
		files[f[0]][f[1]] = uint32(n)
	}
	cur := map[string]uint32{}
	for rel, n := range files["start"] {
		cur[rel] = n
	}
	evs := readEvents(t, dir, EventsConfig{})
	byNew := map[uint32]Event{}
	for _, e := range evs {
		if e.Kind == EventRewrite || e.Kind == EventTruncate {
			byNew[e.Rel.RelNumber] = e
		}
	}
	want := 0
	for _, step := range steps[1:] {
		xid := xlog.XID(0)
		for rel, n := range files[step] {
			if cur[rel] == n {
				continue
			}
			want++
			e, ok := byNew[n]
			switch {
			case !ok:
				t.Errorf("%s: no event for %s's new file %d", step, rel, n)
			case e.Replaced.RelNumber != cur[rel]:
				t.Errorf("%s: %s's new file %d replaces %d, the event says %d", step, rel, n, cur[rel], e.Replaced.RelNumber)
			case e.Kind != kind[step]:
				t.Errorf("%s: %s's new file %d: kind %s, want %s (%s)", step, rel, n, e.Kind, kind[step], e.Detail)
			case e.Outcome != OutcomeCommit || e.Time.IsZero() || e.FirstLSN >= e.LSN:
				t.Errorf("%s: %s: %+v", step, rel, e)
			case xid != 0 && e.XID != xid:
				t.Errorf("%s: %s in transaction %d, the others in %d", step, rel, e.XID, xid)
			}
			xid = e.XID
			cur[rel] = n
		}
		// the snapshot lists only the relations whose file changed since
		// the start: those not listed kept theirs
	}
	if len(byNew) != want {
		t.Errorf("%d rewrite and truncate events, %d files replaced", len(byNew), want)
	}
}

// TestEventsIncident: every fact of fixtures/incident/facts.json (the
// answers PostgreSQL 15 gave while the incident ran: xids from xmin/xmax,
// relfilenodes from pg_class, commit times from pg_xact_commit_timestamp,
// row counts from the statements, LSNs around each step) is an event with
// the same xid, relfilenode(s), commit time and rows, between the LSNs.
func TestEventsIncident(t *testing.T) {
	dir, ok := waltest.FixtureSet(t, "incident")
	if !ok {
		t.Skip("fixtures/incident not present")
	}
	raw, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "incident", "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts []waltest.IncidentFact
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, dir, EventsConfig{MinRows: 100})
	lsn := func(s string) xlog.LSN {
		l, err := xlog.ParseLSN(s)
		if err != nil {
			t.Fatalf("fact LSN %q: %v", s, err)
		}
		return l
	}
	find := func(f *waltest.IncidentFact, kind EventKind, match func(*Event) bool) *Event {
		lo, hi := lsn(f.LSNBefore), lsn(f.LSNAfter)
		for i := range evs {
			e := &evs[i]
			if e.Kind == kind && e.LSN >= lo && e.LSN <= hi && (match == nil || match(e)) {
				return e
			}
		}
		t.Errorf("fact %s (%s to %s): no %s event", f.Kind, f.LSNBefore, f.LSNAfter, kind)
		return nil
	}
	checkXact := func(f *waltest.IncidentFact, e *Event) {
		if e == nil {
			return
		}
		if f.XID != nil && uint32(e.XID) != *f.XID {
			t.Errorf("fact %s: xid %d, event %d", f.Kind, *f.XID, e.XID)
		}
		if f.CommitTime != nil {
			ct, err := time.Parse("2006-01-02T15:04:05.999999Z07:00", *f.CommitTime)
			if err != nil {
				t.Fatal(err)
			}
			if !e.Time.Equal(ct) {
				t.Errorf("fact %s: commit time %s, event %s", f.Kind, ct, e.Time)
			}
		}
		want := OutcomeCommit
		if f.Status == "aborted" {
			want = OutcomeAbort
		}
		if e.Outcome != want {
			t.Errorf("fact %s: %s, event %s", f.Kind, f.Status, e.Outcome)
		}
	}
	rel := func(n uint32) func(*Event) bool { return func(e *Event) bool { return e.Rel.RelNumber == n } }
	checked := 0
	for i := range facts {
		f := &facts[i]
		var extra map[string]any
		json.Unmarshal(f.Extra, &extra)
		checked++
		switch f.Kind {
		case "checkpoint":
			redo := lsn(extra["redo_lsn"].(string))
			find(f, EventCheckpoint, func(e *Event) bool { return e.Redo == redo && e.FirstLSN == redo })
		case "backup_start":
			// pg_backup_start returns the backup's start point, the redo
			// point of the checkpoint it waited for (whose record follows)
			ok := false
			for _, e := range evs {
				ok = ok || e.Kind == EventBackupStart && e.FirstLSN == lsn(f.LSNAfter) && e.LSN > e.FirstLSN
			}
			if !ok {
				t.Errorf("no backup_start from %s, the start pg_backup_start returned", f.LSNAfter)
			}
		case "backup_stop":
			lf := extra["labelfile"].(string)
			m := regexp.MustCompile(`START WAL LOCATION: (\S+)`).FindStringSubmatch(lf)
			c := regexp.MustCompile(`CHECKPOINT LOCATION: (\S+)`).FindStringSubmatch(lf)
			e := find(f, EventBackupEnd, func(e *Event) bool { return e.BackupStart == lsn(m[1]) })
			if e != nil {
				ok := false
				for _, s := range evs {
					ok = ok || s.Kind == EventBackupStart && s.LSN == lsn(c[1]) && s.FirstLSN == lsn(m[1])
				}
				if !ok {
					t.Errorf("no backup_start at the label file's checkpoint %s", c[1])
				}
			}
		case "restore_point":
			find(f, EventRestorePoint, func(e *Event) bool { return e.RestorePoint == extra["name"] })
		case "parameter_change":
			want := fmt.Sprintf("%s=%s", extra["name"], extra["setting"])
			find(f, EventParameterChange, func(e *Event) bool { return strings.Contains(e.Detail, want) })
		case "switch_wal":
			find(f, EventWALSwitch, nil)
		case "delete", "update":
			kind := EventDelete
			if f.Kind == "update" {
				kind = EventUpdate
			}
			e := find(f, kind, rel(*f.Relfilenode))
			checkXact(f, e)
			if e != nil && e.Rows != *f.Rows {
				t.Errorf("fact %s: %d rows, event %d", f.Kind, *f.Rows, e.Rows)
			}
		case "truncate", "vacuum_full":
			kind := EventTruncate
			if f.Kind == "vacuum_full" {
				kind = EventRewrite
			}
			e := find(f, kind, rel(*f.RelfilenodeNext))
			checkXact(f, e)
			if e != nil && e.Replaced.RelNumber != *f.Relfilenode {
				t.Errorf("fact %s: %d replaced %d, event says %d", f.Kind, *f.RelfilenodeNext, *f.Relfilenode, e.Replaced.RelNumber)
			}
			for j, r := range f.Related {
				e := find(f, kind, rel(f.RelatedAfter[j].Relfilenode))
				checkXact(f, e)
				if e != nil && e.Replaced.RelNumber != r.Relfilenode {
					t.Errorf("fact %s: %s's %d replaced %d, event says %d", f.Kind, r.Relname, f.RelatedAfter[j].Relfilenode, r.Relfilenode, e.Replaced.RelNumber)
				}
			}
		case "drop_table":
			if f.Status == "aborted" {
				// nothing was dropped: the WAL shows pg_class rows deleted
				// and rolled back, and the OIDs locked
				e := find(f, EventDrop, func(e *Event) bool { return e.Outcome == OutcomeAbort && e.Rows > 0 })
				checkXact(f, e)
				if e != nil && !strings.Contains(e.Detail, fmt.Sprint(*f.OID)) {
					t.Errorf("aborted drop: OID %d not in %q", *f.OID, e.Detail)
				}
				continue
			}
			checkXact(f, find(f, EventDrop, rel(*f.Relfilenode)))
			for _, r := range f.Related {
				checkXact(f, find(f, EventDrop, rel(r.Relfilenode)))
			}
		case "create_table":
			checkXact(f, find(f, EventCreate, rel(*f.Relfilenode)))
			for _, r := range f.Related {
				checkXact(f, find(f, EventCreate, rel(r.Relfilenode)))
			}
		case "drop_schema":
			checkXact(f, find(f, EventDropSchema, nil))
			checkXact(f, find(f, EventDrop, rel(*f.Relfilenode)))
			for _, r := range f.Related {
				checkXact(f, find(f, EventDrop, rel(r.Relfilenode)))
			}
		case "create_database", "drop_database":
			kind := EventCreateDatabase
			if f.Kind == "drop_database" {
				kind = EventDropDatabase
			}
			checkXact(f, find(f, kind, func(e *Event) bool { return e.Rel.DBOID == *f.DatabaseOID && e.Rel.RelNumber == 0 }))
		default:
			t.Errorf("fact kind %q not checked", f.Kind)
			checked--
		}
	}
	if checked < 15 {
		t.Errorf("only %d facts checked", checked)
	}
}

// refRecord is one line of pg_waldump's output.
type refRecord struct {
	rmgr, typ, desc string
	xid             uint32
	lsn             xlog.LSN
	rel             string // blkref #0's T/D/R
}

var refLine = regexp.MustCompile(`^rmgr: (\S+)\s+len \(rec/tot\):\s+\d+/\s*\d+, tx:\s+(\d+), lsn: (\S+), prev \S+, desc: (\S+) ?(.*)$`)
var refBlk = regexp.MustCompile(`blkref #0: rel (\d+/\d+/\d+)`)

// refRecords reads a set's pg_waldump outputs, every timeline, once per LSN.
func refRecords(t *testing.T, dir string) []refRecord {
	files, _ := filepath.Glob(filepath.Join(dir, "ref", "records-*.txt"))
	seen := map[xlog.LSN]bool{}
	var out []refRecord
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n") {
			m := refLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			l, _ := xlog.ParseLSN(m[3])
			if seen[l] {
				continue
			}
			seen[l] = true
			x, _ := strconv.ParseUint(m[2], 10, 32)
			r := refRecord{rmgr: m[1], xid: uint32(x), lsn: l, typ: m[4], desc: m[5]}
			if b := refBlk.FindStringSubmatch(m[5]); b != nil {
				r.rel = b[1]
			}
			out = append(out, r)
		}
	}
	return out
}

// TestEventsAgainstPgWaldump: on every fixture and corpus, the events agree
// with what PostgreSQL's own pg_waldump printed of the same WAL: every
// checkpoint (LSN and redo point), restore point (name), parameter change,
// BACKUP_END, SWITCH and database drop and creation is an event at its LSN;
// every relation file a commit or abort record lists as dropped is a drop
// event or, at a commit, the file a rewrite or truncation replaced; every
// transaction that deleted or updated at least 100 rows of one relation
// (with no subtransactions) is an event with that count; and the timeline
// switches are where the .history files say.
func TestEventsAgainstPgWaldump(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := testwal.Extract(t, set)
			evs := readEvents(t, dir, EventsConfig{MinRows: 100})
			at := map[xlog.LSN][]Event{}
			for _, e := range evs {
				at[e.LSN] = append(at[e.LSN], e)
			}
			has := func(l xlog.LSN, kind EventKind, match func(*Event) bool) bool {
				for i := range at[l] {
					if e := &at[l][i]; e.Kind == kind && (match == nil || match(e)) {
						return true
					}
				}
				return false
			}
			refs := refRecords(t, dir)
			counts := map[string]int{}
			rows := map[[2]string]uint64{} // (xid, kind/rel) -> rows
			ended := map[uint32]string{}   // xid -> its end's desc
			endLSN := map[uint32]xlog.LSN{}
			count := func(kind EventKind, l xlog.LSN, ok bool, what string) {
				counts[string(kind)]++
				if !ok {
					t.Errorf("%s at %s: no %s event", what, l, kind)
				}
			}
			for _, r := range refs {
				switch {
				case r.rmgr == "XLOG" && strings.HasPrefix(r.typ, "CHECKPOINT_") && r.typ != "CHECKPOINT_REDO":
					redo, _ := xlog.ParseLSN(strings.TrimSuffix(strings.Fields(r.desc)[1], ";"))
					count(EventCheckpoint, r.lsn, has(r.lsn, EventCheckpoint, func(e *Event) bool { return e.Redo == redo }), r.typ)
				case r.rmgr == "XLOG" && r.typ == "RESTORE_POINT":
					count(EventRestorePoint, r.lsn, has(r.lsn, EventRestorePoint, func(e *Event) bool { return e.RestorePoint == r.desc }), r.typ)
				case r.rmgr == "XLOG" && (r.typ == "PARAMETER_CHANGE" || r.typ == "FPW_CHANGE"):
					count(EventParameterChange, r.lsn, has(r.lsn, EventParameterChange, nil), r.typ)
				case r.rmgr == "XLOG" && r.typ == "BACKUP_END":
					count(EventBackupEnd, r.lsn, has(r.lsn, EventBackupEnd, nil), r.typ)
				case r.rmgr == "XLOG" && r.typ == "SWITCH":
					count(EventWALSwitch, r.lsn, has(r.lsn, EventWALSwitch, nil), r.typ)
				case r.rmgr == "Database":
					f := strings.Fields(r.desc)
					pair := strings.Split(f[len(f)-1], "/")
					db, _ := strconv.ParseUint(pair[len(pair)-1], 10, 32)
					kind := EventCreateDatabase
					if r.typ == "DROP" {
						kind = EventDropDatabase
					}
					l := endLSNOf(refs, r.xid)
					count(kind, l, has(l, kind, func(e *Event) bool { return e.Rel.DBOID == uint32(db) && uint32(e.XID) == r.xid }), r.typ+" "+r.desc)
				case r.rmgr == "Transaction" && (strings.HasPrefix(r.typ, "COMMIT") || strings.HasPrefix(r.typ, "ABORT")):
					ended[r.xid], endLSN[r.xid] = r.typ+" "+r.desc, r.lsn
					i := strings.Index(r.desc, "rels: ")
					if i < 0 {
						continue
					}
					list := r.desc[i+6:]
					if j := strings.Index(list, ";"); j >= 0 {
						list = list[:j]
					}
					for _, p := range strings.Fields(list) {
						n, _ := strconv.ParseUint(p[strings.LastIndex(p, "/")+1:], 10, 32)
						ok := has(r.lsn, EventDrop, func(e *Event) bool { return e.Rel.RelNumber == uint32(n) })
						if strings.HasPrefix(r.typ, "COMMIT") {
							ok = ok || has(r.lsn, EventRewrite, func(e *Event) bool { return e.Replaced.RelNumber == uint32(n) }) ||
								has(r.lsn, EventTruncate, func(e *Event) bool { return e.Replaced.RelNumber == uint32(n) })
						}
						count(EventDrop, r.lsn, ok, r.typ+" dropping "+p)
					}
				case r.rmgr == "Heap" && r.rel != "":
					switch strings.TrimSuffix(r.typ, "+INIT") {
					case "DELETE":
						rows[[2]string{fmt.Sprint(r.xid), "delete " + r.rel}]++
					case "UPDATE", "HOT_UPDATE":
						rows[[2]string{fmt.Sprint(r.xid), "update " + r.rel}]++
					}
				}
			}
			for k, n := range rows {
				x, _ := strconv.ParseUint(k[0], 10, 32)
				end, ok := ended[uint32(x)]
				if n < 100 || !ok || strings.Contains(end, "subxacts:") {
					continue
				}
				f := strings.Fields(k[1])
				kind := EventKind(f[0])
				rel := f[1]
				count(kind, endLSN[uint32(x)], has(endLSN[uint32(x)], kind, func(e *Event) bool {
					return e.Rows == n && uint32(e.XID) == uint32(x) &&
						fmt.Sprintf("%d/%d/%d", e.Rel.SpcOID, e.Rel.DBOID, e.Rel.RelNumber) == rel
				}), fmt.Sprintf("%d rows: %s by %s", n, k[1], k[0]))
			}
			// timeline switches: where the history files say
			hist, _ := filepath.Glob(filepath.Join(dir, "archive", "*.history"))
			for _, h := range hist {
				raw, _ := os.ReadFile(h)
				for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
					f := strings.Fields(l)
					if len(f) < 2 {
						continue
					}
					sw, _ := xlog.ParseLSN(f[1])
					count(EventTimelineSwitch, sw, has(sw, EventTimelineSwitch, nil), "switch of "+filepath.Base(h))
				}
			}
			// and no event the references do not show, of these kinds
			for _, k := range []EventKind{EventCheckpoint, EventRestorePoint, EventParameterChange, EventBackupEnd, EventWALSwitch, EventCreateDatabase, EventDropDatabase, EventTimelineSwitch} {
				n := 0
				for _, e := range evs {
					if e.Kind == k {
						n++
					}
				}
				if n != counts[string(k)] && k != EventCreateDatabase && k != EventDropDatabase {
					t.Errorf("%d %s events, %d in the references", n, k, counts[string(k)])
				}
			}
			t.Logf("checked: %v", counts)
		})
	}
}

// endLSNOf is the LSN of the end record of transaction xid in refs.
func endLSNOf(refs []refRecord, xid uint32) xlog.LSN {
	for _, r := range refs {
		if r.rmgr == "Transaction" && r.xid == xid && (strings.HasPrefix(r.typ, "COMMIT") || strings.HasPrefix(r.typ, "ABORT")) {
			return r.lsn
		}
	}
	return 0
}
