package export

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// An incremental dataset (PartitionBatch, `export --append`) is written one
// batch at a time: each table's rows of a batch go to
// <table>/batch=N/day=YYYY-MM-DD/part-<first LSN>.parquet, a day being
// the UTC date of the last commit or abort time at or before the row's
// record in WAL order (a commit record its own time); the records before
// the batch's first commit take the last time of the batches before it
// (Config.LastTime), or else the batch's first. A batch with no time at
// all writes day=unknown.
//
// Records are read in parallel spans, and a span cannot know the time
// before its first commit until the spans before it are merged: its rows
// from before that commit are written under .pending-<span's first LSN>/
// in the staging directory, and moved to their day's directory when the
// export is complete (placePending).

// UnknownDay is the day partition of rows for which no time is known.
const UnknownDay = "unknown"

const pendingPrefix = "pending-"

// dayOf returns the UTC date of t, the day partition's value.
func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// dayDir is the directory of a day, or of a span's rows awaiting theirs.
func dayDir(day string) string {
	if strings.HasPrefix(day, pendingPrefix) {
		return "." + day
	}
	return "day=" + day
}

func pendingName(first xlog.LSN) string { return fmt.Sprintf("%s%016X", pendingPrefix, uint64(first)) }

// dayPoint is where the day of the last known time changes, in WAL order.
type dayPoint struct {
	lsn xlog.LSN
	day string
}

// spanClock is a span's last known time.
type spanClock struct {
	known            bool
	last             time.Time
	day              string
	dayStart, dayEnd int64 // the day's bounds, Unix µs
	points           []dayPoint
	pending          string // pendingName of the span, once asked
}

// see takes the time of the record at lsn.
func (c *spanClock) see(lsn xlog.LSN, t time.Time) {
	c.last = t
	m := t.UnixMicro()
	if c.known && m >= c.dayStart && m < c.dayEnd {
		return
	}
	day := dayOf(t)
	start := time.Date(t.UTC().Year(), t.UTC().Month(), t.UTC().Day(), 0, 0, 0, 0, time.UTC)
	c.dayStart, c.dayEnd = start.UnixMicro(), start.AddDate(0, 0, 1).UnixMicro()
	if !c.known || day != c.day {
		c.points = append(c.points, dayPoint{lsn, day})
	}
	c.day, c.known = day, true
}

// dayDir is the day of the span's rows now: the last time's, or pending
// until the spans before it are merged.
func (c *spanClock) dayDir(first xlog.LSN) string {
	if !c.known {
		if c.pending == "" {
			c.pending = pendingName(first) // once: not a Sprintf per record
		}
		return c.pending
	}
	return c.day
}

// dayTrack is the exporter's last known time, in WAL order of the spans
// merged.
type dayTrack struct {
	initial  string // of Config.LastTime, "" if none
	lastTime time.Time
	points   []dayPoint
	pending  map[string]string // pendingName: the day before that span ("" unknown yet)
}

func (d *dayTrack) start(last time.Time) {
	if !last.IsZero() {
		d.initial, d.lastTime = dayOf(last), last
	}
}

// current is the day of the last time merged.
func (d *dayTrack) current() string {
	if n := len(d.points); n > 0 {
		return d.points[n-1].day
	}
	return d.first()
}

// first is the day rows before any known time take: the batches' before,
// else this batch's first time.
func (d *dayTrack) first() string {
	if d.initial != "" {
		return d.initial
	}
	if len(d.points) > 0 {
		return d.points[0].day
	}
	return UnknownDay
}

// at returns the day of the record at lsn.
func (d *dayTrack) at(lsn xlog.LSN) string {
	i := sort.Search(len(d.points), func(i int) bool { return d.points[i].lsn > lsn })
	if i > 0 {
		return d.points[i-1].day
	}
	return d.first()
}

// merge takes a span's times, in WAL order.
func (d *dayTrack) merge(s *Span) {
	if d.pending == nil {
		d.pending = map[string]string{}
	}
	before := ""
	if len(d.points) > 0 {
		before = d.points[len(d.points)-1].day
	} else if d.initial != "" {
		before = d.initial
	}
	d.pending[pendingName(s.first)] = before
	c := &s.clock
	for _, p := range c.points {
		if len(d.points) == 0 && p.day == d.initial || len(d.points) > 0 && p.day == d.points[len(d.points)-1].day {
			continue
		}
		d.points = append(d.points, p)
	}
	if c.known {
		d.lastTime = c.last
	}
}

// placePending moves the rows of spans that began before their first known
// time into their day's directory, now that every span is merged.
func (e *Exporter) placePending() error {
	e.staged.mu.Lock()
	defer e.staged.mu.Unlock()
	for table, files := range e.staged.byTable {
		base := e.datasetDir(table)
		for i := range files {
			f := &files[i]
			dir, name := path.Split(f.Path)
			dir = strings.TrimSuffix(dir, "/")
			if !strings.HasPrefix(dir, "."+pendingPrefix) {
				continue
			}
			day := e.days.pending[dir[1:]]
			if day == "" {
				day = e.days.first()
			}
			rel := dayDir(day) + "/" + name
			if err := os.MkdirAll(filepath.Join(base, dayDir(day)), 0o777); err != nil {
				return err
			}
			if err := os.Rename(filepath.Join(base, filepath.FromSlash(f.Path)), filepath.Join(base, filepath.FromSlash(rel))); err != nil {
				return err
			}
			os.Remove(filepath.Join(base, dir)) // once empty
			f.Path = rel
		}
	}
	return nil
}

// tlRanges are the LSN ranges read on each timeline, in WAL order.
type tlRanges []TimelineRange

func (r *tlRanges) add(tli xlog.TimeLineID, lsn, end xlog.LSN) {
	if n := len(*r); n > 0 && (*r)[n-1].Timeline == tli {
		(*r)[n-1].end = end
		return
	}
	*r = append(*r, TimelineRange{Timeline: tli, start: lsn, end: end})
}

func (r *tlRanges) merge(o *tlRanges) {
	for _, x := range *o {
		if n := len(*r); n > 0 && (*r)[n-1].Timeline == x.Timeline {
			(*r)[n-1].end = x.end
			continue
		}
		*r = append(*r, x)
	}
}

func (e *Exporter) hook(step string) error {
	if e.cfg.Hook == nil {
		return nil
	}
	return e.cfg.Hook(step)
}

// Empty reports whether no record was exported (merged so far).
func (e *Exporter) Empty() bool { return !e.haveAny }

// BatchSummary is what a PartitionBatch export wrote, for its batch
// manifest (Batch): call it after Finish.
func (e *Exporter) BatchSummary() Batch {
	b := Batch{ID: e.cfg.Batch, SchemaVersion: SchemaVersion, Tables: map[string]BatchTable{}}
	for _, r := range e.tl {
		r.Start, r.End = r.start.String(), r.end.String()
		b.Timelines = append(b.Timelines, r)
	}
	days := map[string]bool{}
	for _, t := range e.cfg.Tables {
		bt := BatchTable{Files: []MarkerFile{}}
		rel := filepath.ToSlash(e.datasetRel(t))
		for _, f := range e.staged.byTable[t] {
			mf := MarkerFile{Path: rel + "/" + f.Path, Rows: f.Rows}
			// (published: in its final directory)
			if st, err := os.Stat(filepath.Join(e.finalDir(t), filepath.FromSlash(f.Path))); err == nil {
				mf.Bytes = st.Size()
			}
			bt.Files = append(bt.Files, mf)
			bt.Rows += f.Rows
			if d, ok := strings.CutPrefix(strings.SplitN(f.Path, "/", 2)[0], "day="); ok {
				days[d] = true
			}
		}
		sort.Slice(bt.Files, func(i, j int) bool { return bt.Files[i].Path < bt.Files[j].Path })
		b.Tables[t] = bt
	}
	for d := range days {
		b.Days = append(b.Days, d)
	}
	slices.Sort(b.Days)
	if !e.days.lastTime.IsZero() {
		t := e.days.lastTime.UTC()
		b.LastTime = &t
	}
	if n := len(e.cfg.Cycles); n > 0 {
		b.LastCycle = carryOf(e.cfg.Cycles[n-1])
	}
	b.RecentCheckpoints = recentCheckpoints(e.cfg.Earlier, e.cfg.Cycles)
	b.Replaces = e.replaced
	b.Names, b.Databases = e.learntNames()
	b.Growth, _ = json.Marshal(e.growthSummary())
	b.SpacingState = e.growth.spacing.stateFile
	return b
}

// MaxRecentCheckpoints bounds a manifest's RecentCheckpoints: enough
// spacings to infer checkpoint_timeout and the WAL distance from (a night
// of a busy cluster holds dozens of checkpoints, a quiet one a few).
const MaxRecentCheckpoints = 64

// recentCheckpoints returns the last MaxRecentCheckpoints checkpoints of
// earlier and cycles (by redo point, each once).
func recentCheckpoints(earlier, cycles []stats.CycleInfo) []CycleCarry {
	var out []CycleCarry
	last := xlog.LSN(0)
	for _, list := range [][]stats.CycleInfo{earlier, cycles} {
		for _, c := range list {
			if c.Checkpoint == 0 || len(out) > 0 && c.Redo <= last {
				continue
			}
			out = append(out, *carryOf(c))
			last = c.Redo
		}
	}
	if len(out) > MaxRecentCheckpoints {
		out = out[len(out)-MaxRecentCheckpoints:]
	}
	return out
}

// CycleCarry is the checkpoint cycle a batch ends in, which the next one
// begins in (its records' checkpoint_cycle, its checkpoints row).
type CycleCarry struct {
	Redo       string    `json:"redo_lsn"`
	Checkpoint string    `json:"checkpoint_lsn,omitempty"` // "" for the WAL before the first redo point
	Time       time.Time `json:"time"`
	Online     bool      `json:"online"`
	FullPage   bool      `json:"full_page_writes"`
	WalLevel   string    `json:"wal_level,omitempty"`
	Cause      string    `json:"cause,omitempty"`
}

func carryOf(c stats.CycleInfo) *CycleCarry {
	cc := &CycleCarry{Redo: c.Redo.String(), Time: c.Time.UTC(), Online: c.Online, FullPage: c.FullPage}
	if c.Checkpoint != 0 {
		cc.Checkpoint = c.Checkpoint.String()
		cc.Cause = c.Cause.String()
	}
	if c.WalLevel.Valid() {
		cc.WalLevel = c.WalLevel.String()
	}
	return cc
}

// Cycle returns the cycle info the carry describes (the cause and wal
// level by name; unknown names leave them unknown).
func (c *CycleCarry) Cycle() (stats.CycleInfo, error) {
	var ci stats.CycleInfo
	redo, err := xlog.ParseLSN(c.Redo)
	if err != nil {
		return ci, fmt.Errorf("%w: last_cycle.redo_lsn %q", ErrManifest, c.Redo)
	}
	ci.Redo, ci.Time, ci.Online, ci.FullPage = redo, c.Time, c.Online, c.FullPage
	ci.WalLevel = xlog.WalLevelUnknown
	for l := xlog.WalLevelMinimal; l.Valid(); l++ {
		if l.String() == c.WalLevel {
			ci.WalLevel = l
		}
	}
	if c.Checkpoint != "" {
		if ci.Checkpoint, err = xlog.ParseLSN(c.Checkpoint); err != nil {
			return ci, fmt.Errorf("%w: last_cycle.checkpoint_lsn %q", ErrManifest, c.Checkpoint)
		}
		for k := stats.CheckpointCause(0); k < 16; k++ {
			if k.String() == c.Cause {
				ci.Cause = k
				break
			}
		}
	}
	return ci, nil
}

// LockDataset waits for, and takes, the lock of the local incremental
// dataset dir (DIR/.walscope-append.lock): one append at a time. Close
// releases it.
func LockDataset(dir string) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	return lockFile(filepath.Join(dir, ".walscope-append.lock"))
}

// RelationName is a relation file's name as a batch's rows give it.
type RelationName struct {
	DB     uint32 `json:"db"`
	Rel    uint32 `json:"relfilenode"`
	Schema string `json:"schema,omitempty"`
	Name   string `json:"name,omitempty"`
	Kind   string `json:"relkind,omitempty"`
}

// DatabaseName is a database's name as a batch's rows give it.
type DatabaseName struct {
	OID  uint32 `json:"oid"`
	Name string `json:"name"`
}

// CarriedNames are the names the batches of a dataset learnt from their
// WAL (each batch's manifest holds those it learnt or changed): the next
// batch names the files its own WAL does not as they did.
type CarriedNames struct {
	rels map[[2]uint32]RelationName
	dbs  map[uint32]string
}

func (c *CarriedNames) rel(loc decode.RelFileLocator) (RelationName, bool) {
	if c == nil {
		return RelationName{}, false
	}
	r, ok := c.rels[[2]uint32{loc.DBOID, loc.RelNumber}]
	return r, ok
}

func (c *CarriedNames) db(oid uint32) (string, bool) {
	if c == nil {
		return "", false
	}
	s, ok := c.dbs[oid]
	return s, ok
}

// Names returns the names the manifest's batches carry, the later batches'
// over the earlier's.
func (m *Manifest) Names() *CarriedNames {
	c := &CarriedNames{rels: map[[2]uint32]RelationName{}, dbs: map[uint32]string{}}
	if m == nil {
		return c
	}
	for _, b := range m.Batches {
		for _, r := range b.Names {
			c.rels[[2]uint32{r.DB, r.Rel}] = r
		}
		for _, d := range b.Databases {
			c.dbs[d.OID] = d.Name
		}
	}
	return c
}

func optValue(s string) Value {
	if s == "" {
		return nullName
	}
	return Value{S: s}
}

func valueText(v Value) string {
	if v.Null {
		return ""
	}
	return v.S
}

// learntNames returns the names this batch's WAL gave that the carried
// names do not hold (or hold otherwise), for the batch's manifest.
func (e *Exporter) learntNames() ([]RelationName, []DatabaseName) {
	w := e.cfg.WALNames
	if w == nil {
		return nil, nil
	}
	var rels []RelationName
	dbs := map[uint32]bool{}
	for _, x := range slices.Concat(w.Files(), w.Mapped()) {
		loc := decode.RelFileLocator{DBOID: x.DB, RelNumber: x.RelNumber}
		n := e.relation(loc)
		r := RelationName{DB: x.DB, Rel: x.RelNumber, Schema: valueText(n.schema), Name: valueText(n.name), Kind: valueText(n.kind)}
		if old, ok := e.cfg.Carried.rel(loc); (!ok || old != r) && r.Name != "" {
			rels = append(rels, r)
		}
		dbs[x.DB] = true
	}
	if e.cfg.Carried != nil {
		for oid := range e.cfg.Carried.dbs {
			dbs[oid] = true
		}
	}
	var out []DatabaseName
	for oid := range dbs {
		if oid == 0 {
			continue
		}
		n := e.databaseName(oid)
		if old, _ := e.cfg.Carried.db(oid); !n.Null && n.S != old {
			out = append(out, DatabaseName{OID: oid, Name: n.S})
		}
	}
	sort.Slice(rels, func(i, j int) bool {
		return rels[i].DB < rels[j].DB || rels[i].DB == rels[j].DB && rels[i].Rel < rels[j].Rel
	})
	sort.Slice(out, func(i, j int) bool { return out[i].OID < out[j].OID })
	return rels, out
}
