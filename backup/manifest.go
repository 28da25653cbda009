package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/walscope/walscope/xlog"
)

// Manifest is a backup_manifest, as pg_basebackup 13 and later write it
// (src/backend/backup/backup_manifest.c; version 2 from 17 adds the system
// identifier).
type Manifest struct {
	Version   int
	SystemID  uint64 // version 2 (17+); 0 before
	Files     []ManifestFile
	WALRanges []WALRange
	byPath    map[string]int
}

// ManifestFile is one entry of Files.
type ManifestFile struct {
	Path              string
	Size              int64
	LastModified      string
	ChecksumAlgorithm string
	Checksum          string
}

// WALRange is one entry of WAL-Ranges: the WAL recovery from the backup
// must replay, on one timeline.
type WALRange struct {
	Timeline xlog.TimeLineID
	Start    xlog.LSN
	End      xlog.LSN
}

// ParseManifest reads a backup_manifest and checks its Manifest-Checksum
// (SHA-256 of every byte before the line that holds it). Errors wrap
// ErrDamaged.
func ParseManifest(b []byte) (*Manifest, error) {
	var raw struct {
		Version  *int   `json:"PostgreSQL-Backup-Manifest-Version"`
		SystemID uint64 `json:"System-Identifier"`
		Files    []struct {
			Path         string `json:"Path"`
			EncodedPath  string `json:"Encoded-Path"`
			Size         int64  `json:"Size"`
			LastModified string `json:"Last-Modified"`
			Algorithm    string `json:"Checksum-Algorithm"`
			Checksum     string `json:"Checksum"`
		} `json:"Files"`
		WALRanges []struct {
			Timeline uint32 `json:"Timeline"`
			Start    string `json:"Start-LSN"`
			End      string `json:"End-LSN"`
		} `json:"WAL-Ranges"`
		Checksum string `json:"Manifest-Checksum"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: backup_manifest: %v", ErrDamaged, err)
	}
	if raw.Version == nil || *raw.Version < 1 || *raw.Version > 2 {
		return nil, fmt.Errorf("%w: backup_manifest: no PostgreSQL-Backup-Manifest-Version 1 or 2", ErrDamaged)
	}
	// the checksum covers the manifest up to the start of the line of
	// "Manifest-Checksum" (backup_manifest.c, AppendStringToManifest)
	i := bytes.LastIndex(b, []byte(`"Manifest-Checksum"`))
	if i < 0 || raw.Checksum == "" {
		return nil, fmt.Errorf("%w: backup_manifest: no Manifest-Checksum", ErrDamaged)
	}
	sum := sha256.Sum256(b[:i])
	if hex.EncodeToString(sum[:]) != raw.Checksum {
		return nil, fmt.Errorf("%w: backup_manifest: Manifest-Checksum %s does not match its content (%x)", ErrDamaged, raw.Checksum, sum)
	}
	m := &Manifest{Version: *raw.Version, SystemID: raw.SystemID, byPath: map[string]int{}}
	for _, f := range raw.Files {
		p := f.Path
		if f.EncodedPath != "" {
			dec, err := hex.DecodeString(f.EncodedPath)
			if err != nil {
				return nil, fmt.Errorf("%w: backup_manifest: Encoded-Path %q", ErrDamaged, f.EncodedPath)
			}
			p = string(dec)
		}
		if f.Size < 0 {
			return nil, fmt.Errorf("%w: backup_manifest: %s has size %d", ErrDamaged, p, f.Size)
		}
		m.byPath[p] = len(m.Files)
		m.Files = append(m.Files, ManifestFile{p, f.Size, f.LastModified, f.Algorithm, f.Checksum})
	}
	for _, r := range raw.WALRanges {
		s, err1 := xlog.ParseLSN(r.Start)
		e, err2 := xlog.ParseLSN(r.End)
		if err1 != nil || err2 != nil || r.Timeline == 0 || e < s {
			return nil, fmt.Errorf("%w: backup_manifest: WAL range %d %s-%s", ErrDamaged, r.Timeline, r.Start, r.End)
		}
		m.WALRanges = append(m.WALRanges, WALRange{xlog.TimeLineID(r.Timeline), s, e})
	}
	if len(m.WALRanges) == 0 {
		return nil, fmt.Errorf("%w: backup_manifest: no WAL-Ranges", ErrDamaged)
	}
	return m, nil
}

// File returns the entry of path (data-directory-relative).
func (m *Manifest) File(path string) (ManifestFile, bool) {
	i, ok := m.byPath[path]
	if !ok {
		return ManifestFile{}, false
	}
	return m.Files[i], true
}
