package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Merging small nights (issue 29: partitions "stay a size engines like").
// A quiet night's batch writes a file or two per table and day, and a day
// that two nights share (the job runs after midnight) has a file of each;
// after a year, thousands of small files, which DuckDB, polars and Spark
// open one by one. So `export --append` merges: per table and day it
// wrote, the batch's files and the smallest files of that day before it
// (of earlier batches, the last ones, while they add up to less than
// MergeInput.Below) are concatenated into one file of this batch
// (ConcatParquet: row groups copied as they are, no row decoded), and its
// manifest lists the earlier files it replaces (Batch.Replaces). Readers
// read every listed file no later batch replaces (Manifest.Files); the
// earlier batches' manifests are untouched (what they read is still
// theirs: LSN ranges, segments, names, the growth aggregate, which
// `walscope growth` reads as before). The replaced files are removed once
// the manifest is committed (ReplacedFiles); a run killed in between leaves
// them unlisted, and the next run removes them.
//
// Why the files and not the WAL again: an append needs only the WAL after
// the last batch (from the segment it ended in); the nights before may be
// gone from the archive by then, or not given. Their files are what the
// dataset surely holds, and copying row groups costs their bytes' I/O, not
// a decoding. Why per file and not per batch: a night touches its own days
// only (the one it shares with the night before, and its new ones), so it
// rewrites those days' small files and nothing else, and its manifest
// lists its own files only: a dataset's manifests grow by a night's files
// a night, whatever its age.

// DefaultMergeBelow is the default threshold of merging, in bytes: the
// files of a day smaller than it are merged into files of at most it. Files
// of tens of MB are what engines read well (one request and footer per
// file), and a night's rewrite stays bounded by it per table and day.
const DefaultMergeBelow = 64 << 20

// MergeInput is what a batch may merge its files with: the files of the
// dataset that no batch replaced, by table and day.
type MergeInput struct {
	// FS is the dataset's root (a directory, or an object store prefix).
	FS fs.FS
	// Below bounds, in bytes, a merged file and the files merged into it.
	Below int64
	// Live are the earlier batches' files that may be merged, by table
	// and day directory ("day=2026-12-01"), relative to the dataset's
	// root, in batch and path order.
	Live map[string]map[string][]MarkerFile
}

// MergeInput returns what the next batch may merge its files with: the
// live files smaller than below, in the format of extension ext. The
// manifests of a walscope before merging give no file sizes: their files
// are kept, and stat'ed when the batch writes their day (mergeStaged).
func (m *Manifest) MergeInput(fsys fs.FS, below int64, ext string) *MergeInput {
	in := &MergeInput{FS: fsys, Below: below, Live: map[string]map[string][]MarkerFile{}}
	if m == nil {
		return in
	}
	for _, b := range m.Batches {
		for t, bt := range b.Tables {
			files := append([]MarkerFile(nil), bt.Files...)
			sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
			for _, f := range files {
				// (f.Bytes 0: a manifest of before merging; the file is
				// stat'ed if the batch writes its day, mergeStaged)
				if _, gone := m.replacedBy[f.Path]; gone || f.Bytes >= below || !strings.HasSuffix(f.Path, ext) {
					continue
				}
				day := path.Base(path.Dir(f.Path))
				if in.Live[t] == nil {
					in.Live[t] = map[string][]MarkerFile{}
				}
				in.Live[t][day] = append(in.Live[t][day], f)
			}
		}
	}
	return in
}

// ReplacedFiles returns what to remove (relative to the dataset's root)
// once batch b is committed: the completion markers of the batch
// directories it replaced files of (they list them), then the files.
func ReplacedFiles(b *Batch) (markers, files []string) {
	seen := map[string]bool{}
	for _, p := range b.Replaces {
		parts := strings.SplitN(p, "/", 3) // table, batch=N, rest
		if len(parts) == 3 {
			if mk := parts[0] + "/" + parts[1] + "/" + MarkerName; !seen[mk] {
				seen[mk] = true
				markers = append(markers, mk)
			}
		}
		files = append(files, p)
	}
	return markers, files
}

// mergeInput is a file that may be merged: an earlier batch's (path
// relative to the dataset's root) or this batch's (relative to its dataset
// directory).
type mergeInput struct {
	f       MarkerFile
	bytes   int64
	earlier bool
}

// mergeStaged merges, per table and day this batch wrote, its files and
// the day's small files of earlier batches (MergeInput.Live), from the
// last backwards, into files of at most MergeInput.Below bytes and
// FileRows rows: written into the staging directory in place of this
// batch's own, the earlier files merged listed in e.replaced. Called when
// every file is complete, before publishing.
func (e *Exporter) mergeStaged() error {
	in := e.cfg.Merge
	if in == nil {
		return nil
	}
	e.staged.mu.Lock()
	defer e.staged.mu.Unlock()
	for _, table := range e.cfg.Tables {
		base := e.datasetDir(table)
		own := map[string][]mergeInput{}
		for _, f := range e.staged.byTable[table] {
			day, _, _ := strings.Cut(f.Path, "/")
			st, err := os.Stat(filepath.Join(base, filepath.FromSlash(f.Path)))
			if err != nil {
				return err
			}
			own[day] = append(own[day], mergeInput{f: f, bytes: st.Size()})
		}
		days := make([]string, 0, len(own))
		for d := range own {
			days = append(days, d)
		}
		sort.Strings(days)
		var out []MarkerFile
		for _, day := range days {
			mine := own[day]
			sort.Slice(mine, func(i, j int) bool { return mine[i].f.Path < mine[j].f.Path })
			var inputs []mergeInput
			for _, f := range in.Live[table][day] {
				n := f.Bytes
				if n <= 0 {
					// a batch of before merging: the file as it is now (a
					// file gone or unreadable is left to the readers)
					st, err := fs.Stat(in.FS, f.Path)
					if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() >= in.Below {
						continue
					}
					n = st.Size()
				}
				inputs = append(inputs, mergeInput{f: f, bytes: n, earlier: true})
			}
			inputs = append(inputs, mine...)
			for _, run := range mergeRuns(inputs, in.Below, e.cfg.FileRows) {
				if len(run) == 1 {
					out = append(out, run[0].f) // this batch's, alone: as it is
					continue
				}
				f, replaced, err := e.mergeRun(base, day, run)
				if err != nil {
					return fmt.Errorf("merging %s %s: %w", table, day, err)
				}
				out = append(out, f...)
				e.replaced = append(e.replaced, replaced...)
			}
		}
		e.staged.byTable[table] = out
	}
	sort.Strings(e.replaced)
	return nil
}

// mergeRatio bounds what a night rewrites: an earlier file is merged
// with the night's files of its day only if it is at most mergeRatio times
// their bytes, or at most a 16th of the threshold (a few MB, cheap to copy
// whatever the night). A day that many nights write (the
// nights of scripts/bench-append.sh all fall on one date) then grows files
// of a few nights each instead of rewriting one file of up to the threshold
// every night; a day two nights share (the usual: the job runs after
// midnight) still ends in one file, its small part merged into the large.
const mergeRatio = 8

// mergeRuns cuts a day's files (the earlier batches', then this batch's)
// into the runs to write as one file each: from the last file backwards,
// a run takes the file before it while their bytes stay at most below and
// their rows at most fileRows (0: any), an earlier file only if it is
// small (mergeRatio); it ends at the first run that holds none of this
// batch's files, which, and the files before it, stay as they are (not
// returned). In file order.
func mergeRuns(inputs []mergeInput, below, fileRows int64) [][]mergeInput {
	var own int64
	for _, x := range inputs {
		if !x.earlier {
			own += x.bytes
		}
	}
	small := func(x mergeInput) bool { return !x.earlier || x.bytes <= mergeRatio*own || x.bytes <= below/16 }
	var runs [][]mergeInput
	for i := len(inputs) - 1; i >= 0 && !inputs[i].earlier; {
		j, rows, bytes := i, inputs[i].f.Rows, inputs[i].bytes
		for j > 0 && small(inputs[j-1]) && bytes+inputs[j-1].bytes <= below && (fileRows <= 0 || rows+inputs[j-1].f.Rows <= fileRows) {
			j--
			rows += inputs[j].f.Rows
			bytes += inputs[j].bytes
		}
		runs = append(runs, inputs[j:i+1])
		i = j - 1
	}
	slices.Reverse(runs)
	return runs
}

// mergeRun writes one run of a day's files as one file of this batch,
// named after its first, removing this batch's own inputs; it returns the
// file and the earlier batches' files it replaces. Files that cannot be
// concatenated (of another schema: batches written with and without
// --desc, say) are left as they are.
func (e *Exporter) mergeRun(base, day string, run []mergeInput) ([]MarkerFile, []string, error) {
	var rows int64
	for _, x := range run {
		rows += x.f.Rows
	}
	rel := day + "/" + path.Base(run[0].f.Path)
	out := filepath.Join(base, filepath.FromSlash(rel))
	var err error
	if e.cfg.Format == Parquet {
		err = e.concatRun(base, out, run)
	} else {
		datas := make([][]byte, len(run))
		for i, x := range run {
			if x.earlier {
				datas[i], err = fs.ReadFile(e.cfg.Merge.FS, x.f.Path)
			} else {
				datas[i], err = os.ReadFile(filepath.Join(base, filepath.FromSlash(x.f.Path)))
			}
			if err != nil {
				return nil, nil, err
			}
		}
		err = concatText(out, e.cfg.Format, datas)
	}
	if errors.Is(err, ErrConcat) {
		var own []MarkerFile
		for _, x := range run {
			if !x.earlier {
				own = append(own, x.f)
			}
		}
		return own, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var replaced []string
	for _, x := range run {
		if x.earlier {
			replaced = append(replaced, x.f.Path)
		} else if x.f.Path != rel {
			if err := os.Remove(filepath.Join(base, filepath.FromSlash(x.f.Path))); err != nil {
				return nil, nil, err
			}
		}
	}
	return []MarkerFile{{Path: rel, Rows: rows}}, replaced, nil
}

// concatRun concatenates a run's Parquet files into out (concatParquet):
// files of a local dataset and of the staging directory are copied where
// they lie; an object store's are read into memory.
func (e *Exporter) concatRun(base, out string, run []mergeInput) error {
	srcs := make([]concatSource, len(run))
	for i, x := range run {
		var f fs.File
		var err error
		if x.earlier {
			f, err = e.cfg.Merge.FS.Open(x.f.Path)
		} else {
			f, err = os.Open(filepath.Join(base, filepath.FromSlash(x.f.Path)))
		}
		if err != nil {
			return err
		}
		defer f.Close()
		if of, ok := f.(*os.File); ok {
			st, err := of.Stat()
			if err != nil {
				return err
			}
			srcs[i] = concatSource{of, st.Size()}
			continue
		}
		data, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		srcs[i] = concatSource{bytes.NewReader(data), int64(len(data))}
	}
	return concatParquet(out, srcs)
}
