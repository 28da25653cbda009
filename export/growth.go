package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// The growth aggregate (issue 29 item 2): each batch of an incremental
// dataset (PartitionBatch) carries, in its manifest's "growth" field, the
// per-hour totals of the records it wrote, by resource manager and by
// relation, its checkpoints and its segments, so that `walscope growth` and
// `walscope report --dataset` draw months of WAL from the manifests alone,
// without reading a Parquet file or the WAL. It is part of the manifest
// file, so it is committed with the batch and a killed run leaves none.
//
// A record's hour is the UTC hour of the same last known time that gives
// its day= partition (batch.go): the last commit or abort time at or
// before it in WAL order, the batches' before it for its first records;
// so the hour's date is always the record's day partition, and DuckDB's
// `last_value(xact_time IGNORE NULLS) OVER (ORDER BY lsn)` over the
// records table gives the same hours.

// GrowthVersion is the version of the growth aggregate this walscope
// writes and reads.
const GrowthVersion = 1

// ErrNoGrowth reports a batch manifest without a growth aggregate: written
// by a walscope before growth version 1 (which added it).
var ErrNoGrowth = errors.New("batch manifest has no growth aggregate")

// Relation cap: a batch keeps a relation's rows of a day when the
// relation's bytes that day are at least GrowthRelationShare of the batch's
// bytes that day, or when the batch wrote no more than GrowthMaxRelations
// relations that day (then all are kept); and never more than
// GrowthMaxRelations of them (the largest). The others are folded into one
// row per resource manager and hour with relation index -1, and counted in
// the day's FoldedRelations.
const (
	GrowthRelationShare = 0.001
	GrowthMaxRelations  = 500
)

// UnknownHour is the hour of records for which no time is known (the
// UnknownDay partition).
const UnknownHour = "unknown"

// Growth is a batch's growth aggregate.
type Growth struct {
	Version int `json:"growth_version"`
	// Rmgrs and Relations are the dictionaries the rows index.
	Rmgrs     []string         `json:"rmgrs"`
	Relations []GrowthRelation `json:"relations"`
	// Hours are the hours the batch's records fell in, in order.
	Hours []GrowthHour `json:"hours"`
	// Days are the days of Hours, with what the relation cap folded.
	Days []GrowthDay `json:"days"`
	// Checkpoints are the checkpoints rows of the batch (not the WAL
	// before the first redo point).
	Checkpoints []GrowthCheckpoint `json:"checkpoints"`
	// Segments are the segments rows of the batch: a segment two batches
	// read is in both.
	Segments []GrowthSegment `json:"segments"`
	// WhatIf is the sample of the images sized under every
	// wal_compression, by day (growth_whatif.go).
	WhatIf []GrowthWhatIf `json:"whatif"`
	// Settings estimates full_page_writes = off and the lower wal_levels
	// by day (growth_settings.go); nil in a manifest written before it.
	Settings *GrowthSettings `json:"settings,omitempty"`
	// Spacing estimates max_wal_size and checkpoint_timeout by day, and
	// carries its simulation to the next batch (growth_checkpoints.go);
	// nil in a manifest written before it.
	Spacing *GrowthSpacing `json:"spacing,omitempty"`
}

// GrowthRelation names a relation file as the batch's records do (the
// relation of their first block reference).
type GrowthRelation struct {
	Tablespace uint32 `json:"spc"`
	DB         uint32 `json:"db"`
	Rel        uint32 `json:"relfilenode"`
	Database   string `json:"database,omitempty"`
	Schema     string `json:"schema,omitempty"`
	Name       string `json:"name,omitempty"`
	Kind       string `json:"relkind,omitempty"`
}

// GrowthCounts are the totals of a set of records: the records table's
// count(*), sum(total_length), sum(image_count), sum(image_bytes) and
// sum(image_bytes_uncompressed).
type GrowthCounts struct {
	Records, Bytes, Images, ImageBytes, ImageBytesRaw uint64
}

func (c *GrowthCounts) Add(o *GrowthCounts) {
	c.Records += o.Records
	c.Bytes += o.Bytes
	c.Images += o.Images
	c.ImageBytes += o.ImageBytes
	c.ImageBytesRaw += o.ImageBytesRaw
}

// GrowthHour is one hour's totals. Rmgr rows are [rmgr index, records,
// bytes, images, image bytes, uncompressed image bytes]; Rel rows are
// [relation index (-1: the folded ones), rmgr index, records, bytes,
// images, image bytes, uncompressed image bytes]: the records without a
// relation are the rmgr rows less the relation rows.
type GrowthHour struct {
	Hour string     `json:"hour"` // "2006-01-02T15" (UTC) or UnknownHour
	Rmgr [][6]int64 `json:"rmgr"`
	Rel  [][7]int64 `json:"rel"`
}

// Day is the hour's day partition.
func (h *GrowthHour) Day() string {
	if h.Hour == UnknownHour || len(h.Hour) < 10 {
		return UnknownDay
	}
	return h.Hour[:10]
}

// GrowthDay is what the relation cap did to a day of the batch.
type GrowthDay struct {
	Day             string `json:"day"`
	FoldedRelations int    `json:"folded_relations"`
}

// GrowthCheckpoint is a checkpoints row: its redo point, day partition,
// kind (online, shutdown) and cause.
type GrowthCheckpoint struct {
	Redo  string `json:"redo_lsn"`
	Day   string `json:"day"`
	Kind  string `json:"kind"`
	Cause string `json:"cause"`
}

// GrowthSegment is a segments row: the file, its day partition and its
// size (-1 unknown).
type GrowthSegment struct {
	Name string `json:"name"`
	Day  string `json:"day"`
	Size int64  `json:"size"`
}

// ParseGrowth returns the batch's growth aggregate, or an error wrapping
// ErrNoGrowth (a manifest of an earlier walscope) or ErrManifest.
func (b *Batch) ParseGrowth() (*Growth, error) {
	if len(b.Growth) == 0 || string(b.Growth) == "null" {
		return nil, fmt.Errorf("%s: batch %d: %w (written by %s; walscope adds it from growth version %d on): "+
			"re-export the archive with `walscope export --append NEWDIR ARCHIVE` into a new dataset",
			BatchFileName(b.ID), b.ID, ErrNoGrowth, orUnknown(b.Walscope), GrowthVersion)
	}
	var g Growth
	if err := json.Unmarshal(b.Growth, &g); err != nil {
		return nil, fmt.Errorf("%s: %w: growth: %v", BatchFileName(b.ID), ErrManifest, err)
	}
	if g.Version != GrowthVersion {
		return nil, fmt.Errorf("%s: %w: growth version %d (this walscope reads %d)", BatchFileName(b.ID), ErrManifest, g.Version, GrowthVersion)
	}
	for _, h := range g.Hours {
		for _, r := range h.Rmgr {
			if r[0] < 0 || int(r[0]) >= len(g.Rmgrs) {
				return nil, fmt.Errorf("%s: %w: growth hour %s: rmgr index %d", BatchFileName(b.ID), ErrManifest, h.Hour, r[0])
			}
		}
		for _, r := range h.Rel {
			if r[0] < -1 || int(r[0]) >= len(g.Relations) || r[1] < 0 || int(r[1]) >= len(g.Rmgrs) {
				return nil, fmt.Errorf("%s: %w: growth hour %s: relation row %v", BatchFileName(b.ID), ErrManifest, h.Hour, r[:2])
			}
		}
	}
	return &g, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown walscope"
	}
	return "walscope " + s
}

// growthKey is a cell of the aggregate: an hour (Unix hours; pending when
// the span knew no time before the record), a resource manager and a
// relation.
type growthKey struct {
	hour    int64
	pending bool
	rmgr    xlog.RmgrID
	hasRel  bool
	rel     decode.RelFileLocator
}

// unknownHourKey marks the records of a batch without any time.
const unknownHourKey = -1 << 62

// growthCells are a span's (or the exporter's) cells.
type growthCells struct {
	cells   map[growthKey]*GrowthCounts
	lastKey growthKey
	last    *GrowthCounts
	first   time.Time // the first time known in the span
	// settings are the settings estimate's counts (growth_settings.go)
	settings settingsTrack
	// spacing are the span's records as the checkpoint spacing estimate
	// replays them (growth_checkpoints.go)
	spacing spacingSpan
}

func (g *growthCells) at(k growthKey) *GrowthCounts {
	if g.last != nil && g.lastKey == k {
		return g.last
	}
	c := g.cells[k]
	if c == nil {
		if g.cells == nil {
			g.cells = map[growthKey]*GrowthCounts{}
		}
		c = &GrowthCounts{}
		g.cells[k] = c
	}
	g.lastKey, g.last = k, c
	return c
}

// unixHour is t's hour, counted from the Unix epoch (floor).
func unixHour(t time.Time) int64 {
	s := t.Unix()
	h := s / 3600
	if s%3600 < 0 {
		h--
	}
	return h
}

// addGrowth counts a record in its span's cells, and sizes its sampled
// images.
func (s *Span) addGrowth(dec *decode.Decoder, rec *decode.Record, images, imgRaw uint64) {
	k := growthKey{rmgr: rec.Header.Rmid}
	if s.clock.known {
		if s.growth.first.IsZero() {
			s.growth.first = s.clock.last
		}
		k.hour = unixHour(s.clock.last)
	} else {
		k.pending = true
	}
	if len(rec.Blocks) > 0 {
		k.hasRel, k.rel = true, rec.Blocks[0].Rel
	}
	if images > 0 {
		s.sizeImages(dec, rec, k)
	}
	s.addSettings(rec, k)
	s.addSpacing(rec, k)
	c := s.growth.at(k)
	c.Records++
	c.Bytes += uint64(rec.Header.TotLen)
	c.Images += images
	c.ImageBytes += uint64(rec.FPILen)
	c.ImageBytesRaw += imgRaw
}

// growthTrack is the exporter's aggregate: the spans' cells merged, the
// pending ones given the hour of the last time before their span (or left
// for the batch's first time, at the end), and the checkpoints and
// segments rows as Finish writes them.
type growthTrack struct {
	cells       growthCells
	firstTime   time.Time // the first time the batch read, if no time carried
	checkpoints []GrowthCheckpoint
	segments    []GrowthSegment
	sample      map[growthKey]*GrowthWhatIf
	spacing     spacingTrack
}

// mergeGrowth takes span s's cells; before is the last time known before
// the span (zero: none yet). Call before dayTrack.merge.
func (e *Exporter) mergeGrowth(s *Span, before time.Time) {
	g := &e.growth
	if g.firstTime.IsZero() && before.IsZero() {
		g.firstTime = s.growth.first
	}
	for k, c := range s.growth.cells {
		if k.pending && !before.IsZero() {
			k.pending, k.hour = false, unixHour(before)
		}
		g.cells.at(k).Add(c)
	}
	g.mergeSizer(s, unixHour(before), !before.IsZero())
	g.cells.settings.mergeSettings(&s.growth.settings, unixHour(before), !before.IsZero())
	e.mergeSpacing(s, unixHour(before), !before.IsZero())
}

// growthSummary builds the batch's aggregate.
func (e *Exporter) growthSummary() *Growth {
	g := &e.growth
	out := &Growth{Version: GrowthVersion, Rmgrs: []string{}, Relations: []GrowthRelation{}, Hours: []GrowthHour{}, Days: []GrowthDay{},
		Checkpoints: g.checkpoints, Segments: g.segments}
	if out.Checkpoints == nil {
		out.Checkpoints = []GrowthCheckpoint{}
	}
	if out.Segments == nil {
		out.Segments = []GrowthSegment{}
	}
	// Pending cells: the batch's first time (dayTrack.first's), else none.
	pendingHour := int64(unknownHourKey)
	if t := e.cfg.LastTime; !t.IsZero() {
		pendingHour = unixHour(t)
	} else if !g.firstTime.IsZero() {
		pendingHour = unixHour(g.firstTime)
	}
	type relRow struct {
		hour int64
		rmgr xlog.RmgrID
		rel  decode.RelFileLocator
		c    GrowthCounts
	}
	type relKey struct {
		hour int64
		rmgr xlog.RmgrID
		rel  decode.RelFileLocator
	}
	rmgrs := map[[2]int64]*GrowthCounts{} // hour, rmgr
	relCells := map[relKey]*GrowthCounts{}
	for k, c := range g.cells.cells {
		h := k.hour
		if k.pending {
			h = pendingHour // a pending cell joins its hour's (one row each)
		}
		rk := [2]int64{h, int64(k.rmgr)}
		if rmgrs[rk] == nil {
			rmgrs[rk] = &GrowthCounts{}
		}
		rmgrs[rk].Add(c)
		if k.hasRel {
			x := relKey{h, k.rmgr, k.rel}
			if relCells[x] == nil {
				relCells[x] = &GrowthCounts{}
			}
			relCells[x].Add(c)
		}
	}
	rels := make([]relRow, 0, len(relCells))
	for k, c := range relCells {
		rels = append(rels, relRow{k.hour, k.rmgr, k.rel, *c})
	}
	hourName := func(h int64) string {
		if h == unknownHourKey {
			return UnknownHour
		}
		return time.Unix(h*3600, 0).UTC().Format("2006-01-02T15")
	}
	dayOfHour := func(h int64) string {
		if h == unknownHourKey {
			return UnknownDay
		}
		return hourName(h)[:10]
	}
	// The relation cap, per day of the batch.
	dayBytes := map[string]uint64{}
	for rk, c := range rmgrs {
		dayBytes[dayOfHour(rk[0])] += c.Bytes
	}
	type dayRel struct {
		day string
		rel decode.RelFileLocator
	}
	relBytes := map[dayRel]uint64{}
	for _, r := range rels {
		relBytes[dayRel{dayOfHour(r.hour), r.rel}] += r.c.Bytes
	}
	byDay := map[string][]dayRel{}
	for dr := range relBytes {
		byDay[dr.day] = append(byDay[dr.day], dr)
	}
	kept := map[dayRel]bool{}
	days := make([]string, 0, len(dayBytes))
	for d := range dayBytes {
		days = append(days, d)
	}
	sort.Strings(days)
	for _, d := range days {
		list := byDay[d]
		sort.Slice(list, func(i, j int) bool {
			a, b := relBytes[list[i]], relBytes[list[j]]
			if a != b {
				return a > b
			}
			return relLess(list[i].rel, list[j].rel)
		})
		folded := 0
		for i, dr := range list {
			keep := i < GrowthMaxRelations && (len(list) <= GrowthMaxRelations || float64(relBytes[dr]) >= GrowthRelationShare*float64(dayBytes[d]))
			if keep {
				kept[dr] = true
			} else {
				folded++
			}
		}
		out.Days = append(out.Days, GrowthDay{Day: d, FoldedRelations: folded})
	}
	// Dictionaries.
	rmIndex := map[xlog.RmgrID]int64{}
	rmOf := func(id xlog.RmgrID) int64 {
		i, ok := rmIndex[id]
		if !ok {
			i = int64(len(out.Rmgrs))
			rmIndex[id] = i
			out.Rmgrs = append(out.Rmgrs, rmgr.Name(id))
		}
		return i
	}
	relIndex := map[decode.RelFileLocator]int64{}
	relOf := func(loc decode.RelFileLocator) int64 {
		i, ok := relIndex[loc]
		if !ok {
			i = int64(len(out.Relations))
			relIndex[loc] = i
			n := e.relation(loc)
			out.Relations = append(out.Relations, GrowthRelation{Tablespace: loc.SpcOID, DB: loc.DBOID, Rel: loc.RelNumber,
				Database: valueText(n.db), Schema: valueText(n.schema), Name: valueText(n.name), Kind: valueText(n.kind)})
		}
		return i
	}
	hours := map[int64]*GrowthHour{}
	hourOf := func(h int64) *GrowthHour {
		if hours[h] == nil {
			hours[h] = &GrowthHour{Hour: hourName(h), Rmgr: [][6]int64{}, Rel: [][7]int64{}}
		}
		return hours[h]
	}
	rmKeys := make([][2]int64, 0, len(rmgrs))
	for k := range rmgrs {
		rmKeys = append(rmKeys, k)
	}
	sort.Slice(rmKeys, func(i, j int) bool {
		return rmKeys[i][0] < rmKeys[j][0] || rmKeys[i][0] == rmKeys[j][0] && rmKeys[i][1] < rmKeys[j][1]
	})
	for _, k := range rmKeys {
		c := rmgrs[k]
		h := hourOf(k[0])
		h.Rmgr = append(h.Rmgr, [6]int64{rmOf(xlog.RmgrID(k[1])), int64(c.Records), int64(c.Bytes), int64(c.Images), int64(c.ImageBytes), int64(c.ImageBytesRaw)})
	}
	sort.Slice(rels, func(i, j int) bool {
		a, b := rels[i], rels[j]
		if a.hour != b.hour {
			return a.hour < b.hour
		}
		if a.rel != b.rel {
			return relLess(a.rel, b.rel)
		}
		return a.rmgr < b.rmgr
	})
	folded := map[[2]int64]*GrowthCounts{} // hour, rmgr
	for _, r := range rels {
		if !kept[dayRel{dayOfHour(r.hour), r.rel}] {
			k := [2]int64{r.hour, int64(r.rmgr)}
			if folded[k] == nil {
				folded[k] = &GrowthCounts{}
			}
			folded[k].Add(&r.c)
			continue
		}
		h := hourOf(r.hour)
		h.Rel = append(h.Rel, [7]int64{relOf(r.rel), rmOf(r.rmgr), int64(r.c.Records), int64(r.c.Bytes), int64(r.c.Images), int64(r.c.ImageBytes), int64(r.c.ImageBytesRaw)})
	}
	for _, k := range rmKeys {
		if c := folded[k]; c != nil {
			h := hourOf(k[0])
			h.Rel = append(h.Rel, [7]int64{-1, rmOf(xlog.RmgrID(k[1])), int64(c.Records), int64(c.Bytes), int64(c.Images), int64(c.ImageBytes), int64(c.ImageBytesRaw)})
		}
	}
	out.WhatIf = g.whatIfDays(pendingHour, dayOfHour)
	out.Settings = g.cells.settings.summary(pendingHour, dayOfHour)
	out.Spacing = g.spacing.summary(pendingHour, dayOfHour, out.Settings.DataLen, e.cfg.Batch)
	hk := make([]int64, 0, len(hours))
	for h := range hours {
		hk = append(hk, h)
	}
	sort.Slice(hk, func(i, j int) bool { return hk[i] < hk[j] })
	for _, h := range hk {
		out.Hours = append(out.Hours, *hours[h])
	}
	return out
}

func relLess(a, b decode.RelFileLocator) bool {
	if a.SpcOID != b.SpcOID {
		return a.SpcOID < b.SpcOID
	}
	if a.DBOID != b.DBOID {
		return a.DBOID < b.DBOID
	}
	return a.RelNumber < b.RelNumber
}

// addGrowthCheckpoint notes a checkpoints row (Finish).
func (e *Exporter) addGrowthCheckpoint(redo xlog.LSN, day, kind, cause string) {
	e.growth.checkpoints = append(e.growth.checkpoints, GrowthCheckpoint{Redo: redo.String(), Day: day, Kind: kind, Cause: cause})
}

// addGrowthSegment notes a segments row (Finish); size -1 if unknown.
func (e *Exporter) addGrowthSegment(name, day string, size int64) {
	e.growth.segments = append(e.growth.segments, GrowthSegment{Name: name, Day: day, Size: size})
}

// HourKey formats an hour for Growth.Hours from its UTC time.
func HourKey(t time.Time) string { return t.UTC().Format("2006-01-02T15") }

// ParseHour parses a Growth hour ("2006-01-02T15").
func ParseHour(s string) (time.Time, error) {
	t, err := time.Parse("2006-01-02T15", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: hour %q", ErrManifest, s)
	}
	return t, nil
}
