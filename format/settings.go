package format

import (
	"strconv"
	"strings"

	"github.com/walscope/walscope/whatif"
)

// SettingsNote is one line naming the checkpoint settings taken for a
// stream: given, shown by the spacing of its checkpoints, or (marked)
// assumed.
func SettingsNote(s whatif.CheckpointSettings, assumed []string) string {
	guess := map[string]bool{}
	for _, a := range assumed {
		guess[a] = true
	}
	var b strings.Builder
	b.WriteString("# the stream's settings:")
	for _, kv := range [][2]string{
		{"max_wal_size", whatif.FormatSize(s.MaxWALSize)},
		{"checkpoint_timeout", whatif.FormatTimeout(s.Timeout)},
		{"checkpoint_completion_target", strconv.FormatFloat(s.CompletionTarget, 'g', -1, 64)},
		{"min_wal_size", whatif.FormatSize(s.MinWALSize)},
		{"wal_keep_size", whatif.FormatSize(s.WALKeepSize)},
	} {
		b.WriteString(" " + kv[0] + "=" + kv[1])
		if guess[kv[0]] {
			b.WriteString(" (assumed)")
		}
	}
	return b.String()
}

// AdviceTable is walscope advise's table: the stream now, then one row per
// setting with the value advised and its predicted effect.
func AdviceTable(a *whatif.Advice) *Table {
	t := &Table{Columns: []string{"setting", "current", "advised", "wal_bytes_per_day", "image_share", "checkpoints_per_hour", "pg_wal_bytes"},
		Numeric: []bool{false, false, false, true, true, true, true}}
	row := func(setting, cur, adv string, p whatif.Projection) {
		t.Rows = append(t.Rows, []string{setting, cur, adv, strconv.FormatFloat(p.WALBytesPerDay, 'f', 0, 64),
			strconv.FormatFloat(p.ImageShare, 'f', 3, 64), strconv.FormatFloat(p.CheckpointsPerHour, 'f', 1, 64),
			strconv.FormatUint(p.PgWALBytes, 10)})
	}
	row("(now)", "", "", a.Now)
	for _, r := range a.Recommendations {
		row(r.Setting, r.Current, r.Advised, r.Predicted)
	}
	return t
}
