package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Merging small nights (issue 29: partitions "stay a size engines like").
// A quiet night's batch writes a file or two per table and day; after a
// year, thousands of small files, which DuckDB, polars and Spark open one
// by one. So `export --append` merges: when the last batches are small
// (their files add up to less than a threshold, MergeCandidates), the new
// batch takes their files into its own, concatenated per table and day
// with its new rows (ConcatParquet: row groups copied as they are, no row
// decoded), and its manifest says it supersedes them (Batch.Supersedes).
// Readers read the files of the batches no later one supersedes
// (Manifest.Files); the superseded batches' manifests stay, since what they
// read is still theirs (LSN ranges, segments, names, the growth
// aggregate, which `walscope growth` reads as before). Their files are
// removed after the superseding manifest is committed (SupersededFiles);
// a run killed in between leaves them unlisted, and the next run removes
// them. Only the days that have more than one file are rewritten: a
// superseded batch's file alone in its day is carried over, listed by the
// new manifest where it is (so the hive column batch of a row is the batch
// that wrote its file, not always the batch that lists it).
//
// Why the files and not the WAL again: an append needs only the WAL after
// the last batch (from the segment it ended in); the nights before may be
// gone from the archive by then, or not given. Their files are what the
// dataset surely holds, and copying row groups costs their bytes' I/O, not
// a decoding.

// DefaultMergeBelow is the default threshold of merging, in bytes: batches
// whose files add up to less are merged into the next one. Files of 64 MB
// are what engines read well (one request and footer per file; DuckDB's and
// Spark's advice is tens of MB to 1 GB), and a night's rewrite stays
// bounded by it.
const DefaultMergeBelow = 64 << 20

// MergeInput is what a batch takes over from the batches it supersedes.
type MergeInput struct {
	// FS is the dataset's root (a directory, or an object store prefix).
	FS fs.FS
	// Batches are the batches superseded, in order.
	Batches []int
	// Files are their files by table, relative to the dataset's root, in
	// batch and path order.
	Files map[string][]MarkerFile
}

// batchBytes returns the bytes of a batch's files, and false when its
// manifest does not give them (a walscope before merging wrote it).
func batchBytes(b *Batch) (int64, bool) {
	var n int64
	for _, bt := range b.Tables {
		for _, f := range bt.Files {
			if f.Bytes <= 0 {
				return 0, false
			}
			n += f.Bytes
		}
	}
	return n, true
}

// MergeCandidates returns the batches the next batch should supersede: the
// longest run of live batches at the end whose files add up to less than
// below bytes, written in the format of extension ext, of the tables
// given only (a batch of another format, of tables the next batch does
// not write, or of a walscope before merging ends the run). A run of one
// batch is merged too: its files and the new night's become one per table
// and day.
func (m *Manifest) MergeCandidates(below int64, ext string, tables []string) []int {
	if m == nil || below <= 0 {
		return nil
	}
	want := map[string]bool{}
	for _, t := range tables {
		want[t] = true
	}
	var ids []int
	var total int64
	for i := len(m.Batches) - 1; i >= 0; i-- {
		b := &m.Batches[i]
		if _, gone := m.supersededBy[b.ID]; gone {
			continue // its rows are in a later batch's files
		}
		n, ok := batchBytes(b)
		if !ok || total+n >= below || !batchOf(b, ext, want) {
			break
		}
		total += n
		ids = append(ids, b.ID)
	}
	sort.Ints(ids)
	return ids
}

// batchOf reports whether every file of b is of the extension ext and of
// one of the tables in want.
func batchOf(b *Batch, ext string, want map[string]bool) bool {
	for t, bt := range b.Tables {
		if len(bt.Files) > 0 && !want[t] {
			return false
		}
		for _, f := range bt.Files {
			if !strings.HasSuffix(f.Path, ext) {
				return false
			}
		}
	}
	return true
}

// MergeInput returns what the next batch takes over from batches ids.
func (m *Manifest) MergeInput(fsys fs.FS, ids []int) *MergeInput {
	if len(ids) == 0 {
		return nil
	}
	in := &MergeInput{FS: fsys, Batches: ids, Files: map[string][]MarkerFile{}}
	for _, id := range ids {
		b := &m.Batches[id-1]
		for t, bt := range b.Tables {
			files := append([]MarkerFile(nil), bt.Files...)
			sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
			in.Files[t] = append(in.Files[t], files...)
		}
	}
	return in
}

// SupersededFiles returns what to remove (relative to the dataset's root)
// once batch by, which supersedes batches ids, is committed: the files their
// manifests list that by does not (by lists the files it carried over
// where they were), then their batch=N/ directories' completion markers,
// and the directories themselves (removed when they are left empty).
func (m *Manifest) SupersededFiles(ids []int, by *Batch) (files, markers, dirs []string) {
	keep := map[string]bool{}
	if by != nil {
		for _, bt := range by.Tables {
			for _, f := range bt.Files {
				keep[f.Path] = true
			}
		}
	}
	for _, id := range ids {
		if m == nil || id < 1 || id > len(m.Batches) {
			continue
		}
		b := &m.Batches[id-1]
		for _, t := range Tables {
			bt, ok := b.Tables[t]
			if !ok {
				continue
			}
			for _, f := range bt.Files {
				if !keep[f.Path] {
					files = append(files, f.Path)
				}
			}
			markers = append(markers, BatchDir(t, id)+"/"+MarkerName)
			dirs = append(dirs, BatchDir(t, id))
		}
	}
	return files, markers, dirs
}

// mergeStaged takes the superseded batches' files into this batch's: per
// table and day, their files (in batch order) and this batch's (in LSN
// order) are concatenated into files of at most FileRows rows (a file of
// more by itself stays alone), written into the staging directory in
// place of this batch's own; a file of theirs left alone (a day no other
// file shares) is carried over where it is (Exporter.carried), listed by
// this batch's manifest in its old batch=N/ directory. Called when every
// file is complete, before publishing.
func (e *Exporter) mergeStaged() error {
	in := e.cfg.Merge
	if in == nil {
		return nil
	}
	e.staged.mu.Lock()
	defer e.staged.mu.Unlock()
	for _, table := range e.cfg.Tables {
		type input struct {
			f     MarkerFile
			rel   string // of this batch: relative to its dataset dir
			earli bool
		}
		byDay := map[string][]input{}
		for _, f := range in.Files[table] {
			// <table>/batch=N/day=D/part-X
			parts := strings.Split(f.Path, "/")
			if len(parts) < 3 {
				return fmt.Errorf("%s: %w: not a batch's file", f.Path, ErrManifest)
			}
			day := parts[len(parts)-2]
			byDay[day] = append(byDay[day], input{f: f, earli: true})
		}
		own := e.staged.byTable[table]
		sort.Slice(own, func(i, j int) bool { return own[i].Path < own[j].Path })
		for _, f := range own {
			day, _, _ := strings.Cut(f.Path, "/")
			byDay[day] = append(byDay[day], input{f: f, rel: f.Path})
		}
		days := make([]string, 0, len(byDay))
		for d := range byDay {
			days = append(days, d)
		}
		sort.Strings(days)
		base := e.datasetDir(table)
		var out, carried []MarkerFile
		for _, day := range days {
			inputs := byDay[day]
			// Runs of at most FileRows rows, each one file.
			for len(inputs) > 0 {
				n, rows := 1, inputs[0].f.Rows
				for n < len(inputs) && (e.cfg.FileRows <= 0 || rows+inputs[n].f.Rows <= e.cfg.FileRows) {
					rows += inputs[n].f.Rows
					n++
				}
				run := inputs[:n]
				inputs = inputs[n:]
				if len(run) == 1 {
					if run[0].earli {
						// Alone: carried over where it is, not copied
						// (a night costs the days it shares, not the
						// dataset's).
						carried = append(carried, run[0].f)
					} else {
						out = append(out, run[0].f) // this batch's, as it is
					}
					continue
				}
				files, err := e.mergeRun(base, day, run[0].f.Path, func(yield func(MarkerFile, string, bool) bool) {
					for _, x := range run {
						if !yield(x.f, x.rel, x.earli) {
							return
						}
					}
				})
				if err != nil {
					return fmt.Errorf("merging %s %s: %w", table, day, err)
				}
				out = append(out, files...)
			}
		}
		e.staged.byTable[table] = out
		if e.carried == nil {
			e.carried = map[string][]MarkerFile{}
		}
		e.carried[table] = carried
	}
	return nil
}

// mergeRun writes one run of a day's files as one file named after its
// first (several when their schemas differ: a dataset whose batches were
// written with and without --desc, say), removing this batch's own inputs.
func (e *Exporter) mergeRun(base, day, first string, run func(func(MarkerFile, string, bool) bool)) ([]MarkerFile, error) {
	var datas [][]byte
	var rows int64
	var own []string
	var rerr error
	run(func(f MarkerFile, rel string, earlier bool) bool {
		var b []byte
		if earlier {
			b, rerr = fs.ReadFile(e.cfg.Merge.FS, f.Path)
		} else {
			b, rerr = os.ReadFile(filepath.Join(base, filepath.FromSlash(rel)))
			own = append(own, rel)
		}
		if rerr != nil {
			return false
		}
		datas = append(datas, b)
		rows += f.Rows
		return true
	})
	if rerr != nil {
		return nil, rerr
	}
	rel := day + "/" + path.Base(first)
	out := filepath.Join(base, filepath.FromSlash(rel))
	var err error
	if e.cfg.Format == Parquet {
		err = ConcatParquet(out, datas)
	} else {
		err = concatText(out, e.cfg.Format, datas)
	}
	if errors.Is(err, ErrConcat) {
		// Not one file: each as it is, under its own name.
		var files []MarkerFile
		i := 0
		var werr error
		run(func(f MarkerFile, r string, earlier bool) bool {
			name := day + "/" + path.Base(f.Path)
			if earlier {
				werr = writeParts(filepath.Join(base, filepath.FromSlash(name)), [][]byte{datas[i]})
			}
			i++
			files = append(files, MarkerFile{Path: name, Rows: f.Rows})
			return werr == nil
		})
		return files, werr
	}
	if err != nil {
		return nil, err
	}
	for _, r := range own {
		if r != rel {
			if err := os.Remove(filepath.Join(base, filepath.FromSlash(r))); err != nil {
				return nil, err
			}
		}
	}
	return []MarkerFile{{Path: rel, Rows: rows}}, nil
}
