package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/objstore"
)

// defaultFileRows bounds the rows of one file of an incremental dataset:
// 4 Mi records are about 60 to 100 MB of Parquet, a size the engines read
// well (issue 29: "split big nights").
const defaultFileRows = 4 << 20

// exitSegmentChanged is export --append's exit code for a segment that
// changed under a name an earlier batch exported (re-pushed or damaged):
// nothing is appended.
const exitSegmentChanged = 3

// exitLeased is export --append's exit code for an object-store dataset
// another append holds (its lease), or whose batch another append
// committed first: nothing is appended.
const exitLeased = 4

// appendHook, set by tests, is called at each step of an append
// (export.Config.Hook's steps, then "manifest" before the batch's manifest
// is written): a test stops the run there as a kill would.
var appendHook func(step string) error

// appendAction is `export --append DATASET WAL...`: the WAL after the end
// of the dataset's last batch is exported as a new batch, committed by its
// manifest file (export/manifest.go).
func appendAction(c *cli.Command, cfg export.Config, target string) error {
	stderr := c.Root().ErrWriter
	for _, f := range []string{"out", "overwrite", "shard", "partition-by", "label", "start", "end", "path", "timeline",
		"limit", "rmgr", "xid", "relation", "block", "fork", "fullpage"} {
		if c.IsSet(f) {
			return usageErr("--append cannot be combined with --%s: a batch is the WAL after the dataset's last batch, whole", f)
		}
	}
	if n := c.Int("file-rows"); n < 1 {
		return usageErr("invalid value \"%d\" for option --file-rows", n)
	}
	cfg.PartitionBy, cfg.FileRows = export.PartitionBatch, int64(c.Int("file-rows"))
	below, err := mergeBelow(c)
	if err != nil {
		return err
	}
	store := objstore.IsURL(target)

	// The dataset's manifest, and its lock: one append at a time (locally
	// a flock, in a store a lease object).
	var dsFS fs.FS
	var tree *objstore.Tree
	var root string
	if store {
		loc, err := objstore.ParseURL(target)
		if err != nil {
			return usageErr("%v", err)
		}
		t, err := storeTree(loc)
		if err != nil {
			return storeErr(err)
		}
		tree, root = t, strings.TrimSuffix(loc.String(), "/")
		dsFS = treeFS{t, root}
		lease, err := export.TakeLease(t, t.Join(root, export.LeaseName), export.LeaseOptions{TTL: c.Duration("lock-ttl"), Break: c.Bool("break-lock"), Version: versionString()})
		if err != nil {
			if errors.Is(err, export.ErrLeased) {
				return &exitError{code: exitLeased, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
			}
			if e := storeErr(err); e != nil {
				return e
			}
			return err
		}
		if lease.TookOver != "" && !c.Bool("quiet") {
			fmt.Fprintf(c.Root().ErrWriter, "walscope: %s: %s\n", target, lease.TookOver)
		}
		defer func() {
			if err := lease.Release(); err != nil {
				fmt.Fprintf(c.Root().ErrWriter, "walscope: %s: releasing the lease: %v\n", target, err)
			}
		}()
	} else {
		lock, err := export.LockDataset(target)
		if err != nil {
			return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
		}
		defer lock.Close()
		dsFS = os.DirFS(target)
	}
	m, err := export.ReadManifest(dsFS)
	if err != nil {
		if e := storeErr(err); e != nil {
			return e
		}
		return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
	}
	if m == nil {
		if t := legacyTable(dsFS); t != "" {
			return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s holds a dataset without a batch manifest (%s/, written by `walscope export --out`): "+
				"--append needs a dataset it started (manifest version %d); append to a new directory over the same archive, which exports it whole as batch 1", target, t, export.ManifestVersion)}
		}
	}
	last := m.Last()
	if last != nil {
		// A run killed after committing a merge leaves the files it
		// merged: removed now.
		removeReplacedOrSay(stderr, target, tree, root, last)
		removeOldState(target, tree, root, last.ID)
	}

	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	src, ok := in.src.(*archive.Source)
	if !ok {
		return usageErr("--append reads an archive (a directory, tar file, store prefix or several segment files), not pg_waldump's STARTSEG ENDSEG form")
	}
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return readerSetupError(err)
	}
	segSize := r.SegmentSize()
	r.Close()
	ckSegs, ckTimeout, err := serverCheckpoints(c, segSize, r.Version())
	if err != nil {
		return err
	}
	var start xlog.LSN
	hashes := archive.NewSegmentChecksums(src)
	var exported *exportedCheck // nil: no batch before
	if last != nil {
		start, _ = xlog.ParseLSN(last.End)
		// The checksums of the segments the batch will read (the last
		// one's end segment first), computed while it reads them.
		hashes.Prefetch(uint64(start)/uint64(segSize), segSize, archive.CRC32C)
		exported = checkExported(target, hashes, m, last, segSize, c.Bool("verify-exported"))
		if err := exported.now(); err != nil {
			return err
		}
		if err := forkedBefore(src, last, start); err != nil {
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", target, err)}
		}
		if !holdsAfter(src, start, segSize) {
			if err := exported.wait(); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "walscope: %s: nothing to append: the input holds no WAL after %s, the end of batch %d\n", target, start, last.ID)
			return nil
		}
		if !holdsSegment(src, uint64(start)/uint64(segSize), segSize, xlog.TimeLineID(last.EndTimeline)) && uint64(start)%uint64(segSize) != 0 {
			// The next batch begins inside the segment the last one ended in.
			name := xlog.NewSegmentName(xlog.TimeLineID(last.EndTimeline), uint64(start)/uint64(segSize), segSize)
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: batch %d ended at %s, in segment %s, which the input does not hold [missing-segment]: give the archive (or at least that segment and the ones after it)",
				target, last.ID, start, name)}
		}
		in.opts.Start = start
	}
	r, err = xlog.NewReader(in.src, in.opts)
	if err != nil {
		return readerSetupError(err)
	}
	if last == nil {
		hashes.Prefetch(0, segSize, archive.CRC32C)
	}
	err = exportFirstPass(c, in, r, &cfg)
	r.Close()
	if err != nil {
		if e := exported.wait(); e != nil {
			return e // (what made the reading fail)
		}
		return err
	}
	if last != nil {
		if err := carryOver(&cfg, last, segSize, ckSegs, ckTimeout); err != nil {
			return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
		}
	} else {
		applyServerCheckpoints(ckSegs, ckTimeout, nil, cfg.Cycles)
	}
	stop, held := holdBack(&cfg)
	if held != "" {
		if err := exported.wait(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "walscope: %s: nothing to append: %s\n", target, held)
		return nil
	}
	cfg.Spacing = spacingCarry(c, last, dsFS)
	cfg.Batch = m.NextID()
	cfg.Carried = m.Names()
	planMerge(below, m, &cfg, dsFS)
	// A batch directory of this number is a killed run's, never committed:
	// replaced.
	cfg.Overwrite = true
	cfg.Hook = appendHook

	stagingDir, upload, cleanup, err := exportStaging(target)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.Dir = stagingDir
	ex, err := export.New(cfg)
	if err != nil {
		if e := publishErr(err); e != nil {
			return e
		}
		return usageErr("%v", err)
	}
	var facts []archive.FileFact
	if ex.Want(export.TableSegments) {
		facts = batchFacts(src, start, segSize)
	}
	noop := false
	var end xlog.LSN
	stopWhy := ""
	if stop != 0 {
		stopWhy = fmt.Sprintf("the checkpoint cycle from redo point %s on is the next batch's", stop)
	}
	err = exportSpans(c, ex, facts, start, stop, stopWhy, func(e xlog.LSN) (bool, error) {
		end = e
		if ex.Empty() {
			noop = true
			ex.Abort()
			return true, nil
		}
		return false, nil
	})
	if e := exported.wait(); e != nil {
		return e // before the batch commits, and before a reading error it may explain
	}
	if err != nil {
		if e := publishErr(err); e != nil {
			return e
		}
		return err
	}
	if noop {
		fmt.Fprintf(stderr, "walscope: %s: nothing to append: no record after %s\n", target, start)
		return nil
	}
	b := ex.BatchSummary()
	b.Walscope, b.Created = versionString(), time.Now().UTC()
	if len(b.Timelines) == 0 {
		return fmt.Errorf("export --append: a batch of records without a timeline")
	}
	if stop != 0 {
		end = stop // (the last record read ends there, or at the page header before it)
	}
	b.Start, b.End = start.String(), end.String()
	if last == nil {
		b.Start = b.Timelines[0].Start
	}
	b.EndTimeline = uint32(b.Timelines[len(b.Timelines)-1].Timeline)
	if b.Segments, err = batchSegments(hashes, b.Timelines, segSize); err != nil {
		return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: checksums of the batch's segments: %v", target, err)}
	}
	if appendHook != nil {
		if err := appendHook("manifest"); err != nil {
			return err
		}
	}
	// The commit: the manifest, after every file of the batch.
	if upload != nil {
		if err := upload(true); err != nil {
			if e := storeErr(err); e != nil {
				return e
			}
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", target, err)}
		}
		if b.SpacingState != nil {
			// (replacing one a killed run of this batch left)
			key := tree.Join(root, export.ManifestDir, export.SpacingStateName(b.ID))
			tree.Remove(key)
			if err := tree.Create(key, b.SpacingState); err != nil {
				if e := storeErr(err); e != nil {
					return e
				}
				return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", target, err)}
			}
		}
		if err := tree.Create(tree.Join(root, export.ManifestDir, export.BatchFileName(b.ID)), b.Encode()); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return &exitError{code: exitLeased, noHint: true, msg: fmt.Sprintf("%s: batch %d was committed by another append meanwhile (its lease was broken or taken over); this run's files are not listed, and a re-run appends after that batch", target, b.ID)}
			}
			if e := storeErr(err); e != nil {
				return e
			}
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", target, err)}
		}
	} else {
		if err := export.WriteSpacingState(target, &b); err != nil {
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", target, err)}
		}
		if err := export.WriteBatch(target, &b); err != nil {
			return &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
		}
	}
	if appendHook != nil {
		if err := appendHook("committed"); err != nil {
			return err
		}
	}
	removeReplacedOrSay(stderr, target, tree, root, &b)
	removeOldState(target, tree, root, b.ID)
	if !c.Bool("quiet") {
		rows := b.Tables[export.TableRecords].Rows
		fmt.Fprintf(stderr, "walscope: %s: batch %d: %s to %s, %d segments, %d records, days %s%s\n",
			target, b.ID, b.Start, b.End, len(b.Segments), rows, strings.Join(b.Days, ","), mergedNote(&b))
	}
	return nil
}

// carryOver makes the batch continue the last one: the checkpoint cycle its
// first records belong to, the last record time, and the checkpoints before
// it, with which its own checkpoints' causes are classified again (the
// spacing from the last one before, and the settings inferred from the
// recent history, not from the night's few, then the server's settings
// where the flags give them: ckSegs and ckTimeout, see serverCheckpoints).
func carryOver(cfg *export.Config, last *export.Batch, segSize uint32, ckSegs int, ckTimeout time.Duration) error {
	if last.LastTime != nil {
		cfg.LastTime = *last.LastTime
	}
	recent := last.RecentCheckpoints
	if len(recent) == 0 && last.LastCycle != nil && last.LastCycle.Checkpoint != "" {
		recent = []export.CycleCarry{*last.LastCycle} // a manifest of before recent_checkpoints
	}
	// The checkpoints before it: the last batch's, and those whose record
	// this batch's first pass read (cfg.Earlier: a cycle that began
	// before the last batch ended, in a dataset of a walscope before the
	// batches ended at a redo point), once each, in LSN order.
	seen := cfg.Earlier
	cfg.Earlier = nil
	for i := range recent {
		c, err := recent[i].Cycle()
		if err != nil {
			return err
		}
		cfg.Earlier = append(cfg.Earlier, c)
	}
	for _, c := range seen {
		if !slices.ContainsFunc(cfg.Earlier, func(e stats.CycleInfo) bool { return e.Redo == c.Redo }) {
			cfg.Earlier = append(cfg.Earlier, c)
		}
	}
	slices.SortStableFunc(cfg.Earlier, func(a, b stats.CycleInfo) int { return cmp.Compare(a.Redo, b.Redo) })
	if last.LastCycle == nil || len(cfg.Cycles) == 0 {
		return nil
	}
	carried, err := last.LastCycle.Cycle()
	if err != nil {
		return err
	}
	defer func() {
		stats.Reclassify(cfg.Earlier, segSize, cfg.Cycles)
		applyServerCheckpoints(ckSegs, ckTimeout, cfg.Earlier, cfg.Cycles)
		if cfg.Cycles[0].Redo == carried.Redo {
			cfg.Cycles[0].Cause = carried.Cause // as the batch before recorded it
		}
	}()
	if cfg.Cycles[0].Checkpoint == 0 {
		// The WAL before this batch's first redo point (from its first
		// record, past start's page header) is the last batch's last
		// cycle.
		cfg.Cycles[0] = carried
	}
	// The wal level a PARAMETER_CHANGE of an earlier batch stated holds
	// until a record of this one states another (stats.RedoFinder).
	level := carried.WalLevel
	for i := range cfg.Cycles {
		if cfg.Cycles[i].WalLevel.Valid() {
			level = cfg.Cycles[i].WalLevel
		} else {
			cfg.Cycles[i].WalLevel = level
		}
	}
	return nil
}

// removeOldState removes the spacing state file of the batch before id,
// once id is committed: the next append resumes from id's own, so a
// dataset keeps one (a night's can weigh megabytes). One left behind (a
// run killed before removing it) costs room only; the next run removes it.
func removeOldState(target string, tree *objstore.Tree, root string, id int) {
	if id <= 1 {
		return
	}
	name := export.SpacingStateName(id - 1)
	if tree != nil {
		tree.Remove(tree.Join(root, export.ManifestDir, name))
		return
	}
	os.Remove(filepath.Join(target, export.ManifestDir, name))
}

// holdBack ends the batch at the redo point of the last checkpoint the
// input holds, so that no checkpoint cycle is split between two batches:
// before PostgreSQL 17 nothing marks a redo point when the WAL passes it
// (17's XLOG_CHECKPOINT_REDO does), only the checkpoint record written at
// the end of the spread checkpoint names it, often in the next night's
// WAL; a batch that read on past it would count the new cycle's records in
// the old one (their checkpoint_cycle, the cycle's volumes, its distinct
// blocks imaged and tenths), and those rows are never rewritten. The WAL
// from that redo point on is read again by the next append (at most about
// two checkpoint intervals). It returns the position to stop at (0: the
// cycles are not exported, read to the end) and, when the input holds no
// whole cycle after the last batch, why there is nothing to append.
func holdBack(cfg *export.Config) (stop xlog.LSN, nothing string) {
	n := len(cfg.Cycles)
	if n == 0 {
		return 0, ""
	}
	if n == 1 {
		if c := cfg.Cycles[0]; c.Checkpoint == 0 {
			return 0, fmt.Sprintf("the input holds no checkpoint record after %s; a batch ends at a checkpoint's redo point, so that no checkpoint cycle is split between batches", c.Redo)
		}
		return 0, fmt.Sprintf("the WAL from %s on is the checkpoint cycle of redo point %s, which has not ended in the input (no later checkpoint record); "+
			"a batch ends at a checkpoint's redo point, so that no checkpoint cycle is split between batches", cfg.Cycles[0].Redo, cfg.Cycles[0].Redo)
	}
	stop = cfg.Cycles[n-1].Redo
	cfg.Cycles = cfg.Cycles[:n-1]
	return stop, ""
}

// forkedBefore returns an error when the newest timeline's history (the one
// the reading follows) leaves the last batch's timeline before the point
// the batch read it to: the rows of that timeline after the switch are not
// on the history now followed, and the new timeline's WAL from the switch
// to there would never be exported.
func forkedBefore(src *archive.Source, last *export.Batch, end xlog.LSN) error {
	var newest xlog.TimeLineID
	for tli := range src.Histories() {
		newest = max(newest, tli)
	}
	if newest <= xlog.TimeLineID(last.EndTimeline) {
		return nil
	}
	key := src.Histories()[newest]
	text, err := src.ReadHistory(key)
	if err != nil {
		return err
	}
	entries, err := xlog.ParseHistory(text, newest)
	if err != nil {
		return fmt.Errorf("%s: %w [invalid-history]", key, err)
	}
	for _, h := range entries {
		if h.TLI == xlog.TimeLineID(last.EndTimeline) && h.Switch < end {
			return fmt.Errorf("batch %d read timeline %d to %s, past its switch at %s to the timeline %s leads to: "+
				"the rows of timeline %d after %s are not on that history [timeline-fork]; nothing appended", last.ID, h.TLI, end, h.Switch, key, h.TLI, h.Switch)
		}
	}
	return nil
}

// batchFacts returns what the segments table says of the files (sizes,
// compression, problems): of the files from the segment holding start on,
// when each is a file of its own (a directory of segments, a store prefix),
// so that a night's append opens the night's files and not the whole
// archive's; of every file otherwise (tar members, backup tools' layouts).
func batchFacts(src *archive.Source, start xlog.LSN, segSize uint32) []archive.FileFact {
	var paths []string
	first := uint64(start) / uint64(segSize)
	whole := func() []archive.FileFact {
		facts, _ := src.FactsWith(archive.FactsOptions{Quick: true})
		return facts
	}
	for _, f := range src.Segments() {
		if path.Base(filepath.ToSlash(f.Path)) != segmentFileName(f) {
			return whole() // a tar member, a compressed or renamed file
		}
		if f.Name.SegNo(segSize) >= first {
			paths = append(paths, f.Path)
		}
	}
	for _, h := range src.Histories() {
		paths = append(paths, h)
	}
	if len(paths) == 0 {
		return nil
	}
	sort.Strings(paths)
	sub, err := openArchive(paths...)
	if err != nil {
		return whole()
	}
	defer sub.Close()
	facts, _ := sub.FactsWith(archive.FactsOptions{Quick: true})
	return facts
}

// holdsAfter reports whether a segment of the input holds WAL at or after
// lsn.
func holdsAfter(src *archive.Source, lsn xlog.LSN, segSize uint32) bool {
	for _, f := range src.Segments() {
		if (f.Name.SegNo(segSize)+1)*uint64(segSize) > uint64(lsn) {
			return true
		}
	}
	return false
}

// holdsSegment reports whether the input holds segment segno of timeline
// tli or of a later one.
func holdsSegment(src *archive.Source, segno uint64, segSize uint32, tli xlog.TimeLineID) bool {
	for _, f := range src.Segments() {
		if f.Name.SegNo(segSize) == segno && f.Name.TLI >= tli {
			return true
		}
	}
	return false
}

func segmentFileName(f xlog.SegmentFile) string {
	if f.Partial {
		return f.Name.String() + ".partial"
	}
	return f.Name.String()
}

// batchSegments lists, with their CRC-32C, the segment files holding the
// timelines' ranges read (a whole segment preferred to a .partial one).
func batchSegments(hashes *archive.SegmentChecksums, tls []export.TimelineRange, segSize uint32) ([]export.SegmentEntry, error) {
	files := map[string]xlog.SegmentFile{}
	for _, f := range hashes.Source().Segments() {
		k := f.Name.String()
		if old, ok := files[k]; !ok || old.Partial && !f.Partial {
			files[k] = f
		}
	}
	var out []export.SegmentEntry
	seen := map[string]bool{}
	for _, r := range tls {
		lo, _ := xlog.ParseLSN(r.Start)
		hi, _ := xlog.ParseLSN(r.End)
		if hi <= lo {
			continue
		}
		for segno := uint64(lo) / uint64(segSize); segno <= uint64(hi-1)/uint64(segSize); segno++ {
			name := xlog.NewSegmentName(r.Timeline, segno, segSize).String()
			f, ok := files[name]
			if !ok || seen[name] {
				continue // (a timeline's first segment may be the old one's, read under its name)
			}
			seen[name] = true
			size, sum, err := hashes.Get(f, archive.CRC32C)
			if err != nil {
				return nil, err
			}
			out = append(out, export.SegmentEntry{Name: segmentFileName(f), Size: size, CRC32C: sum})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// legacyTable returns a table directory of a dataset written without a
// manifest ("" if none).
func legacyTable(fsys fs.FS) string {
	for _, t := range export.Tables {
		if ents, err := fs.ReadDir(fsys, t); err == nil && len(ents) > 0 {
			return t
		}
	}
	return ""
}

// treeFS is an object store prefix as an fs.FS (paths below root).
type treeFS struct {
	t    *objstore.Tree
	root string
}

func (f treeFS) Open(name string) (fs.File, error) { return f.t.Open(f.t.Join(f.root, name)) }

// Stat lets fs.Stat take a file's size from the store's listing (merging
// the files of a dataset whose manifests give none) instead of opening it.
func (f treeFS) Stat(name string) (fs.FileInfo, error) { return f.t.Stat(f.t.Join(f.root, name)) }

func (f treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := f.t.ReadDir(f.t.Join(f.root, name))
	if err != nil {
		var se *objstore.Error
		if errors.As(err, &se) && se.Class == objstore.ClassNotFound {
			return nil, fs.ErrNotExist
		}
	}
	return ents, err
}
