package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// incidentPITR extracts fixtures/incident: its archive directory, the
// catalog, the facts and pg_waldump 15's records.
func incidentPITR(t *testing.T) (archive, catalog string, facts []map[string]any, ref string) {
	t.Helper()
	root := testwal.Root(t)
	fx := filepath.Join(root, "fixtures", "incident")
	if _, err := os.Stat(filepath.Join(fx, "archive.tar.zst")); err != nil {
		t.Skip("fixtures/incident not present")
	}
	dir := testwal.Extract(t, testwal.Set{Name: "fixtures/incident", Dir: fx})
	raw, err := os.ReadFile(filepath.Join(fx, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	refb, err := os.ReadFile(filepath.Join(dir, "ref", "records-00000001.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "archive"), filepath.Join(fx, "catalog.csv"), facts, string(refb)
}

type pitrOut struct {
	Event struct {
		Kind        string  `json:"kind"`
		Relation    *string `json:"relation"`
		Relfilenode *uint32 `json:"relfilenode"`
		XID         *uint32 `json:"xid"`
		LSN         string  `json:"lsn"`
		CommitLSN   string  `json:"commit_lsn"`
		CommitTime  *string `json:"commit_time"`
	} `json:"event"`
	Target struct {
		LSN       string  `json:"recovery_target_lsn"`
		XID       *string `json:"recovery_target_xid"`
		Time      *string `json:"recovery_target_time"`
		Inclusive bool    `json:"recovery_target_inclusive"`
		Timeline  string  `json:"recovery_target_timeline"`
	} `json:"target"`
	Reachable *bool    `json:"reachable"`
	Reasons   []string `json:"reasons"`
	Missing   []string `json:"missing"`
	WALNeeded struct {
		First     *string  `json:"first"`
		Last      *string  `json:"last"`
		Timelines []uint32 `json:"timelines"`
	} `json:"wal_needed"`
	Window struct {
		Earliest struct {
			LSN  *string `json:"lsn"`
			Time *string `json:"time"`
		} `json:"earliest"`
		LatestCommit *struct {
			LSN  *string `json:"lsn"`
			Time *string `json:"time"`
		} `json:"latest_commit"`
	} `json:"window"`
}

func runPITR(t *testing.T, args ...string) pitrOut {
	t.Helper()
	out, stderr, code := walscope(t, "", append([]string{"pitr", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("pitr %v: exit %d: %s", args, code, stderr)
	}
	var p pitrOut
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return p
}

// refCommit is the LSN and time of the COMMIT record of xid in pg_waldump's
// output.
func refCommit(t *testing.T, ref string, xid uint32) (string, string) {
	t.Helper()
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^rmgr: Transaction .*tx:\s+%d, lsn: (\S+), prev \S+, desc: COMMIT (\S+ \S+) UTC`, xid))
	m := re.FindStringSubmatch(ref)
	if m == nil {
		t.Fatalf("no COMMIT of xid %d in pg_waldump's output", xid)
	}
	// pg_waldump prints 0/00930FE0
	hi, lo, _ := strings.Cut(m[1], "/")
	lo = strings.TrimLeft(lo, "0")
	if lo == "" {
		lo = "0"
	}
	return hi + "/" + lo, m[2]
}

// TestPITRIncident: for every incident of fixtures/incident (a DELETE in a
// subtransaction, TRUNCATE, VACUUM FULL, DROP TABLE, a large UPDATE), the
// target pitr prints is the server's xid (the top level's for the
// subtransaction), and the LSN and time of that xid's COMMIT record as
// pg_waldump 15 prints it, which are the commit time PostgreSQL gave
// (pg_xact_commit_timestamp); the text form is the settings to paste.
func TestPITRIncident(t *testing.T) {
	archive, catalog, facts, ref := incidentPITR(t)
	cases := map[string][]string{
		"delete":      {"--relation", "customers", "--event", "delete"},
		"truncate":    {"--relation", "public.audit", "--event", "truncate"},
		"vacuum_full": {"--relation", "app.orders", "--event", "rewrite"},
		"drop_table":  {"--relation", "orders", "--event", "drop"},
		"update":      {"--relation", "orders", "--event", "update"},
	}
	checked := 0
	for _, f := range facts {
		kind := f["kind"].(string)
		args, ok := cases[kind]
		if !ok || f["xact_status"] != "committed" {
			continue
		}
		checked++
		t.Run(kind, func(t *testing.T) {
			xid := uint32(f["xid"].(float64))
			p := runPITR(t, append(args, "--catalog", catalog, archive)...)
			lsn, tm := refCommit(t, ref, xid)
			ct, err := time.Parse("2006-01-02T15:04:05.999999Z07:00", f["commit_time"].(string))
			if err != nil {
				t.Fatal(err)
			}
			wantTime := ct.UTC().Format("2006-01-02 15:04:05.000000") + "+00"
			if !strings.HasPrefix(wantTime, tm) {
				t.Fatalf("pg_waldump's commit time %s, the server's %s", tm, wantTime)
			}
			switch {
			case p.Event.XID == nil || *p.Event.XID != xid:
				t.Errorf("xid %v, want %d", p.Event.XID, xid)
			case p.Event.CommitLSN != lsn || p.Target.LSN != lsn:
				t.Errorf("commit LSN %s, target %s, want %s", p.Event.CommitLSN, p.Target.LSN, lsn)
			case p.Event.CommitTime == nil || *p.Event.CommitTime != wantTime || p.Target.Time == nil || *p.Target.Time != wantTime:
				t.Errorf("commit time %v, target %v, want %s", p.Event.CommitTime, p.Target.Time, wantTime)
			case p.Target.XID == nil || *p.Target.XID != fmt.Sprint(xid):
				t.Errorf("recovery_target_xid %v, want %d", p.Target.XID, xid)
			case p.Target.Inclusive || p.Target.Timeline != "1":
				t.Errorf("inclusive %v, timeline %s", p.Target.Inclusive, p.Target.Timeline)
			case p.Reachable != nil:
				t.Errorf("reachable %v without --backup", *p.Reachable)
			case p.Event.Relation == nil || !strings.HasSuffix(*p.Event.Relation, "."+f["relname"].(string)):
				t.Errorf("relation %v, want %s", p.Event.Relation, f["relname"])
			}
			// --target picks the line printed uncommented
			for _, tc := range []struct{ target, line string }{
				{"lsn", "recovery_target_lsn = '" + lsn + "'"},
				{"xid", fmt.Sprintf("recovery_target_xid = '%d'", xid)},
				{"time", "recovery_target_time = '" + wantTime + "'"},
			} {
				out, stderr, code := walscope(t, "", append([]string{"pitr", "--target", tc.target, "--catalog", catalog}, append(args, archive)...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) < 6 || !strings.HasPrefix(lines[0], "# ") || lines[1] != tc.line ||
					lines[2] != "recovery_target_inclusive = false" || lines[3] != "recovery_target_timeline = '1'" {
					t.Fatalf("--target %s:\n%s", tc.target, out)
				}
				alts := 0
				for _, l := range lines[4:] {
					if strings.HasPrefix(l, "# or: recovery_target_") {
						alts++
					}
				}
				if alts != 2 {
					t.Errorf("--target %s: %d alternatives:\n%s", tc.target, alts, out)
				}
			}
		})
	}
	if checked != 5 {
		t.Errorf("%d incident facts checked, want 5", checked)
	}
}

// TestPITRBackup: with the archive's .backup file, every incident is
// reachable and needs the WAL from the backup's start segment; the earliest
// point is the end of the backup's BACKUP_END record (STOP WAL LOCATION).
// With a segment between the backup and the target deleted from a copy of
// the archive, the target is unreachable and that segment is named. A
// target before the backup is consistent is unreachable with the reason.
// A backup_label in a pg_basebackup tar (plain, gzip, zstd, lz4) and in a data
// directory gives the same answer, the consistent point found from the
// BACKUP_END record in the WAL.
func TestPITRBackup(t *testing.T) {
	archive, catalog, _, _ := incidentPITR(t)
	backup := filepath.Join(archive, "000000010000000000000008.00000028.backup")
	p := runPITR(t, "--relation", "orders", "--event", "drop", "--catalog", catalog, "--backup", backup, archive)
	if p.Reachable == nil || !*p.Reachable || len(p.Missing) != 0 {
		t.Fatalf("reachable %v, missing %v, reasons %v", p.Reachable, p.Missing, p.Reasons)
	}
	if p.WALNeeded.First == nil || *p.WALNeeded.First != "000000010000000000000008" ||
		p.WALNeeded.Last == nil || *p.WALNeeded.Last != "00000001000000000000000A" || len(p.WALNeeded.Timelines) != 1 || p.WALNeeded.Timelines[0] != 1 {
		t.Errorf("wal_needed %v %v %v", p.WALNeeded.First, p.WALNeeded.Last, p.WALNeeded.Timelines)
	}
	if p.Window.Earliest.LSN == nil || *p.Window.Earliest.LSN != "0/8334E8" {
		t.Errorf("earliest %v, want the STOP WAL LOCATION 0/8334E8", p.Window.Earliest.LSN)
	}
	if p.Window.LatestCommit == nil || p.Window.LatestCommit.LSN == nil {
		t.Errorf("no latest commit")
	}

	// a segment between the backup and the target removed
	gap := t.TempDir()
	ents, _ := os.ReadDir(archive)
	for _, e := range ents {
		if e.Name() == "000000010000000000000009" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(archive, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(gap, e.Name()), b, 0o644)
	}
	p = runPITR(t, "--relation", "orders", "--event", "drop", "--catalog", catalog, "--backup", filepath.Join(gap, filepath.Base(backup)), gap)
	if p.Reachable == nil || *p.Reachable || len(p.Missing) != 1 || p.Missing[0] != "000000010000000000000009" {
		t.Fatalf("with 9 removed: reachable %v, missing %v, reasons %v", p.Reachable, p.Missing, p.Reasons)
	}
	if p.Event.XID == nil || *p.Event.XID != 771 {
		t.Errorf("with 9 removed: xid %v, want 771 (the reading goes on after the gap)", p.Event.XID)
	}

	// a target before the backup's consistent point
	p = runPITR(t, "--target-lsn", "0/820000", "--backup", backup, archive)
	if p.Reachable == nil || *p.Reachable || len(p.Reasons) == 0 || !strings.Contains(strings.Join(p.Reasons, " "), "before the backup's consistent point 0/8334E8") {
		t.Fatalf("target before consistency: reachable %v, reasons %v", p.Reachable, p.Reasons)
	}
	// the restore point after the backup: reachable
	p = runPITR(t, "--target-name", "before-incident", "--backup", backup, archive)
	if p.Reachable == nil || !*p.Reachable || p.Event.CommitLSN != "0/900028" {
		t.Fatalf("restore point: reachable %v, at %s, reasons %v", p.Reachable, p.Event.CommitLSN, p.Reasons)
	}

	// backup_label as pg_basebackup writes it (no STOP lines), in a tar,
	// compressed or not, and in a directory
	raw, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	var label strings.Builder
	for _, l := range strings.SplitAfter(string(raw), "\n") {
		if !strings.HasPrefix(l, "STOP ") {
			label.WriteString(l)
		}
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, m := range []struct{ name, body string }{{"PG_VERSION", "15\n"}, {"backup_label", label.String()}, {"global/pg_control", strings.Repeat("\x00", 8192)}} {
		tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o600, Size: int64(len(m.body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(m.body))
	}
	tw.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.tar"), tb.Bytes(), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tb.Bytes())
	zw.Close()
	os.WriteFile(filepath.Join(dir, "base.tar.gz"), gz.Bytes(), 0o644)
	enc, _ := zstd.NewWriter(nil)
	os.WriteFile(filepath.Join(dir, "base.tar.zst"), enc.EncodeAll(tb.Bytes(), nil), 0o644)
	var lz bytes.Buffer
	lw := lz4.NewWriter(&lz)
	lw.Write(tb.Bytes())
	lw.Close()
	os.WriteFile(filepath.Join(dir, "base.tar.lz4"), lz.Bytes(), 0o644)
	datadir := filepath.Join(dir, "data")
	os.MkdirAll(datadir, 0o755)
	os.WriteFile(filepath.Join(datadir, "backup_label"), []byte(label.String()), 0o644)
	for _, b := range []string{"base.tar", "base.tar.gz", "base.tar.zst", "base.tar.lz4", "data"} {
		p := runPITR(t, "--relation", "customers", "--catalog", catalog, "--backup", filepath.Join(dir, b), archive)
		if p.Reachable == nil || !*p.Reachable || p.Window.Earliest.LSN == nil || *p.Window.Earliest.LSN != "0/8334E8" ||
			*p.WALNeeded.First != "000000010000000000000008" || *p.WALNeeded.Last != "000000010000000000000009" {
			t.Errorf("--backup %s: reachable %v earliest %v needed %v..%v reasons %v", b, p.Reachable, p.Window.Earliest.LSN, *p.WALNeeded.First, *p.WALNeeded.Last, p.Reasons)
		}
	}
}

// TestPITRHandTargets: targets given by hand fall where PostgreSQL would
// stop: an xid before its commit record, a time before the first commit at
// or after it, an LSN before the first record at or after it.
func TestPITRHandTargets(t *testing.T) {
	archive, _, _, ref := incidentPITR(t)
	lsn, _ := refCommit(t, ref, 771)
	p := runPITR(t, "--target-xid", "771", archive)
	if p.Event.CommitLSN != lsn || p.Target.LSN != lsn {
		t.Errorf("xid 771: stops at %s, want %s", p.Event.CommitLSN, lsn)
	}
	p = runPITR(t, "--target-time", "2026-12-01 15:51:45.058104+00", archive)
	if p.Event.CommitLSN != lsn || p.Event.XID == nil || *p.Event.XID != 771 {
		t.Errorf("time of xid 771's commit: stops at %s (xid %v), want %s", p.Event.CommitLSN, p.Event.XID, lsn)
	}
	p = runPITR(t, "--target-lsn", lsn, archive)
	if p.Event.CommitLSN != lsn {
		t.Errorf("LSN %s: stops at %s", lsn, p.Event.CommitLSN)
	}
	if _, _, code := walscope(t, "", "pitr", "--target-name", "no-such-point", archive); code != 1 {
		t.Errorf("unknown restore point: exit %d, want 1", code)
	}
	if _, _, code := walscope(t, "", "pitr", "--target-xid", "4000000", archive); code != 1 {
		t.Errorf("unknown xid: exit %d, want 1", code)
	}
}

// TestPITRBadQuestions: a relation the WAL never touches, or no such event
// in the range read: exit 1 and one line saying what was searched; a name
// matching several relations: exit 2, listing them.
func TestPITRBadQuestions(t *testing.T) {
	archive, catalog, _, _ := incidentPITR(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--relation", "no_such_table"}, 1, "never touches it (searched WAL 0/600100 to "},
		{[]string{"--relation", "99999"}, 1, "never touches it"},
		{[]string{"--relation", "customers", "--event", "drop"}, 1, "no committed drop event of relation customers (searched WAL "},
		{[]string{"--relation", "customers", "-e", "0/900000"}, 1, "(searched WAL 0/600100 to 0/900000, commits "},
		{[]string{"--relation", "customers", "--database", "4"}, 1, "never touches it"},
	} {
		out, stderr, code := walscope(t, "", append(append([]string{"pitr", "--catalog", catalog}, tc.args...), archive)...)
		if code != tc.code || out != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
	// a catalog naming another file of the database app.customers'
	// namesake in another schema
	raw, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	amb := filepath.Join(t.TempDir(), "catalog.csv")
	os.WriteFile(amb, []byte(strings.Replace(string(raw), "5,0,16428,public,heartbeat\n", "5,0,16428,other,customers\n", 1)), 0o644)
	_, stderr, code := walscope(t, "", "pitr", "--catalog", amb, "--relation", "customers", archive)
	if code != 2 || !strings.Contains(stderr, "app.customers (database 5)") || !strings.Contains(stderr, "other.customers (database 5)") {
		t.Errorf("ambiguous name: exit %d, %q", code, stderr)
	}
	if _, stderr, code := walscope(t, "", "pitr", "--catalog", amb, "--relation", "app.customers", archive); code != 0 {
		t.Errorf("schema.name: exit %d, %q", code, stderr)
	}
	if _, _, code := walscope(t, "", "pitr", archive); code != 2 {
		t.Errorf("no relation and no target: exit %d, want 2", code)
	}
}

// TestPITRNoEventInDamagedWAL: where no event is found but the reading met
// damage, pitr says so with the class, file and LSN, since the event may be
// in the WAL not read (it said only "no committed event", or "the WAL read
// never touches it" when the first file was a cut gzip file).
func TestPITRNoEventInDamagedWAL(t *testing.T) {
	cut := t.TempDir()
	archivetest.Plain(t, sampleWAL(t), cut)
	seg := filepath.Join(cut, "000000010000000000000007")
	if err := os.Truncate(seg, 100000); err != nil {
		t.Fatal(err)
	}
	gz := t.TempDir()
	b, err := os.ReadFile(filepath.Join(sampleWAL(t), "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	gzSeg := filepath.Join(gz, "000000010000000000000006.gz")
	if err := os.WriteFile(gzSeg, buf.Bytes()[:30000], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, says string }{
		{cut, "no committed drop/truncate/rewrite/delete/update event of relation bt_k"},
		{gz, "relation bt_k: the WAL read never touches it"},
	} {
		_, stderr, code := walscope(t, "", "pitr", "-R", "bt_k", tc.dir)
		file := seg
		class := "truncated-segment"
		if tc.dir == gz {
			file, class = gzSeg, "corrupt-archive-file"
		}
		if code != exitProblem || !strings.Contains(stderr, tc.says) ||
			!strings.Contains(stderr, "so the event may be in WAL not read; the first: "+class+" at ") || !strings.Contains(stderr, " in "+file+": ") {
			t.Errorf("%s: exit %d, want %d naming %s in %s: %s", tc.dir, code, exitProblem, class, file, stderr)
		}
	}
	// The same question over whole WAL has no such note.
	if _, stderr, code := walscope(t, "", "pitr", "-R", "bt_k", sampleWAL(t)); code != exitProblem || strings.Contains(stderr, "not read") {
		t.Errorf("whole WAL: exit %d: %s", code, stderr)
	}
}
