package incident

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// Point-in-time recovery: where recovery must stop to undo an event, and
// whether a base backup and the archive can get there.
//
// PostgreSQL's semantics (src/backend/access/transam/xlogrecovery.c,
// recoveryStopsBefore), with recovery_target_inclusive = false:
//   - recovery_target_lsn: recovery stops before the first record whose
//     start (ReadRecPtr) is at or after the target LSN;
//   - recovery_target_xid: before the commit or abort record of that
//     (top-level) xid;
//   - recovery_target_time: before the first commit or abort record whose
//     time is at or after the target time;
//   - recovery_target_name: after the restore point record of that name
//     (recoveryStopsAfter; inclusive does not apply).
// Stopping before the backup is consistent (the end of its BACKUP_END
// record) is an error ("requested recovery stop point is before consistent
// recovery point"), and so is reaching the end of WAL without the target
// (PostgreSQL 13 and later).

// PITRKinds are the event kinds `walscope pitr --event` takes.
var PITRKinds = []EventKind{EventDrop, EventTruncate, EventRewrite, EventDelete, EventUpdate}

// XactEnd is a commit or abort record.
type XactEnd struct {
	LSN    xlog.LSN
	TLI    xlog.TimeLineID
	XID    xlog.XID // the top-level xid (the prepared transaction's for *_PREPARED)
	Time   time.Time
	Commit bool
}

// BackupEndRecord is an XLOG BACKUP_END record: the backup that started at
// Start is consistent once it is replayed, at EndLSN.
type BackupEndRecord struct {
	LSN, EndLSN, Start xlog.LSN
	TLI                xlog.TimeLineID
}

// RecordRef is a record: where it starts and ends, its timeline.
type RecordRef struct {
	LSN, EndLSN xlog.LSN
	TLI         xlog.TimeLineID
	Segment     string
}

// PITRScanConfig configures ScanPITR.
type PITRScanConfig struct {
	Events    EventsConfig
	BlockSize int // 0: 8192
	Workers   int // 0: GOMAXPROCS
	SpanBytes int // 0: stream.DefaultSpanBytes
	// TargetLSN, when set, makes the scan note the first record starting
	// at or after it (AtTarget): where a recovery_target_lsn stops.
	TargetLSN xlog.LSN
	Progress  func(bytes int64)
}

// PITRScan is what one reading of the WAL found for pitr: its events, every
// commit and abort, the backups' ends, the relation files touched, the
// problems met (the reading goes on after damage and missing segments, as
// Verify does).
type PITRScan struct {
	Events     *Events
	List       []Event // Events.Finish()
	Ends       []XactEnd
	BackupEnds []BackupEndRecord
	Touched    map[decode.RelFileLocator]bool
	Problems   []verify.Problem
	First      RecordRef // the first record read
	Last       RecordRef // the last record read
	Records    uint64
	SegSize    uint32
	AtTarget   *RecordRef
	// Segments are the files of the source, by segment file name
	// (partial files excluded).
	Segments map[string]bool
}

// FirstTime and LastTime are the first and last commit or abort times read.
func (s *PITRScan) FirstTime() time.Time {
	if len(s.Ends) == 0 {
		return time.Time{}
	}
	return s.Ends[0].Time
}

// LastTime is the last commit or abort time read.
func (s *PITRScan) LastTime() time.Time {
	if len(s.Ends) == 0 {
		return time.Time{}
	}
	return s.Ends[len(s.Ends)-1].Time
}

type pitrPart struct {
	ev       *Events
	ends     []XactEnd
	backups  []BackupEndRecord
	touched  map[decode.RelFileLocator]bool
	problems []verify.Problem
	pending  []verify.Problem // end-like problems after the span's last record
	records  uint64
	first    RecordRef
	last     RecordRef
	atTarget *RecordRef
	err      error
}

// ScanPITR reads the stream of src once, in parallel spans, resynchronising
// after damage as Verify does.
func ScanPITR(src xlog.Source, opts xlog.Options, cfg PITRScanConfig) (*PITRScan, error) {
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 8192
	}
	st, err := stream.Open(src, stream.Config{Reader: opts, Workers: cfg.Workers, SpanBytes: cfg.SpanBytes, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	root := NewEvents(cfg.Events)
	scan := &PITRScan{Events: root, Touched: map[decode.RelFileLocator]bool{}, SegSize: st.SegmentSize(), Segments: map[string]bool{}}
	for _, f := range src.Segments() {
		if !f.Partial {
			scan.Segments[f.Name.String()] = true
		}
	}
	var carry []verify.Problem
	seen := map[string]bool{}
	add := func(p verify.Problem) {
		key := string(p.Class) + " " + p.LSNStr
		if !seen[key] {
			seen[key] = true
			scan.Problems = append(scan.Problems, p)
		}
	}
	var setupErr error
	stream.RunSpans(st, func(info stream.SpanInfo, _ *atomic.Bool) *pitrPart {
		o := opts
		o.Start, o.StopAt, o.Continues = info.Span.Start, info.Span.Stop, info.Index > 0
		return scanPITRSpan(src, o, cfg, root.NewPart())
	}, func(_ int, p *pitrPart) bool {
		if p.err != nil {
			setupErr = p.err
			return false
		}
		if p.records > 0 {
			for _, c := range carry {
				if c.Resume == "" {
					c.Resume = p.first.LSN.String()
				}
				add(c)
			}
			carry = carry[:0]
			if scan.Records == 0 {
				scan.First = p.first
			}
			scan.Last = p.last
		}
		for _, q := range p.problems {
			add(q)
		}
		carry = append(carry, p.pending...)
		scan.Records += p.records
		root.Merge(p.ev)
		scan.Ends = append(scan.Ends, p.ends...)
		scan.BackupEnds = append(scan.BackupEnds, p.backups...)
		for r := range p.touched {
			scan.Touched[r] = true
		}
		if p.atTarget != nil && scan.AtTarget == nil {
			scan.AtTarget = p.atTarget
		}
		return true
	})
	if setupErr != nil {
		return nil, setupErr
	}
	// a missing segment or torn record after the last record read is the
	// end of the WAL, not damage
	sort.SliceStable(scan.Problems, func(i, j int) bool { return scan.Problems[i].LSN < scan.Problems[j].LSN })
	scan.List = root.Finish()
	return scan, nil
}

func scanPITRSpan(src xlog.Source, opts xlog.Options, cfg PITRScanConfig, ev *Events) *pitrPart {
	p := &pitrPart{ev: ev, touched: map[decode.RelFileLocator]bool{}}
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		p.err = err
		return p
	}
	defer r.Close()
	dec := decode.NewDecoder(cfg.BlockSize)
	addErr := func(err error) {
		c := verify.Classify(err)
		q := verify.ProblemOf(err, c)
		if errors.Is(err, xlog.ErrMagic) && q.Offset%int64(r.SegmentSize()) != 0 {
			q.Class = verify.ClassPageHeader
		}
		if verify.EndLike(q.Class) {
			p.pending = append(p.pending, q)
		} else {
			p.problems = append(p.problems, q)
		}
	}
	var lastRel decode.RelFileLocator
	var reported xlog.LSN
	for {
		rec, err := r.Next()
		if err == nil {
			if len(p.pending) > 0 {
				for i := range p.pending {
					if p.pending[i].Resume == "" {
						p.pending[i].Resume = rec.LSN.String()
					}
				}
				p.problems = append(p.problems, p.pending...)
				p.pending = p.pending[:0]
			}
			ref := RecordRef{LSN: rec.LSN, EndLSN: rec.EndLSN, TLI: rec.TLI, Segment: rec.Segment}
			if p.records == 0 {
				p.first = ref
			}
			p.last = ref
			p.records++
			if cfg.Progress != nil {
				if reported == 0 {
					reported = rec.LSN
				}
				if rec.EndLSN-reported > 1<<20 {
					cfg.Progress(int64(rec.EndLSN - reported))
					reported = rec.EndLSN
				}
			}
			if cfg.TargetLSN != 0 && p.atTarget == nil && rec.LSN >= cfg.TargetLSN {
				t := ref
				p.atTarget = &t
			}
			d, derr := dec.Decode(rec)
			if derr != nil {
				if de, ok := errors.AsType[*decode.Error](derr); ok {
					p.problems = append(p.problems, verify.Problem{Class: verify.ClassRecordHeader, File: rec.Segment,
						Offset: int64(uint64(rec.LSN) % uint64(rec.SegSize)), LSN: rec.LSN, LSNStr: rec.LSN.String(), Message: de.Msg})
				}
				continue
			}
			p.ev.Add(d)
			for i := range d.Blocks {
				if rl := d.Blocks[i].Rel; rl != lastRel {
					lastRel = rl
					p.touched[rl] = true
				}
			}
			if end, ok := rmgr.XactEnd(d); ok {
				p.ends = append(p.ends, XactEnd{LSN: rec.LSN, TLI: rec.TLI, XID: end.XID, Time: end.Time, Commit: end.Commit})
			} else if start, ok := rmgr.BackupEnd(d); ok {
				p.backups = append(p.backups, BackupEndRecord{LSN: rec.LSN, EndLSN: rec.EndLSN, TLI: rec.TLI, Start: start})
			}
			continue
		}
		if err == io.EOF {
			return p
		}
		addErr(err)
		for {
			_, rerr := r.Resync()
			if rerr == nil {
				break
			}
			if rerr == io.EOF {
				return p
			}
			addErr(rerr)
		}
	}
}

// RelSpec names the relation pitr looks for: a name (schema.name or name),
// a T/D/R locator or a relfilenode; DBOID, when set, restricts it to a
// database.
type RelSpec struct {
	Name      string
	Loc       *decode.RelFileLocator
	RelNumber uint32
	DBOID     uint32
}

func (s RelSpec) String() string {
	switch {
	case s.Loc != nil:
		return fmt.Sprintf("%d/%d/%d", s.Loc.SpcOID, s.Loc.DBOID, s.Loc.RelNumber)
	case s.RelNumber != 0:
		return fmt.Sprintf("relfilenode %d", s.RelNumber)
	}
	return s.Name
}

// nameMatches reports whether a relation's name (schema.name) is the one
// asked (schema.name, or name in any schema).
func nameMatches(name, want string) bool {
	if name == "" {
		return false
	}
	if name == want {
		return true
	}
	_, short, ok := strings.Cut(name, ".")
	return ok && short == want
}

// fileMatches reports whether file r is the one the spec gives by number.
func (s RelSpec) fileMatches(r decode.RelFileLocator) bool {
	if s.DBOID != 0 && r.DBOID != s.DBOID {
		return false
	}
	switch {
	case s.Loc != nil:
		return r == *s.Loc
	case s.RelNumber != 0:
		return r.RelNumber == s.RelNumber
	}
	return false
}

// Target is a recovery target given by hand.
type Target struct {
	Kind string // "lsn", "xid", "time", "name"
	LSN  xlog.LSN
	XID  xlog.XID
	Time time.Time
	Name string
}

// PITRQuery is what pitr is asked.
type PITRQuery struct {
	// Rel and Kinds: the first event of these kinds (all of PITRKinds if
	// none) of that relation, named through Namer.
	Rel   *RelSpec
	Kinds []EventKind
	Namer names.RelNamer
	// Target: a target given by hand, instead of Rel.
	Target *Target
	// Backup, when given, is checked: can recovery from it get there?
	Backup *backup.BackupLabel
	// Histories returns the timeline history of a timeline (nil: none).
	Histories func(xlog.TimeLineID) []xlog.HistoryEntry
	// RowCounts, when set, tells how many rows a relation file had before
	// an LSN (pg_class's reltuples as the WAL showed it: names.WALNames'
	// RowCountBefore), for the share of the table a delete or update
	// touched.
	RowCounts func(r decode.RelFileLocator, before xlog.LSN) (names.RowCount, bool)
	// XID, when set with Rel, chooses the event of that transaction
	// among the relation's candidates.
	XID xlog.XID
}

// PITRCandidate is one committed event of the relation asked for, ranked:
// the plan's Event is the first of them.
type PITRCandidate struct {
	Kind       string
	XID        xlog.XID
	CommitLSN  xlog.LSN
	CommitTime time.Time
	Rows       uint64 // rows deleted or updated (0 for drops, truncates, rewrites)
	// TableRows is pg_class's reltuples before the event, where the WAL
	// showed it (HasTableRows); Share is Rows over it.
	TableRows    float64
	HasTableRows bool
	Share        float64
}

// PITRError is a question pitr cannot answer: Code 1 when nothing in the WAL
// read matches, 2 when the question is ambiguous (Candidates lists the
// relations it matches).
type PITRError struct {
	Code       int
	Msg        string
	Candidates []string
	// Input: Code 2 for a file walscope may not read (unreadable-file),
	// not for a mistake in the arguments.
	Input bool
}

func (e *PITRError) Error() string { return e.Msg }

// PITREvent is what recovery must stop before (or, for a restore point,
// after).
type PITREvent struct {
	Kind        string // an EventKind, or "commit", "abort", "record", "restore_point" for a target given by hand
	Relation    string
	Rel         decode.RelFileLocator
	HasRel      bool
	XID         xlog.XID
	LSN         xlog.LSN // the event's first record
	CommitLSN   xlog.LSN // the record recovery stops before: the transaction's commit (or abort) record
	CommitTime  time.Time
	AsOf        time.Time // for records without a time: the last commit or abort time before
	TLI         xlog.TimeLineID
	Rows        uint64
	Detail      string
	RestoreName string
}

// PITRSettings are the recovery settings.
type PITRSettings struct {
	LSN       xlog.LSN
	XID       xlog.XID // 0: none applies
	Time      time.Time
	Name      string // a restore point (hand targets only)
	Inclusive bool
	TLI       xlog.TimeLineID
}

// PITRWindow is how far recovery can go.
type PITRWindow struct {
	EarliestLSN  xlog.LSN
	EarliestTime time.Time // the last commit or abort time at or before EarliestLSN
	// EarliestWhat says what it is: the backup's consistent point, or the
	// first record read (no backup given).
	EarliestWhat string
	LatestCommit []PITRCommit // per timeline, the last commit read
}

// PITRCommit is a commit record.
type PITRCommit struct {
	TLI  xlog.TimeLineID
	LSN  xlog.LSN
	Time time.Time
	XID  xlog.XID
}

// PITRPlan is pitr's answer.
type PITRPlan struct {
	Event    PITREvent
	Settings PITRSettings
	// Reachable: nil without a backup; else whether recovery from the
	// backup with the archive gets to the target; Reasons say why not.
	Reachable *bool
	Reasons   []string
	Missing   []string // segments needed and missing or damaged
	// WAL needed: from the backup's start segment (or the first read) to
	// the segment holding the stop record.
	FirstSegment, LastSegment string
	Timelines                 []xlog.TimeLineID
	Window                    PITRWindow
	// Notes warn about the alternatives (a time target that would stop
	// elsewhere, an xid target that does not apply).
	Notes []string
	// Searched describes the WAL read.
	Searched string
	// Candidates are the committed events of the relation that matched,
	// best first (Candidates[0] is Event), and Why says why the first
	// was chosen; both empty for a target given by hand.
	Candidates []PITRCandidate
	Why        string
}

// PGTime formats t as PostgreSQL accepts it in recovery_target_time, in UTC
// with the zone: 2026-12-01 15:51:45.058104+00.
func PGTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000") + "+00"
}

// Searched describes the WAL a scan read: its LSN and time range.
func (s *PITRScan) Searched() string {
	if s.Records == 0 {
		return "no records read"
	}
	out := fmt.Sprintf("WAL %s to %s", s.First.LSN, s.Last.EndLSN)
	if ft, lt := s.times(); !ft.IsZero() {
		out += fmt.Sprintf(", commits %s to %s", PGTime(ft), PGTime(lt))
	}
	return out
}

// LastTime gives both ends of the commit times read.
func (s *PITRScan) times() (time.Time, time.Time) { return s.FirstTime(), s.LastTime() }

// PlanPITR answers q from what scan read.
func PlanPITR(scan *PITRScan, q PITRQuery) (*PITRPlan, error) {
	plan := &PITRPlan{Searched: scan.Searched()}
	var err error
	if q.Target != nil {
		err = plan.handTarget(scan, q.Target)
	} else if q.Rel != nil {
		err = plan.findEvent(scan, q)
	} else {
		return nil, errors.New("pitr: no relation and no target")
	}
	if err != nil {
		return nil, err
	}
	plan.window(scan, q)
	if q.Backup != nil {
		plan.checkBackup(scan, q)
	} else {
		plan.neededNoBackup(scan, q)
	}
	return plan, nil
}

// asOf is the last commit or abort time at or before lsn.
func (s *PITRScan) asOf(lsn xlog.LSN) time.Time {
	i := sort.Search(len(s.Ends), func(i int) bool { return s.Ends[i].LSN > lsn })
	if i == 0 {
		return time.Time{}
	}
	return s.Ends[i-1].Time
}

// timeStop is where recovery_target_time t stops, with inclusive false: the
// first commit or abort at or after from whose time is at or after t.
func (s *PITRScan) timeStop(t time.Time, from xlog.LSN) (XactEnd, bool) {
	for _, e := range s.Ends {
		if e.LSN >= from && !e.Time.Before(t) {
			return e, true
		}
	}
	return XactEnd{}, false
}

func (p *PITRPlan) findEvent(scan *PITRScan, q PITRQuery) error {
	kinds := q.Kinds
	if len(kinds) == 0 {
		kinds = PITRKinds
	}
	want := map[EventKind]bool{}
	var kindNames []string
	for _, k := range kinds {
		want[k] = true
		kindNames = append(kindNames, string(k))
	}
	spec := *q.Rel
	name := func(ev *Event) string { return scan.Events.EventName(q.Namer, ev) }
	// the chain of files of an event's relation: its file, the one it
	// replaced, and back
	files := func(ev *Event) []decode.RelFileLocator {
		out := []decode.RelFileLocator{ev.Rel}
		r := ev.Rel
		if ev.Replaced.RelNumber != 0 {
			out = append(out, ev.Replaced)
			r = ev.Replaced
		}
		for i := 0; i < 64; i++ {
			o, ok := scan.Events.Renamed()[r]
			if !ok {
				break
			}
			out = append(out, o)
			r = o
		}
		return out
	}
	matches := func(ev *Event) bool {
		if !ev.HasRel || ev.Rel.RelNumber == 0 {
			return false
		}
		if spec.Name != "" {
			if spec.DBOID != 0 && ev.Rel.DBOID != spec.DBOID {
				return false
			}
			return nameMatches(name(ev), spec.Name)
		}
		for _, f := range files(ev) {
			if spec.fileMatches(f) {
				return true
			}
		}
		return false
	}
	// a name may match several relations (schemas, databases)
	if spec.Name != "" {
		cands := map[string]bool{}
		for r := range scan.Touched {
			if spec.DBOID != 0 && r.DBOID != spec.DBOID {
				continue
			}
			if n := nameOf(q.Namer, r); nameMatches(n, spec.Name) {
				cands[fmt.Sprintf("%s (database %d)", n, r.DBOID)] = true
			}
		}
		for i := range scan.List {
			ev := &scan.List[i]
			if matches(ev) {
				cands[fmt.Sprintf("%s (database %d)", name(ev), ev.Rel.DBOID)] = true
			}
		}
		if len(cands) > 1 {
			var list []string
			for c := range cands {
				list = append(list, c)
			}
			sort.Strings(list)
			return &PITRError{Code: 2, Candidates: list,
				Msg: fmt.Sprintf("relation %q matches %d relations: %s (give schema.name, --database OID or T/D/R)", spec.Name, len(list), strings.Join(list, ", "))}
		}
	}
	touched := false
	for r := range scan.Touched {
		if spec.Name != "" {
			if (spec.DBOID == 0 || r.DBOID == spec.DBOID) && nameMatches(nameOf(q.Namer, r), spec.Name) {
				touched = true
				break
			}
		} else if spec.fileMatches(r) {
			touched = true
			break
		}
	}
	skipped := 0
	var cands []*Event
	for i := range scan.List {
		ev := &scan.List[i]
		if !want[ev.Kind] || !matches(ev) {
			continue
		}
		touched = true
		if q.XID != 0 && ev.XID != q.XID {
			continue
		}
		if ev.Outcome != OutcomeCommit {
			// an aborted one changed nothing; smgr TRUNCATE (VACUUM) and
			// transactions whose end is not in the WAL have no commit
			skipped++
			continue
		}
		cands = append(cands, ev)
	}
	if len(cands) > 0 {
		ev := p.rankCandidates(cands, q)
		p.Event = PITREvent{Kind: string(ev.Kind), Relation: name(ev), Rel: ev.Rel, HasRel: true, XID: ev.XID,
			LSN: ev.FirstLSN, CommitLSN: ev.LSN, CommitTime: ev.Time, AsOf: ev.AsOf, TLI: ev.TLI, Rows: ev.Rows, Detail: ev.Detail}
		p.Settings = PITRSettings{LSN: ev.LSN, XID: ev.XID, Time: ev.Time, TLI: ev.TLI}
		// recovery_target_time stops at the first commit or abort whose
		// time is at or after it: commit times are not in WAL order
		if e, ok := scan.timeStop(ev.Time, 0); ok && e.LSN < ev.LSN {
			p.Notes = append(p.Notes, fmt.Sprintf("recovery_target_time would stop earlier, before the %s of xid %d at %s (time %s): commit times are not in WAL order",
				endWord(e.Commit), e.XID, e.LSN, PGTime(e.Time)))
		}
		return nil
	}
	what := strings.Join(kindNames, "/")
	unread, code := scan.unreadNote()
	if !touched {
		return &PITRError{Code: code, Input: code == 2, Msg: fmt.Sprintf("relation %s: the WAL read never touches it (searched %s)%s", spec, p.Searched, unread)}
	}
	msg := fmt.Sprintf("no committed %s event of relation %s (searched %s", what, spec, p.Searched)
	if q.XID != 0 {
		msg = fmt.Sprintf("no committed %s event of relation %s by xid %d (searched %s", what, spec, q.XID, p.Searched)
	}
	if skipped > 0 {
		msg += fmt.Sprintf("; %d aborted or uncommitted one(s) skipped", skipped)
	}
	return &PITRError{Code: code, Input: code == 2, Msg: msg + ")" + unread}
}

// unreadNote says, where no event was found, that the reading met problems
// (damage, a missing or unreadable file): the event may be in the WAL that
// was not read, so "no event" is no answer (it was said with nothing about
// them). It returns the exit code too: 2 for a file walscope may not read,
// as every command gives it, else 1.
func (scan *PITRScan) unreadNote() (string, int) {
	if len(scan.Problems) == 0 {
		return "", 1
	}
	code := 1
	for _, pr := range scan.Problems {
		if pr.Class == verify.ClassUnreadable {
			code = 2
		}
	}
	pr := scan.Problems[0]
	return fmt.Sprintf("; but the reading met %d problem(s), so the event may be in WAL not read; the first: %s at %s in %s: %s",
		len(scan.Problems), pr.Class, pr.LSNStr, pr.File, pr.Message), code
}

func nameOf(n names.RelNamer, r decode.RelFileLocator) string {
	if n == nil {
		return ""
	}
	return n.Name(r)
}

func endWord(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

func (p *PITRPlan) handTarget(scan *PITRScan, t *Target) error {
	switch t.Kind {
	case "lsn":
		p.Settings = PITRSettings{LSN: t.LSN}
		if scan.AtTarget == nil {
			return &PITRError{Code: 1, Msg: fmt.Sprintf("no record at or after %s in the WAL read (searched %s)", t.LSN, p.Searched)}
		}
		a := scan.AtTarget
		p.Event = PITREvent{Kind: "record", LSN: a.LSN, CommitLSN: a.LSN, AsOf: scan.asOf(a.LSN), TLI: a.TLI,
			Detail: "the first record at or after the target LSN"}
		p.Settings.TLI = a.TLI
		return nil
	case "xid":
		for _, e := range scan.Ends {
			if e.XID == t.XID {
				p.Event = PITREvent{Kind: endWord(e.Commit), XID: e.XID, LSN: e.LSN, CommitLSN: e.LSN, CommitTime: e.Time, AsOf: e.Time, TLI: e.TLI,
					Detail: "the " + endWord(e.Commit) + " record of the target xid"}
				p.Settings = PITRSettings{LSN: e.LSN, XID: e.XID, Time: e.Time, TLI: e.TLI}
				return nil
			}
		}
		return &PITRError{Code: 1, Msg: fmt.Sprintf("no commit or abort of xid %d in the WAL read (searched %s)", t.XID, p.Searched)}
	case "time":
		e, ok := scan.timeStop(t.Time, 0)
		if !ok {
			return &PITRError{Code: 1, Msg: fmt.Sprintf("no commit or abort at or after %s in the WAL read (searched %s)", PGTime(t.Time), p.Searched)}
		}
		p.Event = PITREvent{Kind: endWord(e.Commit), XID: e.XID, LSN: e.LSN, CommitLSN: e.LSN, CommitTime: e.Time, AsOf: e.Time, TLI: e.TLI,
			Detail: "the first commit or abort at or after the target time"}
		p.Settings = PITRSettings{LSN: e.LSN, XID: e.XID, Time: t.Time, TLI: e.TLI}
		return nil
	case "name":
		for i := range scan.List {
			ev := &scan.List[i]
			if ev.Kind == EventRestorePoint && ev.RestorePoint == t.Name {
				// recovery stops after the restore point record: the
				// record after it is the first not replayed
				p.Event = PITREvent{Kind: "restore_point", LSN: ev.LSN, CommitLSN: ev.LSN, CommitTime: ev.Time, AsOf: ev.Time, TLI: ev.TLI,
					RestoreName: t.Name, Detail: ev.Detail}
				p.Settings = PITRSettings{LSN: ev.LSN, Name: t.Name, Time: ev.Time, TLI: ev.TLI, Inclusive: true}
				return nil
			}
		}
		return &PITRError{Code: 1, Msg: fmt.Sprintf("no restore point %s in the WAL read (searched %s)", quoteGID(t.Name), p.Searched)}
	}
	return fmt.Errorf("pitr: unknown target kind %q", t.Kind)
}

// segName is the file name of the segment holding lsn on timeline tli.
func segName(tli xlog.TimeLineID, segno uint64, segSize uint32) string {
	per := uint64(0x100000000) / uint64(segSize)
	return fmt.Sprintf("%08X%08X%08X", uint32(tli), uint32(segno/per), uint32(segno%per))
}

// timelineOf is the timeline recovery to target reads segment segno from:
// the newest timeline of the plan that began at or before the segment
// (XLogFileReadAnyTLI).
func timelineOf(plan []xlog.Timeline, segno uint64, segSize uint32) xlog.TimeLineID {
	for i := len(plan) - 1; i >= 0; i-- {
		if uint64(plan[i].Begin)/uint64(segSize) <= segno {
			return plan[i].TLI
		}
	}
	return plan[0].TLI
}

func (p *PITRPlan) timelinePlan(q PITRQuery) []xlog.Timeline {
	var hist []xlog.HistoryEntry
	if q.Histories != nil {
		hist = q.Histories(p.Settings.TLI)
	}
	return xlog.TimelinePlan(p.Settings.TLI, hist)
}

// stopLSN is the record recovery stops before (or, for a restore point,
// after: the record must be read).
func (p *PITRPlan) stopLSN() xlog.LSN { return p.Event.CommitLSN }

func (p *PITRPlan) needed(scan *PITRScan, q PITRQuery, from xlog.LSN) {
	plan := p.timelinePlan(q)
	ss := scan.SegSize
	if ss == 0 {
		return
	}
	first, last := uint64(from)/uint64(ss), uint64(p.stopLSN())/uint64(ss)
	tls := map[xlog.TimeLineID]bool{}
	for seg := first; seg <= last; seg++ {
		tli := timelineOf(plan, seg, ss)
		name := segName(tli, seg, ss)
		if seg == first {
			p.FirstSegment = name
		}
		if seg == last {
			p.LastSegment = name
		}
		if !tls[tli] {
			tls[tli] = true
			p.Timelines = append(p.Timelines, tli)
		}
		if !scan.Segments[name] {
			p.addMissing(name)
		}
	}
	for _, pr := range scan.Problems {
		if pr.LSN >= xlog.LSN(first*uint64(ss)) && pr.LSN <= p.stopLSN() && pr.File != "" {
			p.addMissing(pr.File)
			p.Reasons = append(p.Reasons, fmt.Sprintf("%s at %s in %s: %s", pr.Class, pr.LSNStr, pr.File, pr.Message))
		}
	}
	sort.Strings(p.Missing)
}

func (p *PITRPlan) addMissing(name string) {
	for _, m := range p.Missing {
		if m == name {
			return
		}
	}
	p.Missing = append(p.Missing, name)
}

func (p *PITRPlan) neededNoBackup(scan *PITRScan, q PITRQuery) {
	from := scan.First.LSN
	if from == 0 || from > p.stopLSN() {
		from = p.stopLSN()
	}
	p.needed(scan, q, from)
}

func (p *PITRPlan) window(scan *PITRScan, q PITRQuery) {
	p.Window.EarliestLSN, p.Window.EarliestWhat = scan.First.LSN, "the first record read (no --backup given)"
	p.Window.EarliestTime = scan.asOf(scan.First.LSN)
	last := map[xlog.TimeLineID]PITRCommit{}
	for _, e := range scan.Ends {
		if e.Commit {
			last[e.TLI] = PITRCommit{TLI: e.TLI, LSN: e.LSN, Time: e.Time, XID: e.XID}
		}
	}
	for _, c := range last {
		p.Window.LatestCommit = append(p.Window.LatestCommit, c)
	}
	sort.Slice(p.Window.LatestCommit, func(i, j int) bool { return p.Window.LatestCommit[i].TLI < p.Window.LatestCommit[j].TLI })
}

// checkBackup decides whether recovery from the backup gets to the target.
func (p *PITRPlan) checkBackup(scan *PITRScan, q PITRQuery) {
	b := q.Backup
	no := false
	p.Reachable = &no
	// the consistent point: the end of the BACKUP_END record naming the
	// backup's start (STOP WAL LOCATION in a .backup file)
	consistent := b.StopLSN
	var endRec *BackupEndRecord
	for i := range scan.BackupEnds {
		if scan.BackupEnds[i].Start == b.StartLSN {
			endRec = &scan.BackupEnds[i]
			break
		}
	}
	if (consistent == 0 || b.StopUpperBound) && endRec != nil {
		consistent = endRec.EndLSN
	}
	if consistent != 0 {
		p.Window.EarliestLSN, p.Window.EarliestWhat = consistent, "the backup's consistent point (the end of its BACKUP_END record)"
		p.Window.EarliestTime = scan.asOf(consistent)
	} else {
		p.Window.EarliestLSN, p.Window.EarliestWhat = 0, "unknown: no BACKUP_END record of the backup in the WAL read"
		p.Window.EarliestTime = time.Time{}
	}
	p.needed(scan, q, b.StartLSN)
	stop := p.stopLSN()
	plan := p.timelinePlan(q)
	if tl := timelineOf(plan, uint64(b.StartLSN)/uint64(max(scan.SegSize, 1)), max(scan.SegSize, 1)); tl != b.StartTLI {
		p.Reasons = append(p.Reasons, fmt.Sprintf("the backup started on timeline %d at %s, which is not in the history of the target's timeline %d (it reads timeline %d there)",
			b.StartTLI, b.StartLSN, p.Settings.TLI, tl))
	}
	switch {
	case stop < b.StartLSN:
		p.Reasons = append(p.Reasons, fmt.Sprintf("the target (%s) is before the backup's start %s", stop, b.StartLSN))
	case consistent == 0:
		if strings.EqualFold(b.From, "standby") {
			p.Reasons = append(p.Reasons, "a backup taken from a standby has no BACKUP_END record: its consistent point (pg_control's minimum recovery point) is unknown here")
		} else {
			p.Reasons = append(p.Reasons, fmt.Sprintf("no BACKUP_END record for the backup started at %s in the WAL read: it never becomes consistent", b.StartLSN))
		}
	case stop < consistent:
		p.Reasons = append(p.Reasons, fmt.Sprintf("the target (recovery stops at %s) is before the backup's consistent point %s: PostgreSQL refuses (\"requested recovery stop point is before consistent recovery point\")",
			stop, consistent))
	}
	if scan.Records > 0 && stop > scan.Last.LSN {
		p.Reasons = append(p.Reasons, fmt.Sprintf("the target %s is beyond the last record read %s", stop, scan.Last.LSN))
	}
	if len(p.Missing) > 0 {
		p.Reasons = append(p.Reasons, fmt.Sprintf("segment(s) needed and missing or damaged: %s", strings.Join(p.Missing, ", ")))
	}
	ok := len(p.Reasons) == 0
	p.Reachable = &ok
}

// wholeRelation reports whether an event kind reaches every row of its
// relation (a drop, a truncate, a rewrite), whatever the row counts say.
func wholeRelation(k EventKind) bool {
	return k == EventDrop || k == EventTruncate || k == EventRewrite
}

// rankCandidates orders the committed events of the relation asked for,
// sets p.Candidates and p.Why, and returns the chosen one. An event that
// reaches the whole relation (drop, truncate, rewrite) comes first, the
// earliest of them: recovery must stop before the first. Otherwise the
// delete or update of the most rows (the earliest of equals): a whole-table
// DELETE of a small table is found however few its rows, and a table
// that sees small deletes every day still gives the one large one.
func (p *PITRPlan) rankCandidates(evs []*Event, q PITRQuery) *Event {
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if wa, wb := wholeRelation(a.Kind), wholeRelation(b.Kind); wa != wb {
			return wa
		} else if wa {
			return a.LSN < b.LSN
		}
		if a.Rows != b.Rows {
			return a.Rows > b.Rows
		}
		return a.LSN < b.LSN
	})
	p.Candidates = make([]PITRCandidate, len(evs))
	for i, ev := range evs {
		c := PITRCandidate{Kind: string(ev.Kind), XID: ev.XID, CommitLSN: ev.LSN, CommitTime: ev.Time, Rows: ev.Rows}
		if q.RowCounts != nil && !wholeRelation(ev.Kind) {
			if rc, ok := q.RowCounts(ev.Rel, ev.FirstLSN); ok {
				c.TableRows, c.HasTableRows = rc.Tuples, true
				if rc.Tuples > 0 {
					c.Share = float64(ev.Rows) / rc.Tuples
				}
			}
		}
		p.Candidates[i] = c
	}
	first := evs[0]
	c := p.Candidates[0]
	switch {
	case wholeRelation(first.Kind):
		p.Why = fmt.Sprintf("the first %s of the relation in the WAL read (a %s reaches every row; recovery must stop before the first)", first.Kind, first.Kind)
	case len(evs) == 1:
		p.Why = fmt.Sprintf("the only committed %s of the relation in the WAL read", first.Kind)
	default:
		p.Why = fmt.Sprintf("the most rows of the %d committed candidate transactions (%d rows; next: %d rows by xid %d)", len(evs), first.Rows, evs[1].Rows, evs[1].XID)
	}
	if c.HasTableRows {
		p.Why += fmt.Sprintf("; %s of the table's ~%.0f rows (pg_class.reltuples before it)", sharePercent(c.Share), c.TableRows)
	}
	return first
}

// sharePercent prints a share of rows as a percentage; above 100% when
// the estimate was stale.
func sharePercent(f float64) string {
	return strconv.FormatFloat(100*f, 'f', 0, 64) + "%"
}
