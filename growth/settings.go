package growth

import (
	"sort"
	"time"

	"github.com/walscope/walscope/export"
)

// What other settings would have saved over the period (issue 29), from
// the settings estimate each batch counted as it read its records
// (export.GrowthSettings): full_page_writes = off, and wal_level = replica
// and minimal below the stream's own level. Each is `walscope whatif`'s
// estimate of the same records (whatif.WhatIf's placeWithout and
// placeLevel), in record bytes (the records' sum(total_length), the
// report's "bytes"): summed over the days of a whole stream it equals
// what `walscope whatif` gives for that stream (TestGrowthSettings).
//
//   - full_page_writes = off: the images it drops with their headers, less
//     the data their blocks carry without an image: the mean data length
//     of image-less references of the same resource manager, record type
//     and block id, learnt over the batches of the period.
//   - wal_level: the period's level is the last one a record stated, else
//     logical where records only logical writes were seen, else replica
//     where hot-standby records were, else minimal (whatif.LevelGuesser
//     over the period). From logical, replica saves the logical-only
//     records, the top-level xid headers and the commit database info;
//     minimal, from replica or logical, saves that and the hot-standby
//     records and the records of relations created in their transaction.
//     A level at or below the scenario's saves nothing (Applies false).

// Scenario names of the settings estimate.
const (
	ScenarioFPWOff          = "full_page_writes=off"
	ScenarioWalLevelReplica = "wal_level=replica"
	ScenarioWalLevelMinimal = "wal_level=minimal"
)

// SettingsScenarios are the scenarios, in the order reported.
var SettingsScenarios = []string{ScenarioFPWOff, ScenarioWalLevelReplica, ScenarioWalLevelMinimal}

// Settings is what the settings would have saved over the report's days.
type Settings struct {
	// Days are the report's days with the estimate, Bytes their records'
	// bytes; NotRecorded the report's days without it (a batch of the
	// day was written by a walscope before settings version 1): left out
	// of every sum.
	Days        int      `json:"days"`
	Bytes       uint64   `json:"bytes"`
	NotRecorded []string `json:"not_recorded"`
	// WalLevel is the period's wal_level as decided from its records.
	WalLevel  string             `json:"wal_level"`
	Scenarios []SettingsScenario `json:"scenarios"`
	// Weeks are the savings by calendar week (Monday), of the report's
	// days with the estimate.
	Weeks []SettingsWeek `json:"weeks"`
}

// SettingsScenario is one setting's saving over the period.
type SettingsScenario struct {
	Scenario string `json:"scenario"`
	// Applies is false where the stream already runs at or below the
	// setting (wal_level): it saves nothing then.
	Applies bool `json:"applies"`
	// SavedBytes are the record bytes saved (negative: it would have
	// cost), Percent of the days' bytes.
	SavedBytes int64   `json:"saved_bytes"`
	Percent    float64 `json:"saved_percent"`
	// ImagesDropped are the images full_page_writes = off drops.
	ImagesDropped uint64 `json:"images_dropped,omitempty"`
}

// SettingsWeek is a week's savings, by scenario.
type SettingsWeek struct {
	Start string           `json:"week"` // its Monday
	Days  int              `json:"days"` // of it with the estimate
	Bytes uint64           `json:"bytes"`
	Saved map[string]int64 `json:"saved_bytes"`
}

// settingsDay is a day's estimate, summed over its batches.
type settingsDay struct {
	export.GrowthSettingsDay
	noData      map[[3]uint64]uint64
	batches     []int // indexes in Dataset.settingsBatches
	notRecorded bool  // a batch of the day has no estimate
}

// loadSettings adds batch g's estimate (nil: none) to d.
func (d *Dataset) loadSettings(g *export.Growth) {
	if g.Settings == nil || g.Settings.Version != export.GrowthSettingsVersion {
		// The batch's days, from its hours: not recorded.
		for _, h := range g.Hours {
			d.settingsDayOf(h.Day()).notRecorded = true
		}
		return
	}
	bi := len(d.settingsBatches)
	dl := map[[3]uint64][2]uint64{}
	for _, r := range g.Settings.DataLen {
		k := [3]uint64{r[0], r[1], r[2]}
		v := dl[k]
		dl[k] = [2]uint64{v[0] + r[3], v[1] + r[4]}
	}
	d.settingsBatches = append(d.settingsBatches, dl)
	for _, gd := range g.Settings.Days {
		x := d.settingsDayOf(gd.Day)
		x.batches = append(x.batches, bi)
		s := &x.GrowthSettingsDay
		s.FPWImages += gd.FPWImages
		s.FPWBytes += gd.FPWBytes
		for _, r := range gd.FPWNoData {
			x.noData[[3]uint64{r[0], r[1], r[2]}] += r[3]
		}
		s.LogicalOnly += gd.LogicalOnly
		s.XidHeader += gd.XidHeader
		s.DBInfo += gd.DBInfo
		s.MinimalDropped += gd.MinimalDropped
		s.MinimalXidHeader += gd.MinimalXidHeader
		s.MinimalDBInfo += gd.MinimalDBInfo
		if gd.StatedLevel != "" {
			s.StatedLevel = gd.StatedLevel // batches are read in WAL order
		}
		s.Logical = s.Logical || gd.Logical
		s.Replica = s.Replica || gd.Replica
	}
}

// meansOf returns the mean data lengths of image-less block references
// by rmgr, record type and block id over batches (indexes in
// settingsBatches; integer division, as whatif.DataLenLearner.Means).
func (d *Dataset) meansOf(batches map[int]bool) func([3]uint64) uint64 {
	sum := map[[3]uint64][2]uint64{}
	for b := range batches {
		for k, v := range d.settingsBatches[b] {
			w := sum[k]
			sum[k] = [2]uint64{w[0] + v[0], w[1] + v[1]}
		}
	}
	return func(k [3]uint64) uint64 {
		v := sum[k]
		if v[0] == 0 {
			return 0
		}
		return v[1] / v[0]
	}
}

// dataLenMeans returns the mean data lengths over the batches of days
// (those with the settings estimate).
func (d *Dataset) dataLenMeans(days []*Day) func([3]uint64) uint64 {
	batches := map[int]bool{}
	for _, x := range days {
		if s := d.settings[x.Day]; s != nil && !s.notRecorded {
			for _, b := range s.batches {
				batches[b] = true
			}
		}
	}
	return d.meansOf(batches)
}

func (d *Dataset) settingsDayOf(day string) *settingsDay {
	x := d.settings[day]
	if x == nil {
		x = &settingsDay{GrowthSettingsDay: export.GrowthSettingsDay{Day: day}, noData: map[[3]uint64]uint64{}}
		d.settings[day] = x
	}
	return x
}

// settingsReport estimates the savings over days (the report's, in
// order).
func (d *Dataset) settingsReport(days []*Day) *Settings {
	out := &Settings{NotRecorded: []string{}, Scenarios: []SettingsScenario{}, Weeks: []SettingsWeek{}}
	var with []*Day
	var sd []*settingsDay
	batches := map[int]bool{}
	for _, x := range days {
		s := d.settings[x.Day]
		if s == nil && x.Records == 0 {
			continue // a day without WAL (a gap filled)
		}
		if s == nil || s.notRecorded {
			out.NotRecorded = append(out.NotRecorded, x.Day)
			continue
		}
		with = append(with, x)
		sd = append(sd, s)
		for _, b := range s.batches {
			batches[b] = true
		}
	}
	mean := d.meansOf(batches)
	// The period's wal_level (whatif.LevelGuesser: stated, else logical,
	// else replica, else minimal).
	level, logical, replica := "", false, false
	for _, s := range sd {
		if s.StatedLevel != "" {
			level = s.StatedLevel
		}
		logical = logical || s.Logical
		replica = replica || s.Replica
	}
	switch {
	case level != "":
	case logical:
		level = "logical"
	case replica:
		level = "replica"
	case len(sd) > 0:
		level = "minimal"
	}
	out.WalLevel = level
	isLogical := level == "logical"
	applies := map[string]bool{ScenarioFPWOff: true, ScenarioWalLevelReplica: isLogical, ScenarioWalLevelMinimal: isLogical || level == "replica"}
	saved := func(s *settingsDay) map[string]int64 {
		fpw := int64(s.FPWBytes)
		for k, n := range s.noData {
			fpw -= int64(n * mean(k))
		}
		db, mdb := uint64(0), uint64(0)
		if isLogical {
			db, mdb = s.DBInfo, s.MinimalDBInfo
		}
		m := map[string]int64{ScenarioFPWOff: fpw, ScenarioWalLevelReplica: 0, ScenarioWalLevelMinimal: 0}
		if applies[ScenarioWalLevelReplica] {
			m[ScenarioWalLevelReplica] = int64(s.LogicalOnly + s.XidHeader + s.MinimalXidHeader + db + mdb)
		}
		if applies[ScenarioWalLevelMinimal] {
			m[ScenarioWalLevelMinimal] = int64(s.LogicalOnly + s.XidHeader + db + s.MinimalDropped)
		}
		return m
	}
	total := map[string]int64{}
	var images uint64
	for i, x := range with {
		s := sd[i]
		m := saved(s)
		x.SettingsSaved = m
		out.Days++
		out.Bytes += x.Bytes
		images += s.FPWImages
		for k, v := range m {
			total[k] += v
		}
		if x.Unknown {
			continue // no week
		}
		monday := x.Start.AddDate(0, 0, -weekdayIndex(x.Start)).Format(time.DateOnly)
		if n := len(out.Weeks); n == 0 || out.Weeks[n-1].Start != monday {
			out.Weeks = append(out.Weeks, SettingsWeek{Start: monday, Saved: map[string]int64{}})
		}
		w := &out.Weeks[len(out.Weeks)-1]
		w.Days++
		w.Bytes += x.Bytes
		for k, v := range m {
			w.Saved[k] += v
		}
	}
	for _, name := range SettingsScenarios {
		sc := SettingsScenario{Scenario: name, Applies: applies[name] && out.Days > 0, SavedBytes: total[name]}
		if out.Bytes > 0 {
			sc.Percent = 100 * float64(sc.SavedBytes) / float64(out.Bytes)
		}
		if name == ScenarioFPWOff {
			sc.ImagesDropped = images
		}
		out.Scenarios = append(out.Scenarios, sc)
	}
	sort.Strings(out.NotRecorded)
	return out
}
