package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/whatif"
)

// settingsFixture is the archive of fixtures/whatif-settings/NAME: real
// PostgreSQL 15 WAL of pgbench under max_wal_size=32MB (wal-32MB) or
// checkpoint_timeout=60s (paced-time-60s).
func settingsFixture(t *testing.T, name string) string {
	return filepath.Join(testwal.Root(t), "fixtures", "whatif-settings", name, "archive.tar.zst")
}

// TestStatsCheckpointCause: stats --by checkpoint tells why each checkpoint
// began as the server logged it (fixtures/whatif-settings/*/run.json): the
// pre-run CHECKPOINT, then max_wal_size's or checkpoint_timeout's, then the
// CHECKPOINT after the run.
func TestStatsCheckpointCause(t *testing.T) {
	for _, c := range []struct{ run, want string }{
		{"wal-32MB", "requested wal wal requested"},
		{"paced-time-60s", "unknown time time requested"},
	} {
		out, stderr, code := walscope(t, "", "stats", "--by", "checkpoint", "--format", "json", settingsFixture(t, c.run))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.run, code, stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%s: %v\n%s", c.run, err, out)
		}
		var got []string
		for _, r := range rows {
			if r["kind"] != "before first redo" {
				got = append(got, r["cause"].(string))
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: causes %v, want %s", c.run, got, c.want)
		}
	}
}

// TestCheckpointCauseRecords: the causes the records tell, on fixtures
// whose facts pg_waldump shows: fixtures/incident's base backup (its
// history file archive/000000010000000000000008.00000028.backup starts at
// 0/800028, the redo point of pg_backup_start's checkpoint), and
// fixtures/pg15-replica-pglz-k-tl's promotion (END_OF_RECOVERY at
// 0/11000A0, then the checkpoint with redo 0/11000D0; before it the
// CHECKPOINT_SHUTDOWN of 0/1100028).
func TestCheckpointCauseRecords(t *testing.T) {
	for _, c := range []struct{ fixture, redo, want string }{
		{"incident", "0/800028", "backup"},
		{"pg15-replica-pglz-k-tl", "0/11000D0", "end-of-recovery"},
		{"pg15-replica-pglz-k-tl", "0/1100028", "shutdown"},
	} {
		out, stderr, code := walscope(t, "", "stats", "--by", "checkpoint", "--format", "json",
			filepath.Join(testwal.Root(t), "fixtures", c.fixture, "archive.tar.zst"))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.fixture, code, stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		got := "(no such redo point)"
		for _, r := range rows {
			if r["redo_lsn"] == c.redo {
				got = r["cause"].(string)
			}
		}
		if got != c.want {
			t.Errorf("%s: checkpoint at %s: %s, want %s", c.fixture, c.redo, got, c.want)
		}
	}
}

// TestWhatIfSettingsFlags: the scenarios asked for are the ones given, in
// JSON with their settings and checkpoint counts, and the settings the WAL
// does not show are listed as assumed.
func TestWhatIfSettingsFlags(t *testing.T) {
	out, stderr, code := walscope(t, "", "whatif", "--format", "json", "--max-wal-size", "8MB,64MB", "--checkpoint-timeout", "1h",
		settingsFixture(t, "wal-32MB"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Actual    whatif.Scenario   `json:"actual"`
		Scenarios []whatif.Scenario `json:"scenarios"`
		Assumed   []string          `json:"assumed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]whatif.Scenario{}
	for _, s := range res.Scenarios {
		got[s.Setting+"="+s.Value] = s
	}
	// The run with max_wal_size=8MB checkpointed 23 times, with 64MB not
	// at all (fixtures/whatif-settings/*/run.json); these counts take in the
	// CHECKPOINTs before and after the run too.
	for _, c := range []struct {
		key       string
		min, maxN int
	}{{"max_wal_size=8MB", 23, 27}, {"max_wal_size=64MB", 2, 3}, {"checkpoint_timeout=1h", 4, 5}, {"max_wal_size+checkpoint_timeout=8MB,1h", 23, 27}} {
		s, ok := got[c.key]
		if !ok {
			t.Errorf("no scenario %s in %v", c.key, got)
			continue
		}
		if s.Checkpoints < c.min || s.Checkpoints > c.maxN || s.PgWALBytes == 0 || s.CheckpointTimeout == "" {
			t.Errorf("%s: %d checkpoints, pg_wal %d, timeout %q", c.key, s.Checkpoints, s.PgWALBytes, s.CheckpointTimeout)
		}
	}
	if res.Actual.MaxWALSize != "32MB" || res.Actual.CheckpointsByCause["wal"] != 2 {
		t.Errorf("actual: max_wal_size %q, causes %v", res.Actual.MaxWALSize, res.Actual.CheckpointsByCause)
	}
	if strings.Contains(strings.Join(res.Assumed, " "), "max_wal_size") || !strings.Contains(strings.Join(res.Assumed, " "), "checkpoint_timeout") {
		t.Errorf("assumed %v: max_wal_size shows in the WAL, checkpoint_timeout does not", res.Assumed)
	}
	if _, stderr, code := walscope(t, "", "whatif", "--max-wal-size", "lots", settingsFixture(t, "wal-32MB")); code != exitUsage || !strings.Contains(stderr, "--max-wal-size") {
		t.Errorf("--max-wal-size lots: exit %d, %q", code, stderr)
	}
}

// TestAdvise: on the run whose checkpoints max_wal_size=32MB forced, advise
// raises max_wal_size, keeps full_page_writes on, and advises a
// wal_compression method that shrinks the images.
func TestAdvise(t *testing.T) {
	out, stderr, code := walscope(t, "", "advise", "--format", "json", settingsFixture(t, "wal-32MB"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var a whatif.Advice
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	rec := map[string]whatif.Recommendation{}
	for _, r := range a.Recommendations {
		rec[r.Setting] = r
	}
	mws := rec["max_wal_size"]
	if adv, err := whatif.ParseSize(mws.Advised); err != nil || adv <= 32<<20 || mws.Current != "32MB" || mws.Predicted.CheckpointsPerHour >= a.Now.CheckpointsPerHour {
		t.Errorf("max_wal_size: %+v (now %+v)", mws, a.Now)
	}
	if r := rec["full_page_writes"]; r.Advised != "on" || !strings.Contains(r.Why, "torn") || r.Predicted.WALBytesPerDay >= a.Now.WALBytesPerDay {
		t.Errorf("full_page_writes: %+v", r)
	}
	if r := rec["wal_compression"]; r.Current != "off" || r.Advised == "off" || r.Predicted.ImageShare >= a.Now.ImageShare {
		t.Errorf("wal_compression: %+v", r)
	}
	if a.CheckpointCause["wal"] != 2 || a.Now.WALBytesPerDay <= 0 {
		t.Errorf("causes %v, now %+v", a.CheckpointCause, a.Now)
	}
	text, _, code := walscope(t, "", "advise", settingsFixture(t, "wal-32MB"))
	if code != 0 || !strings.Contains(text, "checkpoint_timeout=5min (assumed)") || !strings.Contains(text, "max_wal_size "+mws.Advised+":") {
		t.Errorf("text: exit %d\n%s", code, text)
	}
}

// TestReportAdvice: the report carries advise's section and the causes of
// the checkpoints.
func TestReportAdvice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	if _, stderr, code := walscope(t, "", "report", "--quiet", "--out", out, settingsFixture(t, "wal-32MB")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{`id="advice"`, "<td>max_wal_size</td><td>32MB</td>", "<td>wal</td>", "<td>requested</td>", "must stay on"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %q", want)
		}
	}
}
