package whatif

import (
	"fmt"
	"math"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Projection is the WAL of a stream, now or under a scenario, at the rate
// of the WAL read (its span: the first and last timestamps it carries).
type Projection struct {
	WALBytesPerDay     float64 `json:"wal_bytes_per_day"`
	ImageShare         float64 `json:"image_share"` // image bytes over record bytes
	CheckpointsPerHour float64 `json:"checkpoints_per_hour"`
	PgWALBytes         uint64  `json:"pg_wal_bytes"` // the most pg_wal holds (segment files, recycled ones included)
}

// Recommendation is the advice on one setting: the value advised (the
// current one when it should stay), why, and what the WAL would be.
type Recommendation struct {
	Setting   string     `json:"setting"`
	Current   string     `json:"current"`
	Advised   string     `json:"advised"`
	Why       string     `json:"why"`
	Predicted Projection `json:"predicted"`
}

// Advice is what walscope advise prints: the stream now, and a
// recommendation per setting (max_wal_size, checkpoint_timeout,
// wal_compression) with its predicted effect, and what full_page_writes=off
// would save (shown, never advised).
type Advice struct {
	First, Last     time.Time         `json:"-"`
	SpanSeconds     float64           `json:"span_seconds"`
	Settings        map[string]string `json:"settings"` // the stream's, as taken
	Assumed         []string          `json:"assumed"`  // the settings the WAL does not show
	CheckpointCause map[string]int    `json:"checkpoints_by_cause"`
	Now             Projection        `json:"now"`
	Recommendations []Recommendation  `json:"recommendations"`
	Notes           []string          `json:"notes,omitempty"`
}

// Advise weighs the scenarios of w (fed the whole stream, with the
// checkpoint settings scenarios: WhatIfInput.Cycles set) into advice.
func Advise(w *WhatIf) Advice {
	actual, sc := w.Results()
	first, last := w.Span()
	a := Advice{First: first, Last: last, SpanSeconds: last.Sub(first).Seconds(), Assumed: w.Assumed,
		CheckpointCause: actual.CheckpointsByCause}
	cur := w.Settings
	a.Settings = map[string]string{"max_wal_size": FormatSize(cur.MaxWALSize), "checkpoint_timeout": FormatTimeout(cur.Timeout),
		"checkpoint_completion_target": fmt.Sprint(cur.CompletionTarget), "min_wal_size": FormatSize(cur.MinWALSize),
		"wal_keep_size": FormatSize(cur.WALKeepSize), "wal_compression": w.currentCompression(), "full_page_writes": "on"}
	if w.fpwOff {
		a.Settings["full_page_writes"] = "off"
	}
	span := a.SpanSeconds
	proj := func(s Scenario) Projection {
		p := Projection{PgWALBytes: s.PgWALBytes}
		if s.MaxWALSize != "" && actual.WALBytes > 0 {
			// A stream shorter than a cycle shows less than pg_wal holds
			// in the steady state: a cycle of WAL (the most written in a
			// timeout, the scenario's share of it, or the WAL trigger's
			// distance), plus (1 + target) of it until the checkpoint ends,
			// and the segment being written.
			set := cur
			set.MaxWALSize, set.Timeout = mustSize(s.MaxWALSize), mustTimeout(s.CheckpointTimeout)
			cycle := min(WALPerInterval(w.in.timePoints(), set.Timeout)*float64(s.WALBytes)/float64(actual.WALBytes),
				float64(set.CheckpointSegments(w.in.SegSize, w.in.Version))*float64(w.in.SegSize))
			steady := uint64((1+set.CompletionTarget)*cycle) + 2*uint64(w.in.SegSize)
			p.PgWALBytes = max(p.PgWALBytes, max(steady, set.MinWALSize))
		}
		if s.RecordBytes > 0 {
			p.ImageShare = float64(s.ImageBytes) / float64(s.RecordBytes)
		}
		if span > 0 {
			p.WALBytesPerDay = float64(s.WALBytes) * 86400 / span
			p.CheckpointsPerHour = float64(s.Checkpoints) * 3600 / span
		}
		return p
	}
	a.Now = proj(actual)
	if p := proj; true {
		// Scenarios that keep the stream's checkpoints: pg_wal in
		// proportion to the WAL, not under min_wal_size.
		proj = func(s Scenario) Projection {
			q := p(s)
			if s.MaxWALSize == "" && actual.WALBytes > 0 {
				q.PgWALBytes = max(uint64(float64(a.Now.PgWALBytes)*float64(s.WALBytes)/float64(actual.WALBytes)), cur.MinWALSize)
			}
			return q
		}
	}
	if span < 60 {
		a.Notes = append(a.Notes, fmt.Sprintf("the WAL read spans %.0f s of commits: figures per day and per hour are extrapolated from it", span))
	}
	find := func(setting string) []Scenario {
		var out []Scenario
		for _, s := range sc {
			if s.Setting == setting {
				out = append(out, s)
			}
		}
		return out
	}
	forced := actual.CheckpointsByCause["wal"]
	if w.actualCk == nil {
		forced = 0
	}

	// max_wal_size: the smallest value at which WAL volume no longer forces
	// checkpoints (PostgreSQL's own guidance: checkpoints should come from
	// checkpoint_timeout; "checkpoints are occurring too frequently").
	if sizes := find("max_wal_size"); len(sizes) > 0 {
		r := Recommendation{Setting: "max_wal_size", Current: FormatSize(cur.MaxWALSize), Advised: FormatSize(cur.MaxWALSize)}
		same := actual
		for _, s := range sizes {
			if s.Value == r.Current {
				same = s
			}
		}
		r.Predicted = proj(same)
		switch {
		case forced == 0:
			r.Why = "no checkpoint of the WAL read was forced by WAL volume: keep it"
		default:
			var pick *Scenario
			for i := range sizes {
				if s := &sizes[i]; s.CheckpointsByCause["wal"] == 0 {
					if b, _ := ParseSize(s.Value); b > cur.MaxWALSize && (pick == nil || b < mustSize(pick.Value)) {
						pick = s
					}
				}
			}
			// The stream read may end before a small value's next forced
			// checkpoint: the value must also hold a whole timeout of WAL
			// at the busiest rate seen.
			if need := NeededMaxWALSize(w.in.timePoints(), cur, cur.Timeout, w.in.SegSize, w.in.Version); need > 0 && (pick == nil || need > mustSize(pick.Value)) {
				for i := range sizes {
					if mustSize(sizes[i].Value) == need {
						pick = &sizes[i]
					}
				}
			}
			if pick == nil {
				pick = &sizes[len(sizes)-1]
				r.Why = fmt.Sprintf("%d of the %d checkpoints were forced by WAL volume; even %s leaves some forced: raise it further",
					forced, actual.Checkpoints, pick.Value)
			} else {
				r.Why = fmt.Sprintf("%d of the %d checkpoints were forced by WAL volume; from %s on they come from checkpoint_timeout (pg_wal needs up to %s; crash recovery replays at most that much WAL)",
					forced, actual.Checkpoints, pick.Value, humanBytes(proj(*pick).PgWALBytes))
			}
			r.Advised, r.Predicted = pick.Value, proj(*pick)
		}
		a.Recommendations = append(a.Recommendations, r)
	}

	// checkpoint_timeout: longer cycles image each page less often; the
	// price is a longer crash recovery (up to about (1 + target) times the
	// timeout of WAL to replay). Advised up to 30min, where the WAL read
	// spans two cycles of it (a longer one counts too few timed checkpoints),
	// with the max_wal_size that lets it act (WAL volume forcing no more
	// checkpoints than now), where it saves at least a tenth of the WAL.
	if pairs := append(find("max_wal_size+checkpoint_timeout"), find("checkpoint_timeout")...); len(pairs) > 0 {
		r := Recommendation{Setting: "checkpoint_timeout", Current: FormatTimeout(cur.Timeout), Advised: FormatTimeout(cur.Timeout), Predicted: a.Now}
		best := actual
		var longer time.Duration
		for _, s := range pairs {
			t := mustTimeout(s.CheckpointTimeout)
			switch {
			case t <= cur.Timeout || t > 30*time.Minute || s.CheckpointsByCause["wal"] > actual.CheckpointsByCause["wal"]:
			case 2*t.Seconds() > span: // fewer than two cycles of it: not weighed
				if longer == 0 || t < longer {
					longer = t
				}
			case s.WALBytes < best.WALBytes*9/10:
				best = s
			}
		}
		spanText := time.Duration(span * float64(time.Second)).Round(time.Second).String()
		switch {
		case span < cur.Timeout.Seconds():
			r.Why = fmt.Sprintf("the WAL read spans %s, less than checkpoint_timeout: read a longer stretch to weigh it", spanText)
		case best.Setting == "actual" && longer != 0:
			r.Why = fmt.Sprintf("the WAL read spans %s: read at least %s (two cycles) to weigh checkpoint_timeout=%s", spanText, FormatTimeout(2*longer), FormatTimeout(longer))
		case best.Setting == "actual":
			r.Why = "a longer timeout would save less than a tenth of the WAL: keep it"
		default:
			r.Advised = best.CheckpointTimeout
			r.Predicted = proj(best)
			r.Why = fmt.Sprintf("with max_wal_size=%s: images (%.0f%% of the WAL now) are written once per page per cycle; %.0f%% less WAL; crash recovery may replay up to %s of WAL",
				best.MaxWALSize, 100*a.Now.ImageShare, 100*(1-float64(best.WALBytes)/float64(max(actual.WALBytes, 1))), humanBytes(r.Predicted.PgWALBytes))
			if longer != 0 {
				r.Why += fmt.Sprintf(" (the WAL read spans %s: read at least %s to weigh checkpoint_timeout=%s)", spanText, FormatTimeout(2*longer), FormatTimeout(longer))
			}
		}
		a.Recommendations = append(a.Recommendations, r)
	}

	// wal_compression: lz4 unless another method saves a good deal more
	// (zstd compresses best and costs more CPU; pglz is slow).
	if comp := find("wal_compression"); len(comp) > 0 {
		r := Recommendation{Setting: "wal_compression", Current: a.Settings["wal_compression"], Predicted: a.Now}
		r.Advised = r.Current
		var best, lz4 *Scenario
		for i := range comp {
			s := &comp[i]
			if w.version != 0 && w.version < xlog.V15 && (s.Value == "lz4" || s.Value == "zstd") {
				continue // PostgreSQL 15 brought lz4 and zstd
			}
			if best == nil || s.WALBytes < best.WALBytes {
				best = s
			}
			if s.Value == "lz4" {
				lz4 = s
			}
		}
		pick := best
		if lz4 != nil && float64(lz4.WALBytes) <= 1.15*float64(best.WALBytes) {
			pick = lz4
		}
		switch {
		case pick == nil || actual.ImageBytes == 0:
			r.Why = "the WAL read has no full-page images: compression would change nothing"
		case pick.Value == r.Current || float64(pick.WALBytes) > 0.95*float64(actual.WALBytes):
			r.Why = "the other methods would save less than 5% of the WAL: keep it"
		default:
			r.Advised, r.Predicted = pick.Value, proj(*pick)
			if w.version != 0 && w.version < xlog.V15 && r.Advised == "pglz" {
				r.Advised = "on"
			}
			r.Why = fmt.Sprintf("images are %.0f%% of the WAL; %s stores them in %.0f%% of their size (%.0f%% less WAL) for some CPU at each image",
				100*a.Now.ImageShare, pick.Value, 100*float64(pick.ImageBytes)/float64(max(actual.ImageBytes, 1)),
				100*(1-float64(pick.WALBytes)/float64(max(actual.WALBytes, 1))))
		}
		a.Recommendations = append(a.Recommendations, r)
	}

	// full_page_writes: what off would save, and why it must stay on.
	if off := find("full_page_writes"); len(off) > 0 && !w.fpwOff {
		r := Recommendation{Setting: "full_page_writes", Current: "on", Advised: "on", Predicted: proj(off[0])}
		r.Why = fmt.Sprintf("off would save %.0f%% of the WAL, but must stay on: a crash while the OS writes an 8 kB page in 4 kB pieces leaves a torn page that WAL replay cannot repair (silent corruption); off is safe only where storage writes whole pages atomically (e.g. ZFS), and pg_rewind needs it on",
			100*(1-float64(off[0].WALBytes)/float64(max(actual.WALBytes, 1))))
		a.Recommendations = append(a.Recommendations, r)
	}
	return a
}

func mustTimeout(s string) time.Duration {
	d, _ := ParseTimeout(s)
	return d
}

func mustSize(s string) uint64 {
	b, _ := ParseSize(s)
	return b
}

// humanBytes writes a size in the largest binary unit that keeps a digit
// before the point.
func humanBytes(b uint64) string {
	f := float64(b)
	for _, u := range []string{"B", "kB", "MB", "GB", "TB"} {
		if f < 1024 || u == "TB" {
			if u == "B" {
				return fmt.Sprintf("%d B", b)
			}
			return fmt.Sprintf("%.*f %s", int(math.Max(0, 2-math.Floor(math.Log10(math.Max(f, 1))))), f, u)
		}
		f /= 1024
	}
	return ""
}

// noteImage notes an image's compression method (the stream's
// wal_compression) and a checkpoint's full_page_writes.
func (w *WhatIf) noteRecord(rec *decode.Record) {
	if w.version == 0 {
		w.version = rec.Version
	}
	for i := range rec.Blocks {
		if b := &rec.Blocks[i]; b.HasImage && int(b.Compression) < len(w.methods) {
			w.methods[b.Compression]++
		}
	}
}

// currentCompression is the stream's wal_compression as its images show it:
// the method most of them were stored with (off where none was
// compressed; PostgreSQL skips compression where it would not save).
func (w *WhatIf) currentCompression() string {
	best, n := decode.CompressNone, uint64(0)
	for m, k := range w.methods {
		if decode.Compression(m) != decode.CompressNone && k > n {
			best, n = decode.Compression(m), k
		}
	}
	for _, m := range whatIfMethods {
		if m.c == best {
			if m.name == "pglz" && w.version != 0 && w.version < xlog.V15 {
				return "on"
			}
			return m.name
		}
	}
	return "off"
}
