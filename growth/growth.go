// Package growth reads how an incremental dataset's WAL grew, day by day
// and hour by hour, from the growth aggregates its batch manifests carry
// (export.Growth, written by `walscope export --append`), without the WAL
// and without reading a Parquet file; and forecasts the daily WAL volume
// and the archive's size (forecast.go).
//
// Every figure is the records table's: a day or hour is the one the
// records' day= partition gives (the last commit or abort time at or
// before the record); bytes are sum(total_length); images
// sum(image_count), image bytes sum(image_bytes). A relation is the file of
// a record's first block reference, named as the records table names it.
// Checkpoints are the checkpoints table's rows with a checkpoint (one per
// redo point: a cycle two batches share counts once, on the day of its
// checkpoint's time), segments the segments table's (one per file: a
// segment two batches read counts once, on the day of its first batch's
// row).
package growth

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/walscope/walscope/export"
)

// ErrNoManifest reports a dataset without a batch manifest: none at all,
// or one written by `walscope export --out`, which has no growth
// aggregate.
var ErrNoManifest = errors.New("not an incremental dataset (no _walscope_manifest/)")

// Counts are the records table's totals of a set of records.
type Counts = export.GrowthCounts

// Relation is a relation file, named as the dataset names it (the last
// batch that names it).
type Relation struct {
	Tablespace uint32 `json:"tablespace"`
	DB         uint32 `json:"database"`
	Rel        uint32 `json:"relfilenode"`
	Database   string `json:"database_name,omitempty"`
	Schema     string `json:"schema_name,omitempty"`
	Name       string `json:"relation_name,omitempty"`
	Kind       string `json:"relkind,omitempty"`
}

// less orders relations by file: tablespace, database, relfilenode (a
// total order where names tie).
func (r Relation) less(o Relation) bool {
	if r.Tablespace != o.Tablespace {
		return r.Tablespace < o.Tablespace
	}
	if r.DB != o.DB {
		return r.DB < o.DB
	}
	return r.Rel < o.Rel
}

// Label is the relation's name for a table: schema.name, or the file's
// numbers when the dataset does not name it.
func (r *Relation) Label() string {
	if r.Name == "" {
		return fmt.Sprintf("%d/%d/%d", r.Tablespace, r.DB, r.Rel)
	}
	if r.Schema == "" {
		return r.Name
	}
	return r.Schema + "." + r.Name
}

// RelKey is a relation file: its tablespace, database and relfilenode.
type RelKey struct{ Tablespace, DB, Rel uint32 }

// Period is one hour or day: its totals, by resource manager and by
// relation.
type Period struct {
	// Start is the period's first instant (UTC); Unknown marks the
	// records of batches without any time (the day=unknown partition).
	Start   time.Time `json:"start"`
	Unknown bool      `json:"unknown,omitempty"`
	Counts
	Rmgr map[string]*Counts `json:"by_rmgr"`
	// Relation are the relations' totals; OtherRelations the records of
	// relations the batches' cap folded (export.GrowthRelationShare),
	// which are in the rmgr totals but named by no relation row.
	Relation       map[RelKey]*Counts `json:"-"`
	OtherRelations Counts             `json:"other_relations"`
	// Relations lists Relation, largest first (filled by Build).
	Relations []RelationCounts `json:"by_relation"`
	// Folded is set when a batch folded relations of this period's day.
	Folded bool `json:"relations_folded,omitempty"`
}

func newPeriod(t time.Time, unknown bool) *Period {
	return &Period{Start: t, Unknown: unknown, Rmgr: map[string]*Counts{}, Relation: map[RelKey]*Counts{}}
}

// Checkpoints counts a day's checkpoints by cause (stats.CheckpointCause's
// names: time, wal, requested, shutdown, end-of-recovery, backup, unknown).
type Checkpoints map[string]int

// Dataset is what the batches' aggregates say, hour by hour.
type Dataset struct {
	Batches   int
	Hours     []*Period // in order; an unknown hour last
	Relations map[RelKey]*Relation
	// checkpoints and segments, deduplicated across batches
	checkpoints []export.GrowthCheckpoint
	segments    []export.GrowthSegment
	whatif      map[string]*export.GrowthWhatIf // by day
	// the settings estimate (settings.go): by day, and each batch's data
	// lengths (by rmgr, record type, block id: count, sum)
	settings        map[string]*settingsDay
	settingsBatches []map[[3]uint64][2]uint64
	// the checkpoint spacing estimate (spacing.go), by day; the blocks
	// its carried state left out
	spacing        map[string]*spacingDay
	spacingDropped int
}

// Load reads the growth aggregates of every committed batch of the
// dataset fsys holds (its root). A batch without one (written by an
// earlier walscope) is an error wrapping export.ErrNoGrowth, a dataset
// without a manifest one wrapping ErrNoManifest.
func Load(fsys fs.FS) (*Dataset, error) {
	m, err := export.ReadManifest(fsys)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%w: growth reads the batch manifests of a dataset written by `walscope export --append`; "+
			"a dataset of `export --out` has none: export the archive with `walscope export --append NEWDIR ARCHIVE`", ErrNoManifest)
	}
	d := &Dataset{Batches: len(m.Batches), Relations: map[RelKey]*Relation{}, whatif: map[string]*export.GrowthWhatIf{},
		settings: map[string]*settingsDay{}, spacing: map[string]*spacingDay{}}
	hours := map[time.Time]*Period{}
	var unknown *Period
	seenRedo, seenSeg := map[string]bool{}, map[string]bool{}
	// Decoded on every core (JSON decoding is most of the time:
	// BenchmarkLoadYear), merged in batch order.
	gs := make([]*export.Growth, len(m.Batches))
	errs := make([]error, len(m.Batches))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(runtime.GOMAXPROCS(0), len(m.Batches)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(gs); i = int(next.Add(1) - 1) {
				gs[i], errs[i] = m.Batches[i].ParseGrowth()
			}
		}()
	}
	wg.Wait()
	for i := range m.Batches {
		b := &m.Batches[i]
		g, err := gs[i], errs[i]
		if err != nil {
			return nil, err
		}
		folded := map[string]bool{}
		for _, fd := range g.Days {
			if fd.FoldedRelations > 0 {
				folded[fd.Day] = true
			}
		}
		for hi := range g.Hours {
			gh := &g.Hours[hi]
			var p *Period
			if gh.Hour == export.UnknownHour {
				if unknown == nil {
					unknown = newPeriod(time.Time{}, true)
				}
				p = unknown
			} else {
				t, err := export.ParseHour(gh.Hour)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", export.BatchFileName(b.ID), err)
				}
				if p = hours[t]; p == nil {
					p = newPeriod(t, false)
					hours[t] = p
				}
			}
			if folded[gh.Day()] {
				p.Folded = true
			}
			for _, r := range gh.Rmgr {
				c := counts(r[1:])
				p.Counts.Add(&c)
				name := g.Rmgrs[r[0]]
				if p.Rmgr[name] == nil {
					p.Rmgr[name] = &Counts{}
				}
				p.Rmgr[name].Add(&c)
			}
			for _, r := range gh.Rel {
				c := counts(r[2:])
				if r[0] < 0 {
					p.OtherRelations.Add(&c)
					continue
				}
				gr := &g.Relations[r[0]]
				k := RelKey{gr.Tablespace, gr.DB, gr.Rel}
				if p.Relation[k] == nil {
					p.Relation[k] = &Counts{}
				}
				p.Relation[k].Add(&c)
			}
		}
		for _, gr := range g.Relations {
			k := RelKey{gr.Tablespace, gr.DB, gr.Rel}
			old := d.Relations[k]
			if old == nil || gr.Name != "" || gr.Database != "" {
				r := &Relation{Tablespace: gr.Tablespace, DB: gr.DB, Rel: gr.Rel, Database: gr.Database, Schema: gr.Schema, Name: gr.Name, Kind: gr.Kind}
				if old != nil && r.Name == "" {
					r.Name, r.Schema, r.Kind = old.Name, old.Schema, old.Kind
				}
				if old != nil && r.Database == "" {
					r.Database = old.Database
				}
				d.Relations[k] = r
			}
		}
		for _, c := range g.Checkpoints {
			if !seenRedo[c.Redo] {
				seenRedo[c.Redo] = true
				d.checkpoints = append(d.checkpoints, c)
			}
		}
		for _, w := range g.WhatIf {
			x := d.whatif[w.Day]
			if x == nil {
				x = &export.GrowthWhatIf{Day: w.Day}
				d.whatif[w.Day] = x
			}
			x.Images += w.Images
			x.Stored += w.Stored
			x.Off += w.Off
			x.PGLZ += w.PGLZ
			x.LZ4 += w.LZ4
			x.Zstd += w.Zstd
			x.Failed += w.Failed
		}
		d.loadSettings(g)
		d.loadSpacing(g)
		for _, s := range g.Segments {
			if !seenSeg[s.Name] {
				seenSeg[s.Name] = true
				d.segments = append(d.segments, s)
			}
		}
	}
	for _, p := range hours {
		d.Hours = append(d.Hours, p)
	}
	sort.Slice(d.Hours, func(i, j int) bool { return d.Hours[i].Start.Before(d.Hours[j].Start) })
	if unknown != nil {
		d.Hours = append(d.Hours, unknown)
	}
	return d, nil
}

func counts(v []int64) Counts {
	return Counts{Records: uint64(v[0]), Bytes: uint64(v[1]), Images: uint64(v[2]), ImageBytes: uint64(v[3]), ImageBytesRaw: uint64(v[4])}
}

// addPeriod adds o's totals into p.
func (p *Period) addPeriod(o *Period) {
	p.Counts.Add(&o.Counts)
	for k, c := range o.Rmgr {
		if p.Rmgr[k] == nil {
			p.Rmgr[k] = &Counts{}
		}
		p.Rmgr[k].Add(c)
	}
	for k, c := range o.Relation {
		if p.Relation[k] == nil {
			p.Relation[k] = &Counts{}
		}
		p.Relation[k].Add(c)
	}
	p.OtherRelations.Add(&o.OtherRelations)
	p.Folded = p.Folded || o.Folded
}

// Day is one day's totals, with its checkpoints and the segment files
// that began in it.
type Day struct {
	Period
	Day         string      `json:"day"` // YYYY-MM-DD, or "unknown"
	Checkpoints Checkpoints `json:"checkpoints"`
	// Segments are the segment files first listed on this day, and
	// SegmentBytes their sizes (a size the dataset does not know counts
	// as 0); ArchiveBytes the sizes of every segment up to this day's.
	Segments     int   `json:"segments"`
	SegmentBytes int64 `json:"segment_bytes"`
	ArchiveBytes int64 `json:"archive_bytes"`
	// WhatIf is the day's sample of images sized under every
	// wal_compression (export.GrowthWhatIf; nil without images sampled).
	WhatIf *export.GrowthWhatIf `json:"whatif_sample,omitempty"`
	// SettingsSaved is what each setting would have saved this day
	// (Settings; nil where not recorded).
	SettingsSaved map[string]int64 `json:"settings_saved_bytes,omitempty"`
	// SpacingSaved is what each checkpoint spacing scenario would have
	// saved this day (Spacing; nil where not recorded).
	SpacingSaved map[string]int64 `json:"spacing_saved_bytes,omitempty"`
}

// Days returns the dataset's days in order (an unknown day last), with
// the checkpoints and segments of each.
func (d *Dataset) Days() []*Day {
	byDay := map[string]*Day{}
	var order []string
	get := func(name string, t time.Time, unknown bool) *Day {
		x := byDay[name]
		if x == nil {
			x = &Day{Period: *newPeriod(t, unknown), Day: name, Checkpoints: Checkpoints{}}
			byDay[name] = x
			order = append(order, name)
		}
		return x
	}
	for _, h := range d.Hours {
		name, t := export.UnknownDay, time.Time{}
		if !h.Unknown {
			t = time.Date(h.Start.Year(), h.Start.Month(), h.Start.Day(), 0, 0, 0, 0, time.UTC)
			name = t.Format(time.DateOnly)
		}
		get(name, t, h.Unknown).addPeriod(h)
	}
	dayTime := func(s string) (time.Time, bool) {
		t, err := time.Parse(time.DateOnly, s)
		return t, err != nil
	}
	for _, c := range d.checkpoints {
		t, unk := dayTime(c.Day)
		get(c.Day, t, unk).Checkpoints[c.Cause]++
	}
	for _, s := range d.segments {
		t, unk := dayTime(s.Day)
		x := get(s.Day, t, unk)
		x.Segments++
		if s.Size > 0 {
			x.SegmentBytes += s.Size
		}
	}
	for day, w := range d.whatif {
		t, unk := dayTime(day)
		x := get(day, t, unk)
		c := *w
		x.WhatIf = &c
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if (a == export.UnknownDay) != (b == export.UnknownDay) {
			return b == export.UnknownDay
		}
		return a < b
	})
	out := make([]*Day, len(order))
	var archive int64
	for i, n := range order {
		out[i] = byDay[n]
		archive += out[i].SegmentBytes
		out[i].ArchiveBytes = archive
	}
	return out
}

// RelationTotals returns each relation's totals over the periods.
func RelationTotals(ps []*Period) map[RelKey]*Counts {
	out := map[RelKey]*Counts{}
	for _, p := range ps {
		for k, c := range p.Relation {
			if out[k] == nil {
				out[k] = &Counts{}
			}
			out[k].Add(c)
		}
	}
	return out
}
