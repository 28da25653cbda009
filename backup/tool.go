package backup

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/xlog"
)

// Backups in a backup tool's repository, read into the same BackupLabel as a
// backup_label:
//
//   - pgBackRest: a backup directory REPO/backup/<stanza>/<label> (its
//     backup.manifest, [backup] backup-lsn-start/-stop,
//     backup-archive-start/-stop, backup-timestamp-start/-stop, and the
//     backup_label it keeps in pg_data/ for the checkpoint), the stanza
//     directory REPO/backup/<stanza> (backup.info's [backup:current]: the
//     latest backup) or the repository REPO with one stanza;
//   - Barman: a backup directory BARMAN_HOME/<server>/base/<backup_id> (its
//     backup.info: begin_xlog, end_xlog, begin_wal, timeline, begin_time,
//     end_time, status), or the server directory (or its base/): the latest
//     backup whose status is DONE.

// pgBackRest's INI files: [section] then key=value, the values JSON.
func readPgBackRestINI(path string) (map[string]map[string]string, error) {
	return readPgBackRestINIIn(localTree{}, path)
}

// readPgBackRestINIIn reads a pgBackRest INI file of a tree.
func readPgBackRestINIIn(t Tree, path string) (map[string]map[string]string, error) {
	b, err := readTreeFile(t, path, 256<<20)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	var sec map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			name := l[1 : len(l)-1]
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			sec = out[name]
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || sec == nil {
			continue
		}
		sec[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}

// jsonStr is a pgBackRest value as a string: a JSON string unquoted, else
// the text (numbers, booleans).
func jsonStr(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

func isPgBackRestStanza(dir string) bool { return isPgBackRestStanzaIn(localTree{}, dir) }

func isPgBackRestStanzaIn(t Tree, dir string) bool {
	b, err := readTreeFile(t, t.Join(dir, "backup.info"), 256<<20)
	return err == nil && bytes.Contains(b, []byte("[backup:current]"))
}

// readPgBackRestStanza picks the latest backup of a stanza directory
// (backup.info's [backup:current], by backup-timestamp-stop then label).
func readPgBackRestStanza(dir string) (*BackupLabel, error) {
	return readPgBackRestStanzaIn(localTree{}, dir)
}

func readPgBackRestStanzaIn(t Tree, dir string) (*BackupLabel, error) {
	info, err := readPgBackRestINIIn(t, t.Join(dir, "backup.info"))
	if err != nil {
		return nil, err
	}
	type cand struct {
		label string
		stop  int64
	}
	var cands []cand
	for label, v := range info["backup:current"] {
		var m map[string]any
		if json.Unmarshal([]byte(v), &m) != nil {
			continue
		}
		stop, _ := m["backup-timestamp-stop"].(float64)
		cands = append(cands, cand{label, int64(stop)})
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("%s: pgBackRest stanza with no backup in backup.info", dir)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].stop != cands[j].stop {
			return cands[i].stop < cands[j].stop
		}
		return cands[i].label < cands[j].label
	})
	return readPgBackRestBackupIn(t, t.Join(dir, cands[len(cands)-1].label))
}

// readPgBackRestBackup reads a pgBackRest backup directory's backup.manifest
// (or backup.manifest.copy).
func readPgBackRestBackup(dir string) (*BackupLabel, error) {
	return readPgBackRestBackupIn(localTree{}, dir)
}

func readPgBackRestBackupIn(t Tree, dir string) (*BackupLabel, error) {
	mf := t.Join(dir, "backup.manifest")
	if _, err := t.Stat(mf); err != nil {
		mf += ".copy"
	}
	ini, err := readPgBackRestINIIn(t, mf)
	if err != nil {
		return nil, err
	}
	bk := ini["backup"]
	if bk == nil {
		return nil, fmt.Errorf("%s: no [backup] section (is it a pgBackRest backup.manifest?)", mf)
	}
	b := &BackupLabel{Path: dir, Tool: "pgBackRest", Method: "streamed", From: "primary"}
	b.Label = jsonStr(bk["backup-label"])
	b.BackupType = jsonStr(bk["backup-type"])
	if b.StartLSN, err = xlog.ParseLSN(jsonStr(bk["backup-lsn-start"])); err != nil || b.StartLSN == 0 {
		return nil, fmt.Errorf("%s: invalid backup-lsn-start %s", mf, bk["backup-lsn-start"])
	}
	if s := jsonStr(bk["backup-lsn-stop"]); s != "" {
		if b.StopLSN, err = xlog.ParseLSN(s); err != nil {
			return nil, fmt.Errorf("%s: invalid backup-lsn-stop %s", mf, bk["backup-lsn-stop"])
		}
	}
	b.StartSegment = jsonStr(bk["backup-archive-start"])
	b.StopSegment = jsonStr(bk["backup-archive-stop"])
	b.StartTLI = tliOfSegment(b.StartSegment)
	b.StopTLI = tliOfSegment(b.StopSegment)
	if b.StartTLI == 0 {
		return nil, fmt.Errorf("%s: invalid backup-archive-start %s", mf, bk["backup-archive-start"])
	}
	unix := func(k string) string {
		n, err := strconv.ParseInt(jsonStr(bk[k]), 10, 64)
		if err != nil || n == 0 {
			return ""
		}
		return time.Unix(n, 0).UTC().Format("2006-01-02 15:04:05 UTC")
	}
	b.StartTime, b.StopTime = unix("backup-timestamp-start"), unix("backup-timestamp-stop")
	if jsonStr(ini["backup:option"]["backup-standby"]) == "true" {
		b.From = "standby"
	}
	// the backup_label pgBackRest stores with the files gives the checkpoint
	// (not readable when the repository is encrypted)
	for _, n := range []string{"backup_label", "backup_label.gz", "backup_label.zst", "backup_label.lz4", "backup_label.bz2"} {
		text, err := readSmallMaybeCompressedIn(t, t.Join(dir, "pg_data", n))
		if err != nil {
			continue
		}
		if l, err := ParseBackupLabel(text); err == nil && l.StartLSN == b.StartLSN {
			b.CheckpointLSN = l.CheckpointLSN
			if l.From != "" {
				b.From = l.From
			}
		}
		break
	}
	return b, nil
}

// tliOfSegment is the timeline of a segment file name (0 if it is not one).
func tliOfSegment(name string) xlog.TimeLineID {
	if len(name) != 24 {
		return 0
	}
	t, err := strconv.ParseUint(name[:8], 16, 32)
	if err != nil {
		return 0
	}
	return xlog.TimeLineID(t)
}

// readSmallMaybeCompressed reads a small file, gzip, zstd, lz4 or bzip2
// compressed or not.
func readSmallMaybeCompressed(path string) (string, error) {
	return readSmallMaybeCompressedIn(localTree{}, path)
}

func readSmallMaybeCompressedIn(t Tree, path string) (string, error) {
	f, err := t.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(4)
	var r io.Reader = br
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", err
		}
		r = zr
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br)
		if err != nil {
			return "", err
		}
		defer zr.Close()
		r = zr
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		r = lz4.NewReader(br)
	case bytes.HasPrefix(head, []byte("BZh")):
		r = bzip2.NewReader(br)
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	return string(b), err
}

// readBarmanInfo reads a Barman backup.info (key=value lines).
func readBarmanInfo(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m, sc.Err()
}

func isBarmanBackup(dir string) bool {
	m, err := readBarmanInfo(filepath.Join(dir, "backup.info"))
	return err == nil && m["begin_xlog"] != "" && m["status"] != ""
}

// readBarmanBackup reads a Barman backup directory's backup.info.
func readBarmanBackup(dir string) (*BackupLabel, error) {
	path := filepath.Join(dir, "backup.info")
	m, err := readBarmanInfo(path)
	if err != nil {
		return nil, err
	}
	id := m["backup_id"]
	if id == "" {
		id = filepath.Base(dir) // the directory is named after the backup id
	}
	if st := m["status"]; st != "DONE" {
		return nil, fmt.Errorf("%s: Barman backup %s has status %s, not DONE", path, id, st)
	}
	b := &BackupLabel{Path: dir, Tool: "Barman", Label: id, From: "primary", Method: m["mode"]}
	if n := m["backup_name"]; n != "" && n != "None" {
		b.Label += " (" + n + ")"
	}
	if b.StartLSN, err = xlog.ParseLSN(m["begin_xlog"]); err != nil || b.StartLSN == 0 {
		return nil, fmt.Errorf("%s: invalid begin_xlog %q", path, m["begin_xlog"])
	}
	if s := m["end_xlog"]; s != "" && s != "None" {
		if b.StopLSN, err = xlog.ParseLSN(s); err != nil {
			return nil, fmt.Errorf("%s: invalid end_xlog %q", path, s)
		}
	}
	b.StartSegment, b.StopSegment = m["begin_wal"], m["end_wal"]
	if t, err := strconv.ParseUint(m["timeline"], 10, 32); err == nil && t > 0 {
		b.StartTLI = xlog.TimeLineID(t)
	} else {
		b.StartTLI = tliOfSegment(b.StartSegment)
	}
	if b.StartTLI == 0 {
		return nil, fmt.Errorf("%s: no timeline and no begin_wal", path)
	}
	b.StopTLI = tliOfSegment(b.StopSegment)
	// end_xlog is not the backup's stop point with backup_method = postgres
	// (Barman 3.4 writes the end of pg_basebackup's last segment there):
	// the .backup history file Barman archived has the exact STOP WAL
	// LOCATION; without it the BACKUP_END record in the WAL read decides,
	// end_xlog only when that is missing too.
	b.StopUpperBound = true
	if off, err := strconv.ParseUint(m["begin_offset"], 10, 32); err == nil && len(b.StartSegment) == 24 {
		hist := filepath.Join(dir, "..", "..", "wals", b.StartSegment[:16], fmt.Sprintf("%s.%08X.backup", b.StartSegment, off))
		if text, err := readSmallMaybeCompressed(hist); err == nil {
			if l, err := ParseBackupLabel(text); err == nil && l.StartLSN == b.StartLSN && l.StopLSN != 0 {
				b.StopLSN, b.StopUpperBound = l.StopLSN, false
				if l.StopTLI != 0 {
					b.StopTLI = l.StopTLI
				}
			}
		}
	}
	for k, dst := range map[string]*string{"begin_time": &b.StartTime, "end_time": &b.StopTime} {
		if v := m[k]; v != "None" {
			*dst = v
		}
	}
	// backup_label is kept as a Python string literal
	if s := m["backup_label"]; len(s) > 2 && s != "None" {
		text := strings.ReplaceAll(strings.Trim(s, `'"`), `\n`, "\n")
		if l, err := ParseBackupLabel(text); err == nil && l.StartLSN == b.StartLSN {
			b.CheckpointLSN = l.CheckpointLSN
			if l.From != "" {
				b.From = l.From
			}
		}
	}
	return b, nil
}

// readBarmanServer picks the latest DONE backup under base (a Barman
// server's base/ directory).
func readBarmanServer(base string) (*BackupLabel, error) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		m, err := readBarmanInfo(filepath.Join(base, e.Name(), "backup.info"))
		if err == nil && m["status"] == "DONE" && m["begin_xlog"] != "" {
			ids = append(ids, e.Name())
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no Barman backup with status DONE", base)
	}
	sort.Strings(ids) // backup ids are YYYYMMDDTHHMMSS
	return readBarmanBackup(filepath.Join(base, ids[len(ids)-1]))
}

// readToolBackup reads dir when it is a backup tool's backup, stanza, server
// or repository; ok is false when it is none of those.
func readToolBackup(dir string) (b *BackupLabel, ok bool, err error) {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch {
	case exists(filepath.Join(dir, "backup.manifest")) || exists(filepath.Join(dir, "backup.manifest.copy")):
		b, err = readPgBackRestBackup(dir)
		return b, true, err
	case isPgBackRestStanza(dir):
		b, err = readPgBackRestStanza(dir)
		return b, true, err
	case isBarmanBackup(dir):
		b, err = readBarmanBackup(dir)
		return b, true, err
	}
	// a pgBackRest repository with one stanza
	if ents, err := os.ReadDir(filepath.Join(dir, "backup")); err == nil {
		var stanzas []string
		for _, e := range ents {
			if e.IsDir() && isPgBackRestStanza(filepath.Join(dir, "backup", e.Name())) {
				stanzas = append(stanzas, e.Name())
			}
		}
		switch len(stanzas) {
		case 1:
			b, err = readPgBackRestStanza(filepath.Join(dir, "backup", stanzas[0]))
			return b, true, err
		case 0:
		default:
			return nil, true, fmt.Errorf("%s: a pgBackRest repository with %d stanzas (%s): give %s/backup/<stanza>",
				dir, len(stanzas), strings.Join(stanzas, ", "), dir)
		}
	}
	// a Barman server directory, or its base/
	for _, base := range []string{filepath.Join(dir, "base"), dir} {
		ents, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && isBarmanBackup(filepath.Join(base, e.Name())) {
				b, err = readBarmanServer(base)
				return b, true, err
			}
		}
	}
	return nil, false, nil
}
