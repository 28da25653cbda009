package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// The manifest of an incremental dataset is the directory ManifestDir at
// its root holding one file per batch, _batch-NNNNNN.json, each written (or
// uploaded) once, after every file of its batch is in place: a batch is
// committed when its manifest file exists, and a reader that reads the files
// the manifest lists reads every committed row and nothing else. A file is
// never rewritten: appending a batch adds one small object, which an object
// store writes atomically too.

// ManifestDir is the directory of an incremental dataset's batch manifests
// (its "_" keeps it out of Spark's, Hive's and DuckDB's hive globs).
const ManifestDir = "_walscope_manifest"

// ManifestVersion is the version of the batch manifest format this walscope
// writes; it reads every version from MinManifestVersion to it. Version 2
// records each segment's CRC-32C where version 1 recorded its SHA-256 (a
// walscope of version 1 would take the missing sha256 for a changed
// segment); a batch of either version is checked with the checksum it
// recorded.
const ManifestVersion = 2

// MinManifestVersion is the oldest manifest version this walscope reads.
const MinManifestVersion = 1

// ErrManifest reports a manifest that cannot be read: damaged, of an
// unknown version, or with a batch missing.
var ErrManifest = errors.New("damaged dataset manifest")

// Batch is one batch's manifest: what `export --append` read and wrote in
// one run.
type Batch struct {
	ManifestVersion int    `json:"manifest_version"`
	ID              int    `json:"batch"`
	Walscope        string `json:"walscope_version"`
	SchemaVersion   string `json:"schema_version"`
	// Created is when the batch was committed.
	Created time.Time `json:"created"`
	// Start is where the batch's reading began (the previous batch's End),
	// End where it ended: the start of the first record not read (the
	// next batch begins there), on EndTimeline.
	Start       string `json:"start_lsn"`
	End         string `json:"end_lsn"`
	EndTimeline uint32 `json:"end_timeline"`
	// Timelines are the LSN ranges read on each timeline, in WAL order.
	Timelines []TimelineRange `json:"timelines"`
	// Segments are the segment files the batch read, with their content's
	// size and checksum (of the decompressed segment): a segment read by
	// two batches (the one a batch ends in) is listed by both.
	Segments []SegmentEntry `json:"segments"`
	// Days are the day partitions the batch wrote rows into.
	Days []string `json:"days"`
	// LastTime is the last commit or abort time read (the day the next
	// batch's first records take); LastCycle the checkpoint cycle the
	// batch ended in.
	LastTime  *time.Time  `json:"last_time,omitempty"`
	LastCycle *CycleCarry `json:"last_cycle,omitempty"`
	// RecentCheckpoints are the last checkpoints (at most
	// MaxRecentCheckpoints, this batch's and those before it, in LSN
	// order): the spacing history the next batch classifies its
	// checkpoints' causes with (stats.Reclassify).
	RecentCheckpoints []CycleCarry `json:"recent_checkpoints,omitempty"`
	// Names and Databases are the names of relation files and databases
	// the batch's WAL gave that the batches before it did not (or gave
	// otherwise): a later batch names the files its own WAL does not name
	// with them.
	Names     []RelationName `json:"names,omitempty"`
	Databases []DatabaseName `json:"databases,omitempty"`
	// Tables are the files written, relative to the dataset's root.
	Tables map[string]BatchTable `json:"tables"`
	// Replaces are the files of earlier batches (relative to the
	// dataset's root) whose rows this batch's files hold: merged into them
	// (merge.go). A reader reads the files no later batch replaces; the
	// earlier batches' manifests are unchanged.
	Replaces []string `json:"replaces,omitempty"`
	// Growth is the batch's growth aggregate (growth.go: Growth, read by
	// ParseGrowth), absent from the manifests of a walscope before growth
	// version 1. Kept raw: appending a batch reads every manifest and has
	// no use for it.
	Growth json.RawMessage `json:"growth,omitempty"`
	// SpacingState is the content of the growth aggregate's spacing state
	// file (SpacingStateName), written beside the manifest before it
	// (WriteSpacingState); nil when there is none.
	SpacingState []byte `json:"-"`
}

// TimelineRange is the LSN range [Start, End) read on a timeline.
type TimelineRange struct {
	Timeline   xlog.TimeLineID `json:"timeline"`
	Start      string          `json:"start_lsn"`
	End        string          `json:"end_lsn"`
	start, end xlog.LSN
}

// SegmentEntry is one segment file a batch read: its name, its size and
// one checksum of its content. Batches of manifest version 2 record the
// CRC-32C (archive.CRC32C: it is to notice a segment re-pushed or damaged
// under a name already exported, not a forgery, and it costs an append
// an eighth of SHA-256's time); those of version 1 recorded the SHA-256
// (as `walscope ls --format json` gives it).
type SegmentEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Checksum returns the entry's checksum and its algorithm: the CRC-32C
// where the batch recorded one, else the SHA-256.
func (s SegmentEntry) Checksum() (archive.Checksum, string) {
	if s.CRC32C != "" {
		return archive.CRC32C, s.CRC32C
	}
	return archive.SHA256, s.SHA256
}

// BatchTable is one table's files of a batch.
type BatchTable struct {
	Rows  int64        `json:"rows"`
	Files []MarkerFile `json:"files"`
}

// BatchFileName is the name of batch id's manifest file in ManifestDir. Its
// "_" makes an upload (objstore.Upload) take it for metadata: uploaded after
// the data, and never a prefix it replaces or deletes objects under.
func BatchFileName(id int) string { return fmt.Sprintf("_batch-%06d.json", id) }

// BatchDir is the directory of batch id's rows of table, relative to the
// dataset's root: batch=N without leading zeros, which DuckDB, Spark and
// polars type as an integer partition column (batch=000001 was read as
// VARCHAR by DuckDB).
func BatchDir(table string, id int) string { return fmt.Sprintf("%s/batch=%d", table, id) }

// Manifest is an incremental dataset's batches, in order.
type Manifest struct {
	Batches  []Batch
	segments map[string]SegmentEntry
	// replacedBy is, of each replaced file, the batch that replaced it.
	replacedBy map[string]int
}

// ReadManifest reads the manifest of the dataset fsys holds (its root): nil
// and no error when it has none (an empty directory, or a dataset written
// by `export --out`). The batches must number 1, 2, 3... without a gap.
func ReadManifest(fsys fs.FS) (*Manifest, error) {
	ents, err := fs.ReadDir(fsys, ManifestDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := &Manifest{segments: map[string]SegmentEntry{}, replacedBy: map[string]int{}}
	var names []string
	for _, ent := range ents {
		name := ent.Name()
		if ent.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue // a temporary file of a batch being committed
		}
		names = append(names, name)
	}
	// Decoded on every core: JSON decoding is most of the time (a 10^5
	// segment manifest: BenchmarkReadManifest).
	batches := make([]Batch, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				errs[i] = readBatch(fsys, names[i], &batches[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	m.Batches = batches
	if len(m.Batches) == 0 {
		return nil, nil
	}
	sort.Slice(m.Batches, func(i, j int) bool { return m.Batches[i].ID < m.Batches[j].ID })
	for i := range m.Batches {
		if m.Batches[i].ID != i+1 {
			return nil, fmt.Errorf("%s: %w: batch %d is missing", ManifestDir, ErrManifest, i+1)
		}
		for _, s := range m.Batches[i].Segments {
			m.segments[s.Name] = s
		}
	}
	// A file replaced is one an earlier batch listed, replaced once: its
	// rows are in exactly one live file.
	listedBy := map[string]int{}
	for i := range m.Batches {
		b := &m.Batches[i]
		for _, p := range b.Replaces {
			by, listed := listedBy[p]
			if !listed {
				return nil, fmt.Errorf("%s: %w: batch %d replaces %s, which no batch before it lists", ManifestDir, ErrManifest, b.ID, p)
			}
			if again, ok := m.replacedBy[p]; ok {
				return nil, fmt.Errorf("%s: %w: %s (batch %d's) is replaced by batches %d and %d", ManifestDir, ErrManifest, p, by, again, b.ID)
			}
			m.replacedBy[p] = b.ID
		}
		for _, bt := range b.Tables {
			for _, f := range bt.Files {
				listedBy[f.Path] = b.ID
			}
		}
	}
	return m, nil
}

// readBatch reads and checks the manifest file name into b.
func readBatch(fsys fs.FS, name string, b *Batch) error {
	data, err := fs.ReadFile(fsys, path.Join(ManifestDir, name))
	if err != nil {
		return err
	}
	batch, err := ParseBatch(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path.Join(ManifestDir, name), err)
	}
	if name != BatchFileName(batch.ID) {
		return fmt.Errorf("%s: %w: it holds batch %d", path.Join(ManifestDir, name), ErrManifest, batch.ID)
	}
	*b = *batch
	return nil
}

// ParseBatch decodes and checks one batch manifest file.
func ParseBatch(b []byte) (*Batch, error) {
	var batch Batch
	if err := json.Unmarshal(b, &batch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if batch.ManifestVersion > ManifestVersion {
		// A walscope of after this one wrote it: the reader needed is one
		// of at least the writer's version.
		return nil, fmt.Errorf("%w: manifest version %d, written by %s (this walscope reads versions %d to %d): read it with that walscope or a later one",
			ErrManifest, batch.ManifestVersion, orUnknown(batch.Walscope), MinManifestVersion, ManifestVersion)
	}
	if batch.ManifestVersion < MinManifestVersion {
		return nil, fmt.Errorf("%w: manifest version %d (this walscope reads versions %d to %d)", ErrManifest, batch.ManifestVersion, MinManifestVersion, ManifestVersion)
	}
	if batch.ID < 1 {
		return nil, fmt.Errorf("%w: batch %d", ErrManifest, batch.ID)
	}
	for _, l := range []string{batch.Start, batch.End} {
		if _, err := xlog.ParseLSN(l); err != nil {
			return nil, fmt.Errorf("%w: batch %d: LSN %q", ErrManifest, batch.ID, l)
		}
	}
	if batch.EndTimeline == 0 {
		return nil, fmt.Errorf("%w: batch %d: end_timeline 0", ErrManifest, batch.ID)
	}
	for i := range batch.Timelines {
		r := &batch.Timelines[i]
		var err1, err2 error
		r.start, err1 = xlog.ParseLSN(r.Start)
		r.end, err2 = xlog.ParseLSN(r.End)
		if err1 != nil || err2 != nil || r.Timeline == 0 {
			return nil, fmt.Errorf("%w: batch %d: timeline range %d %q-%q", ErrManifest, batch.ID, r.Timeline, r.Start, r.End)
		}
	}
	if batch.LastCycle != nil {
		if _, err := batch.LastCycle.Cycle(); err != nil {
			return nil, fmt.Errorf("batch %d: %w", batch.ID, err)
		}
	}
	for i := range batch.RecentCheckpoints {
		if _, err := batch.RecentCheckpoints[i].Cycle(); err != nil {
			return nil, fmt.Errorf("batch %d: recent_checkpoints: %w", batch.ID, err)
		}
	}
	for _, sg := range batch.Segments {
		// One checksum of its length in hex: a comparison with the
		// segment's must be able to succeed.
		if !isHex(sg.CRC32C, 8) && !(sg.CRC32C == "" && isHex(sg.SHA256, 64)) {
			return nil, fmt.Errorf("%w: batch %d: segment %q without a crc32c (8 hex digits) or sha256 (64)", ErrManifest, batch.ID, sg.Name)
		}
	}
	for _, p := range batch.Replaces {
		table, _, _ := strings.Cut(p, "/")
		if !inBatchDir(p, table, batch.ID-1) || strings.Contains(p, "..") {
			return nil, fmt.Errorf("%w: batch %d replaces %q, not a file of an earlier batch", ErrManifest, batch.ID, p)
		}
	}
	for t, bt := range batch.Tables {
		for _, f := range bt.Files {
			// Inside the batch's own directory: a reader joins them to
			// the dataset's root.
			if !strings.HasPrefix(f.Path, BatchDir(t, batch.ID)+"/") || strings.Contains(f.Path, "..") {
				return nil, fmt.Errorf("%w: batch %d: file %q is not in %s", ErrManifest, batch.ID, f.Path, BatchDir(t, batch.ID))
			}
		}
	}
	return &batch, nil
}

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// inBatchDir reports whether p is below the batch=N/ directory of table
// (one of Tables) of a batch N from 1 to id.
func inBatchDir(p, table string, id int) bool {
	if !slices.Contains(Tables, table) {
		return false
	}
	rest, ok := strings.CutPrefix(p, table+"/batch=")
	if !ok {
		return false
	}
	num, _, ok := strings.Cut(rest, "/")
	n, err := strconv.Atoi(num)
	return ok && err == nil && n >= 1 && n <= id && num == strconv.Itoa(n)
}

// Last returns the last batch (nil for an empty manifest).
func (m *Manifest) Last() *Batch {
	if m == nil || len(m.Batches) == 0 {
		return nil
	}
	return &m.Batches[len(m.Batches)-1]
}

// NextID is the number of the batch to append.
func (m *Manifest) NextID() int {
	if m == nil {
		return 1
	}
	return len(m.Batches) + 1
}

// Segment returns what the manifest records of a segment file (the last
// batch that read it).
func (m *Manifest) Segment(name string) (SegmentEntry, bool) {
	if m == nil {
		return SegmentEntry{}, false
	}
	s, ok := m.segments[name]
	return s, ok
}

// Segments is the number of distinct segment files the batches read.
func (m *Manifest) Segments() int {
	if m == nil {
		return 0
	}
	return len(m.segments)
}

// Replaced reports whether a later batch replaced the file p (relative to
// the dataset's root: its rows are in that batch's files), and which.
func (m *Manifest) Replaced(p string) (by int, ok bool) {
	if m == nil {
		return 0, false
	}
	by, ok = m.replacedBy[p]
	return by, ok
}

// Files returns the files of table that the batches list and no later
// batch replaced, relative to the dataset's root: what a reader must read,
// and nothing else.
func (m *Manifest) Files(table string) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, b := range m.Batches {
		for _, f := range b.Tables[table].Files {
			if _, gone := m.replacedBy[f.Path]; gone {
				continue
			}
			out = append(out, f.Path)
		}
	}
	return out
}

// Listed reports whether the batch directory of table and id is one a
// committed batch wrote.
func (m *Manifest) Listed(id int) bool { return m != nil && id >= 1 && id <= len(m.Batches) }

// Encode returns the batch's manifest file: indented, but for the growth
// aggregate, kept on one line (indented, its rows of numbers would be most
// of the file).
func (b *Batch) Encode() []byte {
	b.ManifestVersion = ManifestVersion
	g := b.Growth
	b.Growth = nil
	out, _ := json.MarshalIndent(b, "", " ")
	b.Growth = g
	if len(g) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, g) == nil {
			out = append(out[:len(out)-2], ",\n \"growth\": "...)
			out = append(append(out, c.Bytes()...), "\n}"...)
		}
	}
	return append(out, '\n')
}

// WriteBatch commits a batch of the local dataset dir: its manifest file,
// written under a temporary name, synced and renamed into place. Its
// batch's files must be in place already.
func WriteBatch(dir string, b *Batch) error {
	md := filepath.Join(dir, ManifestDir)
	if err := os.MkdirAll(md, 0o777); err != nil {
		return err
	}
	final := filepath.Join(md, BatchFileName(b.ID))
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("%s: %w", final, ErrExists)
	}
	return writeInto(md, BatchFileName(b.ID), b.Encode())
}

// writeInto writes data to dir/name atomically and durably: a temporary
// file of this process, synced, renamed into place (replacing one there),
// the directory synced.
func writeInto(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	tmp := filepath.Join(dir, "."+name+"."+strconv.Itoa(os.Getpid())+".tmp")
	os.Remove(tmp)
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

// WriteSpacingState writes b's spacing state file into the manifest
// directory of the dataset in dir, atomically, replacing one a killed run
// of the same batch left; before the manifest, which commits it. Nothing
// without a state.
func WriteSpacingState(dir string, b *Batch) error {
	if b.SpacingState == nil {
		return nil
	}
	md := filepath.Join(dir, ManifestDir)
	if err := os.MkdirAll(md, 0o777); err != nil {
		return err
	}
	return writeInto(md, SpacingStateName(b.ID), b.SpacingState)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if noSync {
		return
	}
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}
