package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/xlog"
)

// BackupLabel is what a backup_label or a .backup history file says.
type BackupLabel struct {
	Path          string // the file read (inside a tar: tar path + "/backup_label")
	StartLSN      xlog.LSN
	StartSegment  string
	CheckpointLSN xlog.LSN
	StartTLI      xlog.TimeLineID
	StopLSN       xlog.LSN // .backup files: STOP WAL LOCATION (0: not given)
	StopTLI       xlog.TimeLineID
	Method        string // BACKUP METHOD
	From          string // BACKUP FROM: primary or standby
	StartTime     string
	StopTime      string
	Label         string
	// Tool is the backup tool whose repository the backup was read from
	// (pgBackRest, Barman), "" for a backup_label or .backup file.
	Tool        string
	BackupType  string // pgBackRest: full, diff, incr
	StopSegment string // the segment of the stop LSN, when the tool names it
	// StopUpperBound: StopLSN is at or after the consistent point, not it
	// (Barman's end_xlog): a BACKUP_END record of the backup in the WAL
	// read gives the consistent point instead.
	StopUpperBound bool
}

// ParseBackupLabel reads the text of a backup_label or .backup file.
func ParseBackupLabel(text string) (*BackupLabel, error) {
	b := &BackupLabel{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		lsnOf := func() (xlog.LSN, string, error) {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, "", fmt.Errorf("backup label: invalid %s: %q", k, v)
			}
			l, err := xlog.ParseLSN(f[0])
			if err != nil {
				return 0, "", fmt.Errorf("backup label: invalid %s: %q", k, v)
			}
			seg := ""
			if len(f) >= 3 && f[1] == "(file" {
				seg = strings.TrimSuffix(f[2], ")")
			}
			return l, seg, nil
		}
		var err error
		switch k {
		case "START WAL LOCATION":
			b.StartLSN, b.StartSegment, err = lsnOf()
		case "STOP WAL LOCATION":
			b.StopLSN, _, err = lsnOf()
		case "CHECKPOINT LOCATION":
			b.CheckpointLSN, _, err = lsnOf()
		case "START TIMELINE", "STOP TIMELINE":
			t, perr := strconv.ParseUint(v, 10, 32)
			if perr != nil || t == 0 {
				return nil, fmt.Errorf("backup label: invalid %s: %q", k, v)
			}
			if k == "START TIMELINE" {
				b.StartTLI = xlog.TimeLineID(t)
			} else {
				b.StopTLI = xlog.TimeLineID(t)
			}
		case "BACKUP METHOD":
			b.Method = v
		case "BACKUP FROM":
			b.From = v
		case "START TIME":
			b.StartTime = v
		case "STOP TIME":
			b.StopTime = v
		case "LABEL":
			b.Label = v
		}
		if err != nil {
			return nil, err
		}
	}
	if b.StartLSN == 0 {
		return nil, errors.New("backup label: no START WAL LOCATION")
	}
	if b.StartTLI == 0 {
		// before PostgreSQL 11 the label had no START TIMELINE: the
		// start segment's name has it
		if len(b.StartSegment) == 24 {
			if t, err := strconv.ParseUint(b.StartSegment[:8], 16, 32); err == nil && t > 0 {
				b.StartTLI = xlog.TimeLineID(t)
			}
		}
		if b.StartTLI == 0 {
			b.StartTLI = 1
		}
	}
	return b, nil
}

// ReadBackupLabel reads the backup label of a backup: path is a data
// directory or plain base backup (its backup_label), a backup_label file,
// a .backup history file from the archive, a pg_basebackup -Ft tar
// (base.tar, base.tar.gz, .tar.zst, .tar.lz4) holding backup_label, or the
// directory pg_basebackup -Ft wrote (its base.tar*); or a backup in a
// pgBackRest or Barman repository (backuptool.go).
func ReadBackupLabel(path string) (*BackupLabel, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		lf := filepath.Join(path, "backup_label")
		if _, err := os.Stat(lf); err == nil {
			return ReadBackupLabel(lf)
		}
		if b, ok, err := readToolBackup(path); ok {
			return b, err
		}
		for _, n := range []string{"base.tar", "base.tar.gz", "base.tgz", "base.tar.zst", "base.tar.lz4"} {
			if _, err := os.Stat(filepath.Join(path, n)); err == nil {
				return ReadBackupLabel(filepath.Join(path, n))
			}
		}
		return nil, fmt.Errorf("%s: no backup_label, no base.tar, no pgBackRest backup.manifest or backup.info, no Barman backup.info (is it a base backup?)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(512)
	var r io.Reader = br
	compressed := true
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		r = zr
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		r = lz4.NewReader(br)
	default:
		compressed = false
	}
	if !compressed && !(len(head) >= 262 && string(head[257:262]) == "ustar") {
		// a backup_label or .backup file
		b, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if err != nil {
			return nil, err
		}
		l, err := ParseBackupLabel(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		l.Path = path
		return l, nil
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no backup_label in the tar file", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if strings.TrimPrefix(h.Name, "./") != "backup_label" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		l, err := ParseBackupLabel(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: backup_label: %v", path, err)
		}
		l.Path = path + "/backup_label"
		return l, nil
	}
}
