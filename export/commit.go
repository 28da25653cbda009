package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/walscope/walscope/internal/outfile"
	"github.com/walscope/walscope/xlog"
)

// A dataset (a table's rows of one export: its label and segment range) is
// written into a staging directory of the export's own beside the tables,
// DIR/.walscope-staging-*, and published when every table is complete: each
// dataset directory is renamed into place in one step (or, when it is the
// table's own directory and holds other datasets, its files are, the marker
// last), under a lock on DIR/.walscope.lock, after the checks that refuse an
// existing dataset (unless Overwrite) and an overlapping segment range. Each
// published dataset holds its completion marker, MarkerName, listing its
// files and rows: a reader that finds it finds every file it lists. A
// failed, interrupted or killed export leaves its staging directory only,
// which the next export into DIR removes.

// MarkerName is the completion marker of a dataset directory. Its name
// starts with "_", which Spark, Hive and DuckDB's hive globs skip, and a
// copy to object storage uploads such files last.
const MarkerName = "_walscope_complete.json"

// ErrOverlap is returned when a dataset of another, overlapping segment range
// exists (its rows would be counted twice).
var ErrOverlap = errors.New("an overlapping segment range is already exported")

// staleAfter is how old an unlocked staging directory must be to be taken
// for a dead export's.
const staleAfter = 10 * time.Second

const (
	stagingPrefix = ".walscope-staging-"
	lockName      = ".walscope.lock"
)

// Marker is the content of a dataset's completion marker.
type Marker struct {
	SchemaVersion string `json:"schema_version"`
	Table         string `json:"table"`
	Label         string `json:"label,omitempty"`
	SegmentRange  string `json:"segment_range,omitempty"`
	// StartLSN and EndLSN (PostgreSQL's X/Y form) bound where the records
	// of a segment range's dataset begin, [start_lsn, end_lsn).
	StartLSN    string       `json:"start_lsn,omitempty"`
	EndLSN      string       `json:"end_lsn,omitempty"`
	PartitionBy string       `json:"partition_by,omitempty"`
	Batch       int          `json:"batch,omitempty"`
	Format      Format       `json:"format"`
	Rows        int64        `json:"rows"`
	Files       []MarkerFile `json:"files"`
	Completed   time.Time    `json:"completed"`
}

// MarkerFile is one file of a dataset, relative to the dataset directory.
// Bytes, its size, is given in batch manifests (merge.go decides by it
// which files are small); 0 in those of a walscope before merging.
type MarkerFile struct {
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes,omitempty"`
}

// stagedFiles collects the completed files of each table, from the
// goroutines completing spans.
type stagedFiles struct {
	mu      sync.Mutex
	byTable map[string][]MarkerFile
}

func (s *stagedFiles) add(table, rel string, rows int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byTable == nil {
		s.byTable = map[string][]MarkerFile{}
	}
	s.byTable[table] = append(s.byTable[table], MarkerFile{Path: filepath.ToSlash(rel), Rows: rows})
}

// datasetRel is the dataset's directory relative to the output directory.
func (e *Exporter) datasetRel(table string) string {
	d := table
	if e.cfg.Label != "" {
		d = filepath.Join(d, "label="+e.cfg.Label)
	}
	switch e.cfg.PartitionBy {
	case PartitionSegmentRange:
		d = filepath.Join(d, "segment_range="+e.cfg.SegmentRange)
	case PartitionBatch:
		d = filepath.FromSlash(BatchDir(d, e.cfg.Batch))
	}
	return d
}

// finalDir is where the dataset of table is published.
func (e *Exporter) finalDir(table string) string {
	return filepath.Join(e.cfg.Dir, e.datasetRel(table))
}

// startStaging removes the staging directories of exports that died (no
// process holds their lock), checks that the datasets may be written, and
// makes this export's staging directory.
func (e *Exporter) startStaging() error {
	if err := os.MkdirAll(e.cfg.Dir, 0o777); err != nil {
		return err
	}
	removeStaleStaging(e.cfg.Dir)
	for _, t := range e.cfg.Tables {
		if err := e.checkTarget(t); err != nil {
			return err
		}
	}
	stage, err := outfile.MkdirTemp(e.cfg.Dir, stagingPrefix)
	if err != nil {
		return err
	}
	lock, err := holdStaging(stage)
	if err != nil {
		os.RemoveAll(stage)
		outfile.Untrack(stage)
		return err
	}
	e.stage, e.stageLock = stage, lock
	return nil
}

// removeStaleStaging removes the staging directories no live export holds.
func removeStaleStaging(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), stagingPrefix) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		// (not one just made, whose export is about to lock it)
		if fi, err := ent.Info(); err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		if f, ok := tryLock(p); ok {
			os.RemoveAll(p)
			f.Close()
		}
	}
}

// dropStaging removes the staging directory (after publishing, or to
// abandon the export).
func (e *Exporter) dropStaging() {
	if e.stage == "" {
		return
	}
	os.RemoveAll(e.stage)
	outfile.Untrack(e.stage)
	if e.stageLock != nil {
		e.stageLock.Close()
	}
	e.stage, e.stageLock = "", nil
}

// ownEntries lists the entries of dir that belong to the dataset it holds
// directly (files, timeline= directories, its marker), leaving out the
// datasets below it (label=, segment_range=) and hidden files.
func ownEntries(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var own []string
	for _, ent := range ents {
		n := ent.Name()
		if strings.HasPrefix(n, "label=") || strings.HasPrefix(n, "segment_range=") || strings.HasPrefix(n, ".") {
			continue
		}
		own = append(own, n)
	}
	return own, nil
}

// checkTarget refuses to publish table's dataset over an existing one
// (unless Overwrite) or beside one of an overlapping segment range.
func (e *Exporter) checkTarget(table string) error {
	final := e.finalDir(table)
	if e.cfg.PartitionBy == PartitionSegmentRange {
		lo, hi, _ := strings.Cut(e.cfg.SegmentRange, "-")
		ents, _ := os.ReadDir(filepath.Dir(final))
		for _, ent := range ents {
			r, ok := strings.CutPrefix(ent.Name(), "segment_range=")
			if !ok || ent.Name() == filepath.Base(final) {
				continue
			}
			// Names are fixed-width hex: their order is the segments'.
			olo, ohi, ok := strings.Cut(r, "-")
			if !ok || olo > hi || lo > ohi {
				continue
			}
			// Ranges that share a segment overlap unless both markers
			// bound their records apart (two jobs cut at a record start).
			if ostart, oend, known := markerBounds(filepath.Join(filepath.Dir(final), ent.Name(), MarkerName)); known && e.cfg.EndLSN != 0 &&
				(e.cfg.EndLSN <= ostart || oend <= e.cfg.StartLSN) {
				continue
			}
			{
				return fmt.Errorf("%w: %s overlaps segment_range=%s", ErrOverlap, filepath.Join(filepath.Dir(final), ent.Name()), e.cfg.SegmentRange)
			}
		}
	}
	own, err := ownEntries(final)
	if err != nil {
		return err
	}
	if len(own) > 0 && !e.cfg.Overwrite {
		return fmt.Errorf("%w: %s holds %s", ErrExists, final, strings.Join(own, ", "))
	}
	return nil
}

// publish writes the markers and moves every dataset from the staging
// directory into place, or none when one may not be published.
func (e *Exporter) publish() error {
	now := time.Now().UTC()
	for _, t := range e.cfg.Tables {
		files := e.staged.byTable[t]
		sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
		m := Marker{SchemaVersion: SchemaVersion, Table: t, Label: e.cfg.Label, PartitionBy: e.cfg.PartitionBy,
			Format: e.cfg.Format, Files: files, Completed: now}
		if e.cfg.PartitionBy == PartitionBatch {
			m.Batch = e.cfg.Batch
		}
		if files == nil {
			m.Files = []MarkerFile{}
		}
		if e.cfg.PartitionBy == PartitionSegmentRange {
			m.SegmentRange = e.cfg.SegmentRange
			if e.cfg.EndLSN != 0 {
				m.StartLSN, m.EndLSN = e.cfg.StartLSN.String(), e.cfg.EndLSN.String()
			}
		}
		for _, f := range files {
			m.Rows += f.Rows
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		d := filepath.Join(e.stage, e.datasetRel(t))
		if err := os.MkdirAll(d, 0o777); err != nil {
			return err
		}
		if err := writeSynced(filepath.Join(d, MarkerName), append(b, '\n')); err != nil {
			return err
		}
	}
	lock, err := lockFile(filepath.Join(e.cfg.Dir, lockName))
	if err != nil {
		return err
	}
	defer lock.Close()
	// The checks again, now that no other export publishes: a dataset
	// published since New, or an overlapping range.
	for _, t := range e.cfg.Tables {
		if err := e.checkTarget(t); err != nil {
			return err
		}
	}
	// A signal waits until every dataset is in place.
	return outfile.Guard(func() error {
		for i, t := range e.cfg.Tables {
			if err := e.move(t, i); err != nil {
				return err
			}
			if err := e.hook("published " + t); err != nil {
				return err
			}
		}
		return nil
	})
}

// move publishes table's staged dataset (the i-th table).
func (e *Exporter) move(table string, i int) error {
	staged := filepath.Join(e.stage, e.datasetRel(table))
	final := e.finalDir(table)
	own, err := ownEntries(final)
	if err != nil {
		return err
	}
	if len(own) > 0 {
		// Overwrite (checked): the old dataset's entries go to the
		// staging directory, removed with it.
		trash := filepath.Join(e.stage, fmt.Sprintf(".replaced-%d", i))
		if err := os.Mkdir(trash, 0o700); err != nil {
			return err
		}
		if ents, _ := os.ReadDir(final); len(ents) == len(own) {
			// Nothing else there: the directory goes whole.
			if err := os.Rename(final, filepath.Join(trash, "d")); err != nil {
				return err
			}
		} else {
			for _, n := range own {
				if err := os.Rename(filepath.Join(final, n), filepath.Join(trash, n)); err != nil {
					return err
				}
			}
		}
	}
	if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
		// One rename: the dataset appears complete, marker and all.
		if err := os.MkdirAll(filepath.Dir(final), 0o777); err != nil {
			return err
		}
		return os.Rename(staged, final)
	}
	// The table's directory, holding other datasets: the files, then the
	// marker.
	ents, err := os.ReadDir(staged)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if ent.Name() == MarkerName {
			continue
		}
		if err := os.Rename(filepath.Join(staged, ent.Name()), filepath.Join(final, ent.Name())); err != nil {
			return err
		}
	}
	return os.Rename(filepath.Join(staged, MarkerName), filepath.Join(final, MarkerName))
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// markerBounds reads the record bounds a segment range's marker carries;
// known is false when it carries none or cannot be read.
func markerBounds(path string) (start, end xlog.LSN, known bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	var m Marker
	if json.Unmarshal(b, &m) != nil || m.EndLSN == "" {
		return 0, 0, false
	}
	start, err1 := xlog.ParseLSN(m.StartLSN)
	end, err2 := xlog.ParseLSN(m.EndLSN)
	return start, end, err1 == nil && err2 == nil
}
