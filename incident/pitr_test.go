package incident

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestScanPITRPartsEqualSequential: on fixtures/incident, the scan read in
// parallel spans of one segment finds exactly what one reader finds: the
// same events, commits and aborts, backup ends and files touched.
func TestScanPITRPartsEqualSequential(t *testing.T) {
	dir, ok := waltest.FixtureSet(t, "incident")
	if !ok {
		t.Skip("fixtures/incident not present")
	}
	src, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	opts := xlog.Options{FollowHistory: true}
	one, err := ScanPITR(src, opts, PITRScanConfig{Events: EventsConfig{MinRows: 1}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	par, err := ScanPITR(src, opts, PITRScanConfig{Events: EventsConfig{MinRows: 1}, Workers: 3, SpanBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Ends) < 50 || len(one.BackupEnds) != 1 || len(one.List) < 10 || len(one.Problems) != 0 {
		t.Fatalf("%d ends, %d backup ends, %d events, problems %v", len(one.Ends), len(one.BackupEnds), len(one.List), one.Problems)
	}
	if !reflect.DeepEqual(one.Ends, par.Ends) || !reflect.DeepEqual(one.BackupEnds, par.BackupEnds) ||
		!reflect.DeepEqual(one.List, par.List) || !reflect.DeepEqual(one.Touched, par.Touched) ||
		one.First != par.First || one.Last != par.Last || one.Records != par.Records {
		t.Fatalf("parallel scan differs from one reader's")
	}
	// the BACKUP_END record names the backup's start and ends at the
	// .backup file's STOP WAL LOCATION
	b, err := backup.ReadBackupLabel(filepath.Join(dir, "archive", "000000010000000000000008.00000028.backup"))
	if err != nil {
		t.Fatal(err)
	}
	if b.StartLSN != 0x800028 || b.CheckpointLSN != 0x800060 || b.StartTLI != 1 || b.StopLSN != 0x8334E8 ||
		b.StartSegment != "000000010000000000000008" || b.Label != "fixture" {
		t.Fatalf("backup label %+v", b)
	}
	if e := one.BackupEnds[0]; e.Start != b.StartLSN || e.EndLSN != b.StopLSN {
		t.Fatalf("BACKUP_END %+v, label %+v", e, b)
	}
}

// TestParseBackupLabelErrors: a label without START WAL LOCATION is refused;
// a label before PostgreSQL 11 (no START TIMELINE) takes it from the file
// name.
func TestParseBackupLabelErrors(t *testing.T) {
	if _, err := backup.ParseBackupLabel("LABEL: x\n"); err == nil {
		t.Error("no START WAL LOCATION: no error")
	}
	b, err := backup.ParseBackupLabel("START WAL LOCATION: 0/2000028 (file 000000030000000000000002)\nCHECKPOINT LOCATION: 0/2000060\n")
	if err != nil || b.StartTLI != 3 || b.StartLSN != 0x2000028 {
		t.Errorf("%+v %v", b, err)
	}
	if _, err := backup.ReadBackupLabel(t.TempDir()); err == nil {
		t.Error("an empty directory: no error")
	}
	f := filepath.Join(t.TempDir(), "x.backup")
	os.WriteFile(f, []byte("garbage\n"), 0o644)
	if _, err := backup.ReadBackupLabel(f); err == nil {
		t.Error("garbage: no error")
	}
}
