package backup

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrNoLabelAhead is ReadLabel's answer when the label cannot be read
// without opening the backup: another layout, a tar whose first members
// do not hold it, a data directory without one, an incremental backup.
var ErrNoLabelAhead = errors.New("backup_label not readable ahead of Open")

// labelAheadMembers is how many tar members ReadLabel looks at:
// pg_basebackup sends backup_label first (then tablespace_map), bbsink's
// order since PostgreSQL 15 and sendDir's before.
const labelAheadMembers = 4

// ReadLabel reads the backup_label of a data directory or of a
// pg_basebackup -Ft base.tar (plain or compressed; the file or its
// directory) by itself, without Open's pass over the backup: a caller can
// start reading the WAL from the backup's start while Open inflates a
// compressed tar to its end (pg_control is the last member), as `walscope
// rows` does. It is what Open's Label gives for such a backup; a caller
// still checks it against the opened backup's. Other layouts, and a tar
// whose first members are not backup_label, give ErrNoLabelAhead.
func ReadLabel(p string) (*BackupLabel, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	dir, tarPath := p, ""
	if !st.IsDir() {
		dir, tarPath = filepath.Dir(p), p
	}
	if tarPath == "" {
		if raw, err := readSmall(filepath.Join(dir, "backup_label")); err == nil {
			return labelAhead(filepath.Join(p, "backup_label"), raw)
		}
		base, _, err := findTars(dir)
		if err != nil || base == "" {
			return nil, ErrNoLabelAhead
		}
		tarPath = filepath.Join(dir, base)
	}
	f, err := os.Open(tarPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8)
	zr, err := decompress(sniff(head), br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tarPath, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for range labelAheadMembers {
		h, err := tr.Next()
		if err != nil {
			return nil, ErrNoLabelAhead
		}
		if name, ok := cleanName(h.Name); !ok || name != "backup_label" || h.Typeflag != tar.TypeReg {
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(tr, memLimit))
		if err != nil {
			return nil, ErrNoLabelAhead
		}
		return labelAhead(filepath.Join(p, "backup_label"), raw)
	}
	return nil, ErrNoLabelAhead
}

// labelAhead parses a label ReadLabel read, as Backup.init does.
func labelAhead(where string, raw []byte) (*BackupLabel, error) {
	l, err := ParseBackupLabel(string(raw))
	if err != nil {
		return nil, ErrNoLabelAhead // Open says what is wrong with it
	}
	if from, _ := incrementalFrom(string(raw)); from != 0 {
		return nil, ErrNoLabelAhead // its start is not where a chain's replay starts
	}
	l.Path = where
	return l, nil
}

// InflatesToEnd tells whether Open of p (as ReadLabel takes it: a data
// directory, or a pg_basebackup -Ft base.tar, the file or its directory)
// reads a compressed tar from its beginning to its end before it returns
// (pg_control is the last member): the wait a caller that read the label
// ahead may overlap with other work (`walscope rows` starts its replay).
// A data directory or a plain tar opens at once.
func InflatesToEnd(p string) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	tarPath := p
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(p, "backup_label")); err == nil {
			return false
		}
		base, _, err := findTars(p)
		if err != nil || base == "" {
			return false
		}
		tarPath = filepath.Join(p, base)
	}
	f, err := os.Open(tarPath)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [8]byte
	n, _ := io.ReadFull(f, head[:])
	return sniff(head[:n]) != compNone
}
