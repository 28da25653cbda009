package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// embeddedBin is the bin directory of a PostgreSQL server of major version
// major: Debian's 15, the other majors from scripts/embedded-pg.sh
// (WALSCOPE_EMBEDDED_PG, /opt/walscope/embedded-pg or
// ~/.cache/walscope/embedded-pg); "" and why not.
func embeddedBin(major int) (string, string) {
	var cands []string
	if major == 15 {
		cands = append(cands, pg15Bin())
	}
	roots := []string{os.Getenv("WALSCOPE_EMBEDDED_PG"), "/opt/walscope/embedded-pg"}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".cache", "walscope", "embedded-pg"))
	}
	for _, r := range roots {
		if r != "" {
			cands = append(cands, filepath.Join(r, strconv.Itoa(major), "bin"))
		}
	}
	for _, d := range cands {
		out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output()
		if err == nil && strings.Contains(string(out), fmt.Sprintf("PostgreSQL) %d.", major)) {
			return d, ""
		}
	}
	return "", fmt.Sprintf("PostgreSQL %d not installed: run scripts/embedded-pg.sh %d", major, major)
}

// asPG runs a command line as the server's user.
func asPG(line string) ([]byte, error) {
	if os.Getuid() == 0 {
		return exec.Command("su", "postgres", "-s", "/bin/bash", "-c", line).CombinedOutput()
	}
	return exec.Command("bash", "-c", line).CombinedOutput()
}

// miniServer is a cluster of its own in a temporary directory, started.
type miniServer struct {
	bin, data, sock string
}

func startMini(t *testing.T, bin, initdbArgs string) *miniServer {
	t.Helper()
	if os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			skipOrFail(t, "running as root and there is no postgres user to run the server as")
		}
	}
	root, err := os.MkdirTemp("", "wsbkctl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	s := &miniServer{bin: bin, data: filepath.Join(root, "data"), sock: root}
	if out, err := asPG(fmt.Sprintf("%s -D %s -A trust -U postgres -N %s", shq(filepath.Join(bin, "initdb")), shq(s.data), initdbArgs)); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = ''\nunix_socket_directories = '%s'\nport = 5433\nfsync = off\nautovacuum = off\ncheckpoint_timeout = 1h\n", s.sock)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf)
	f.Close()
	logf := filepath.Join(root, "server.log")
	if out, err := asPG(fmt.Sprintf("%s -D %s -l %s -w -t 60 start", shq(filepath.Join(bin, "pg_ctl")), shq(s.data), shq(logf))); err != nil {
		log, _ := os.ReadFile(logf)
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		asPG(fmt.Sprintf("%s -D %s -m immediate -w stop", shq(filepath.Join(bin, "pg_ctl")), shq(s.data)))
	})
	return s
}

// value runs one query (with PostgreSQL 15's psql) and returns its value.
func (s *miniServer) value(t *testing.T, q string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(pg15Bin(), "psql"), "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-h", s.sock, "-p", "5433", "-U", "postgres", "-d", "postgres", "-c", q)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", q, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// TestControlVersions reads global/pg_control of a cluster of each major
// version 10 to 18 and compares every field with what the running server
// says of it: pg_control_system(), pg_control_checkpoint(),
// pg_control_init(), pg_control_recovery() and the settings pg_control
// records (current_setting). The file is copied after a CHECKPOINT with
// nothing running, between two identical readings of the functions.
func TestControlVersions(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pg15Bin(), "psql")); err != nil {
		skipOrFail(t, "psql of PostgreSQL 15 not found in "+pg15Bin())
	}
	for major := 10; major <= 18; major++ {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			bin, why := embeddedBin(major)
			if bin == "" {
				skipOrFail(t, why)
			}
			args := ""
			if major%2 == 0 {
				args = "-k" // checksums on in every other version
			}
			s := startMini(t, bin, args)
			s.value(t, "checkpoint")
			query := `select row_to_json(x)::text from (select * from pg_control_system(), pg_control_checkpoint(), pg_control_init(), pg_control_recovery()) x`
			before := s.value(t, query)
			raw, err := os.ReadFile(filepath.Join(s.data, "global", "pg_control"))
			if err != nil {
				t.Fatal(err)
			}
			if after := s.value(t, query); after != before {
				t.Fatalf("pg_control changed while it was copied:\n%s\n%s", before, after)
			}
			c, err := ParseControlFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			dec := json.NewDecoder(strings.NewReader(before))
			dec.UseNumber() // system_identifier does not fit a float64
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			setting := func(n string) string { return s.value(t, "select current_setting('"+n+"')") }
			compareControl(t, c, want, setting, major)
			if c.MajorVersion() != major {
				t.Errorf("MajorVersion %d", c.MajorVersion())
			}
			// one bit flipped anywhere before the CRC is found
			bad := append([]byte(nil), raw...)
			bad[40] ^= 1
			if _, err := ParseControlFile(bad); !errors.Is(err, ErrDamaged) {
				t.Errorf("a flipped bit: %v, want ErrDamaged", err)
			}
		})
	}
}

func compareControl(t *testing.T, c *ControlFile, want map[string]any, setting func(string) string, major int) {
	t.Helper()
	k := c.CheckPointCopy
	str := func(v any) string {
		switch v := v.(type) {
		case json.Number:
			return v.String()
		case bool:
			return strconv.FormatBool(v)
		case nil:
			return "null"
		}
		return fmt.Sprint(v)
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	unix := func(tm time.Time) string { return strconv.FormatInt(tm.Unix(), 10) }
	got := map[string]string{
		"pg_control_version":            u(uint64(c.ControlVersion)),
		"catalog_version_no":            u(uint64(c.CatalogVersion)),
		"system_identifier":             u(c.SystemID),
		"pg_control_last_modified":      unix(c.Time),
		"checkpoint_lsn":                c.Checkpoint.String(),
		"prior_lsn":                     c.PrevCheckpoint.String(), // 10 only
		"redo_lsn":                      k.Redo.String(),
		"timeline_id":                   u(uint64(k.ThisTimeLineID)),
		"prev_timeline_id":              u(uint64(k.PrevTimeLineID)),
		"full_page_writes":              strconv.FormatBool(k.FullPageWrites),
		"next_xid":                      u(k.NextXID>>32) + ":" + u(k.NextXID&0xFFFFFFFF),
		"next_oid":                      u(uint64(k.NextOID)),
		"next_multixact_id":             u(uint64(k.NextMulti)),
		"next_multi_offset":             u(uint64(k.NextMultiOffset)),
		"oldest_xid":                    u(uint64(k.OldestXID)),
		"oldest_xid_dbid":               u(uint64(k.OldestXIDDB)),
		"oldest_active_xid":             u(uint64(k.OldestActiveXID)),
		"oldest_multi_xid":              u(uint64(k.OldestMulti)),
		"oldest_multi_dbid":             u(uint64(k.OldestMultiDB)),
		"oldest_commit_ts_xid":          u(uint64(k.OldestCommitTsXID)),
		"newest_commit_ts_xid":          u(uint64(k.NewestCommitTsXID)),
		"checkpoint_time":               unix(k.Time),
		"max_data_alignment":            u(uint64(c.MaxAlign)),
		"database_block_size":           u(uint64(c.BlockSize)),
		"blocks_per_segment":            u(uint64(c.RelSegSize)),
		"wal_block_size":                u(uint64(c.XLogBlockSize)),
		"bytes_per_wal_segment":         u(uint64(c.XLogSegSize)),
		"max_identifier_length":         u(uint64(c.NameDataLen)),
		"max_index_columns":             u(uint64(c.IndexMaxKeys)),
		"max_toast_chunk_size":          u(uint64(c.ToastMaxChunkSize)),
		"large_object_chunk_size":       u(uint64(c.LOBlockSize)),
		"float4_pass_by_value":          strconv.FormatBool(c.Float4ByVal),
		"float8_pass_by_value":          strconv.FormatBool(c.Float8ByVal),
		"data_page_checksum_version":    u(uint64(c.DataChecksumVersion)),
		"default_char_signedness":       strconv.FormatBool(c.DefaultCharSignedness),
		"min_recovery_end_lsn":          c.MinRecoveryPoint.String(),
		"min_recovery_end_timeline":     u(uint64(c.MinRecoveryPointTLI)),
		"backup_start_lsn":              c.BackupStartPoint.String(),
		"backup_end_lsn":                c.BackupEndPoint.String(),
		"end_of_backup_record_required": strconv.FormatBool(c.BackupEndRequired),
	}
	n := 0
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			if key != "redo_wal_file" && key != "bigint_timestamps" {
				t.Errorf("the server's %s is not compared", key)
			}
			continue
		}
		ws := str(w)
		if strings.HasSuffix(key, "_modified") || strings.HasSuffix(key, "_time") {
			tm, err := time.Parse("2006-01-02T15:04:05-07:00", ws)
			if err != nil {
				t.Errorf("%s: %q: %v", key, ws, err)
				continue
			}
			ws = unix(tm)
		}
		n++
		if g != ws {
			t.Errorf("%s: %s, the server says %s", key, g, ws)
		}
	}
	settings := map[string]string{
		"wal_level":                 c.WALLevel.String(),
		"wal_log_hints":             onOff(c.WALLogHints),
		"max_connections":           strconv.Itoa(int(c.MaxConnections)),
		"max_worker_processes":      strconv.Itoa(int(c.MaxWorkerProcesses)),
		"max_prepared_transactions": strconv.Itoa(int(c.MaxPreparedXacts)),
		"max_locks_per_transaction": strconv.Itoa(int(c.MaxLocksPerXact)),
		"track_commit_timestamp":    onOff(c.TrackCommitTimestamp),
	}
	if major >= 12 {
		settings["max_wal_senders"] = strconv.Itoa(int(c.MaxWALSenders))
	}
	for name, g := range settings {
		n++
		if w := setting(name); g != w {
			t.Errorf("setting %s: %s, the server says %s", name, g, w)
		}
	}
	if major >= 17 && k.WALLevel != c.WALLevel {
		t.Errorf("the checkpoint's wal_level %s, pg_control's %s", k.WALLevel, c.WALLevel)
	}
	if c.State != DBInProduction {
		t.Errorf("state %s", c.State)
	}
	if n < 40 {
		t.Errorf("compared %d fields", n)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
