package growth

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/walscope/walscope/export"
)

// What other checkpoint spacing would have saved over the period (issue
// 29), from the spacing estimate each batch computed as it appended
// (export.GrowthSpacing): max_wal_size twice and four times and
// checkpoint_timeout twice the settings the stream had (given to the
// append, else inferred from its checkpoints), each `walscope whatif`'s
// simulated checkpointer run on the batches in WAL order, carried from
// night to night. A day's saving is the records' bytes less the
// scenario's: images the further checkpoints no longer need, images the
// moved ones need where the stream had none, and the checkpoint records
// the scenario writes instead of the stream's. The blocks whose image a
// scenario drops are given the mean data length of image-less references
// of the same resource manager, record type and block id over the
// period's batches, as for full_page_writes = off (Settings).

// Scenario names of the spacing estimate (whatif.SpacingScenarios).
const (
	ScenarioMaxWALSize2x = "max_wal_size=2x"
	ScenarioMaxWALSize4x = "max_wal_size=4x"
	ScenarioTimeout2x    = "checkpoint_timeout=2x"
)

// SpacingScenarios are the spacing scenarios, in the order reported.
var SpacingScenarios = []string{ScenarioMaxWALSize2x, ScenarioMaxWALSize4x, ScenarioTimeout2x}

// Spacing is what other checkpoint spacing would have saved over the
// report's days.
type Spacing struct {
	// Days are the report's days with the estimate, Bytes their records'
	// bytes; NotRecorded the report's days without it (a batch of the day
	// was written by a walscope before spacing version 1): left out of
	// every sum.
	Days        int      `json:"days"`
	Bytes       uint64   `json:"bytes"`
	NotRecorded []string `json:"not_recorded"`
	// Current are the settings the batches took the stream to have
	// ("max_wal_size checkpoint_timeout", each distinct pair once, in
	// order), Assumed the settings some batch neither was given nor saw
	// in the checkpoints' spacing.
	Current   []string          `json:"current_settings"`
	Assumed   []string          `json:"assumed,omitempty"`
	Scenarios []SpacingScenario `json:"scenarios"`
	Weeks     []SettingsWeek    `json:"weeks"`
	// DroppedBlocks are the blocks the carried state left out (its bound,
	// export.MaxSpacingBlocks): each may have made a scenario add one
	// image fewer than whatif over the whole stream.
	DroppedBlocks int `json:"dropped_blocks"`
}

// SpacingScenario is one scenario's saving over the period.
type SpacingScenario struct {
	Scenario string `json:"scenario"`
	// Settings are the scenario's settings as the batches had them
	// ("max_wal_size checkpoint_timeout", each distinct pair once).
	Settings []string `json:"settings"`
	// SavedBytes are the record bytes saved (negative: it would have
	// cost), Percent of the days' bytes; Checkpoints the simulated
	// checkpoints begun in the days.
	SavedBytes  int64   `json:"saved_bytes"`
	Percent     float64 `json:"saved_percent"`
	Checkpoints int     `json:"checkpoints"`
}

// spacingDay is a day's spacing estimate, summed over its batches.
type spacingDay struct {
	bytes       uint64
	saved       map[string]int64
	checkpoints map[string]int
	noData      map[string]map[[3]uint64]uint64
	settings    map[string][]string
	current     []string
	assumed     []string
	notRecorded bool
}

// loadSpacing adds batch g's spacing estimate (nil: none) to d.
func (d *Dataset) loadSpacing(g *export.Growth) {
	sp := g.Spacing
	if sp == nil || sp.Version != export.GrowthSpacingVersion {
		for _, h := range g.Hours {
			d.spacingDayOf(h.Day()).notRecorded = true
		}
		return
	}
	d.spacingDropped = sp.DroppedBlocks // cumulative: the last batch's
	current := sp.MaxWALSize + " " + sp.CheckpointTimeout
	for _, gd := range sp.Days {
		x := d.spacingDayOf(gd.Day)
		x.bytes += gd.Bytes
		x.current = appendNew(x.current, current)
		for _, a := range sp.Assumed {
			x.assumed = appendNew(x.assumed, a)
		}
		for i, sc := range sp.Scenarios {
			if i >= len(gd.Saved) || i >= len(gd.Checkpoints) || i >= len(gd.NoData) {
				break
			}
			x.saved[sc.Name] += gd.Saved[i]
			x.checkpoints[sc.Name] += gd.Checkpoints[i]
			x.settings[sc.Name] = appendNew(x.settings[sc.Name], sc.MaxWALSize+" "+sc.CheckpointTimeout)
			if x.noData[sc.Name] == nil {
				x.noData[sc.Name] = map[[3]uint64]uint64{}
			}
			for _, r := range gd.NoData[i] {
				x.noData[sc.Name][[3]uint64{r[0], r[1], r[2]}] += r[3]
			}
		}
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func (d *Dataset) spacingDayOf(day string) *spacingDay {
	x := d.spacing[day]
	if x == nil {
		x = &spacingDay{saved: map[string]int64{}, checkpoints: map[string]int{}, noData: map[string]map[[3]uint64]uint64{}, settings: map[string][]string{}}
		d.spacing[day] = x
	}
	return x
}

// spacingReport estimates the savings over days (the report's, in
// order), with the mean data lengths of the period's batches (mean, as
// the settings estimate has them).
func (d *Dataset) spacingReport(days []*Day, mean func([3]uint64) uint64) *Spacing {
	out := &Spacing{NotRecorded: []string{}, Current: []string{}, Scenarios: []SpacingScenario{}, Weeks: []SettingsWeek{}, DroppedBlocks: d.spacingDropped}
	total := map[string]int64{}
	checkpoints := map[string]int{}
	settings := map[string][]string{}
	for _, x := range days {
		s := d.spacing[x.Day]
		if s == nil && x.Records == 0 {
			continue // a day without WAL (a gap filled)
		}
		if s == nil || s.notRecorded {
			out.NotRecorded = append(out.NotRecorded, x.Day)
			continue
		}
		m := map[string]int64{}
		for _, name := range SpacingScenarios {
			v := s.saved[name]
			for k, n := range s.noData[name] {
				v -= int64(n * mean(k))
			}
			m[name] = v
			total[name] += v
			checkpoints[name] += s.checkpoints[name]
			for _, set := range s.settings[name] {
				settings[name] = appendNew(settings[name], set)
			}
		}
		for _, c := range s.current {
			out.Current = appendNew(out.Current, c)
		}
		for _, a := range s.assumed {
			out.Assumed = appendNew(out.Assumed, a)
		}
		x.SpacingSaved = m
		out.Days++
		out.Bytes += x.Bytes
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
	sort.Strings(out.Assumed)
	for _, name := range SpacingScenarios {
		sc := SpacingScenario{Scenario: name, Settings: settings[name], SavedBytes: total[name], Checkpoints: checkpoints[name]}
		if sc.Settings == nil {
			sc.Settings = []string{}
		}
		if out.Bytes > 0 {
			sc.Percent = 100 * float64(sc.SavedBytes) / float64(out.Bytes)
		}
		out.Scenarios = append(out.Scenarios, sc)
	}
	sort.Strings(out.NotRecorded)
	return out
}

// SettingsLabel is a "max_wal_size checkpoint_timeout" pair as the text
// prints it.
func SettingsLabel(pair string) string {
	m, t, _ := strings.Cut(pair, " ")
	return "max_wal_size " + m + ", checkpoint_timeout " + t
}
