package whatif

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

// CheckpointSettings are the settings that decide when PostgreSQL
// checkpoints and how much WAL pg_wal holds. The WAL records none of them:
// whatever is not given is an assumption (defaults of guc_tables.c).
type CheckpointSettings struct {
	MaxWALSize       uint64        // max_wal_size, bytes (1GB)
	MinWALSize       uint64        // min_wal_size, bytes (80MB)
	Timeout          time.Duration // checkpoint_timeout (5min)
	CompletionTarget float64       // checkpoint_completion_target (0.9; 0.5 before 14)
	WALKeepSize      uint64        // wal_keep_size, bytes (0; replication slots are not modelled)
}

// DefaultCheckpointSettings are PostgreSQL 14 to 18's defaults.
var DefaultCheckpointSettings = CheckpointSettings{MaxWALSize: 1 << 30, MinWALSize: 80 << 20,
	Timeout: 5 * time.Minute, CompletionTarget: 0.9}

// CheckpointSegments is the number of segments after the redo point's at
// which a filled segment requests a checkpoint, as
// CalculateCheckPointSegments (xlog.c) derives it: max_wal_size in segments
// over 1 + checkpoint_completion_target (2 + the target in PostgreSQL 10,
// which kept two cycles of WAL), rounded down, at least 1.
func (s CheckpointSettings) CheckpointSegments(segSize uint32, v xlog.Version) int {
	segMB := max(uint64(segSize)>>20, 1)
	segs := float64((s.MaxWALSize >> 20) / segMB) // ConvertToXSegs: whole MB over MB per segment
	div := 1.0 + s.CompletionTarget
	if v != 0 && v < xlog.V11 {
		div = 2.0 + s.CompletionTarget
	}
	return max(int(segs/div), 1)
}

// GivenSettings are the checkpoint settings known of a stream (from the
// user): Base holds min_wal_size, wal_keep_size and
// checkpoint_completion_target (the zero value: PostgreSQL's defaults);
// MaxWALSize and Timeout, where not 0, are the stream's.
type GivenSettings struct {
	Base             CheckpointSettings
	MaxWALSize       uint64
	Timeout          time.Duration
	CompletionTarget bool // Base.CompletionTarget was given, not a default
}

// CurrentSettings returns the settings the stream was most likely written
// with: those given, else max_wal_size and checkpoint_timeout from the
// spacing of its checkpoints where it shows them (max_wal_size as the
// roundest value giving that distance), else PostgreSQL's defaults
// (max_wal_size raised to what its longest cycle shows at least). assumed
// names the settings that are neither given nor shown by the WAL.
func CurrentSettings(inf stats.Inferred, segSize uint32, v xlog.Version, g GivenSettings) (s CheckpointSettings, assumed []string) {
	s = g.Base
	if s == (CheckpointSettings{}) {
		s = DefaultCheckpointSettings
	}
	if !g.CompletionTarget {
		if v != 0 && v < xlog.V14 {
			s.CompletionTarget = 0.5
		}
		assumed = append(assumed, "checkpoint_completion_target")
	}
	switch {
	case g.MaxWALSize > 0:
		s.MaxWALSize = g.MaxWALSize
	case inf.CheckpointSegments > 0:
		s.MaxWALSize = maxWALSizeFor(inf.CheckpointSegments, segSize, s.CompletionTarget, v)
	default:
		// at least what the longest cycle without a WAL-triggered
		// checkpoint shows
		if inf.MinCheckpointSegments > 0 {
			s.MaxWALSize = max(s.MaxWALSize, roundUpMaxWALSize(inf.MinCheckpointSegments, segSize, s.CompletionTarget, v))
		}
		assumed = append(assumed, "max_wal_size")
	}
	switch {
	case g.Timeout > 0:
		s.Timeout = g.Timeout
	case inf.Timeout > 0:
		s.Timeout = inf.Timeout
	default:
		assumed = append(assumed, "checkpoint_timeout")
	}
	return s, append(assumed, "min_wal_size", "wal_keep_size")
}

// maxWALSizeFor returns the roundest max_wal_size (in whole segments) whose
// checkpoint distance is cps segments.
func maxWALSizeFor(cps int, segSize uint32, target float64, v xlog.Version) uint64 {
	seg := uint64(segSize)
	lo := uint64(math.Ceil(float64(cps) * (1 + target) * float64(seg)))
	if v != 0 && v < xlog.V11 {
		lo = uint64(math.Ceil(float64(cps) * (2 + target) * float64(seg)))
	}
	fits := func(m uint64) bool {
		return CheckpointSettings{MaxWALSize: m, CompletionTarget: target}.CheckpointSegments(segSize, v) == cps
	}
	for _, unit := range []uint64{1 << 30, 256 << 20, 64 << 20, 16 << 20, 8 << 20, 1 << 20} {
		if unit < seg {
			continue
		}
		m := (lo + unit - 1) / unit * unit
		if fits(m) {
			return m
		}
	}
	return (lo + seg - 1) / seg * seg
}

// ErrSetting is wrapped by the errors of ParseSize and ParseTimeout.
var ErrSetting = errors.New("invalid setting value")

// ParseSize reads a size as postgresql.conf spells it: 1GB, 512MB, 64kB,
// 16MB; a bare number is in MB (max_wal_size's unit).
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suf string
		mul uint64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}, {"B", 1}}
	mul := uint64(1 << 20)
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.mul
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: size %q (a whole number with B, kB, MB, GB or TB)", ErrSetting, s)
	}
	return n * mul, nil
}

// ParseTimeout reads a time as postgresql.conf spells it: 30s, 5min, 1h,
// 1d, 500ms; a bare number is in seconds (checkpoint_timeout's unit).
func ParseTimeout(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suf string
		mul time.Duration
	}{{"ms", time.Millisecond}, {"min", time.Minute}, {"s", time.Second}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	mul := time.Second
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.mul
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: time %q (a whole number with s, min, h or d)", ErrSetting, s)
	}
	return time.Duration(n) * mul, nil
}

// FormatSize writes a size as postgresql.conf would: in the largest unit
// that divides it.
func FormatSize(b uint64) string {
	for _, u := range []struct {
		suf string
		mul uint64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if b >= u.mul && b%u.mul == 0 {
			return strconv.FormatUint(b/u.mul, 10) + u.suf
		}
	}
	return strconv.FormatUint(b, 10) + "B"
}

// FormatTimeout writes a time as postgresql.conf would: in the largest unit
// that divides it.
func FormatTimeout(d time.Duration) string {
	for _, u := range []struct {
		suf string
		mul time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}} {
		if d >= u.mul && d%u.mul == 0 {
			return strconv.FormatInt(int64(d/u.mul), 10) + u.suf
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
