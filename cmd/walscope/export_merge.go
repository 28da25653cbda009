package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog/objstore"
)

// mergeBelow returns --merge-below in bytes, 0 with --no-merge.
func mergeBelow(c *cli.Command) (int64, error) {
	if c.Bool("no-merge") {
		if c.IsSet("merge-below") {
			return 0, usageErr("--no-merge and --merge-below cannot be combined")
		}
		return 0, nil
	}
	n, err := parseByteSize(c.String("merge-below"))
	if err != nil || n < 1 {
		return 0, usageErr("invalid value %q for option --merge-below (a size: 64MB, 512kB, bytes)", c.String("merge-below"))
	}
	return n, nil
}

// planMerge makes the batch take over the small batches at the end of the
// manifest (export/merge.go): their files become the new batch's, merged
// with its own per table and day.
func planMerge(below int64, m *export.Manifest, cfg *export.Config, dsFS fs.FS) {
	ids := m.MergeCandidates(below, cfg.Format.Ext(), cfg.Tables)
	cfg.Merge = m.MergeInput(dsFS, ids)
}

// removeSuperseded removes the files of the superseded batches ids that
// the batch by (which supersedes them) does not list, once by is committed
// (or, by the next run, after a run killed before it removed them): their
// completion markers first (a reader that finds a marker finds its files),
// then the files, then a local dataset's directories left empty. Nothing
// there is no error.
func removeSuperseded(target string, tree *objstore.Tree, root string, m *export.Manifest, ids []int, by *export.Batch) error {
	files, markers, dirs := m.SupersededFiles(ids, by)
	for _, name := range append(markers, files...) {
		var err error
		if tree == nil {
			err = os.Remove(filepath.Join(target, filepath.FromSlash(name)))
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else {
			err = tree.Remove(tree.Join(root, name))
		}
		if err != nil {
			return err
		}
	}
	if tree == nil {
		for _, d := range dirs {
			dir := filepath.Join(target, filepath.FromSlash(d))
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() {
					os.Remove(filepath.Join(dir, e.Name())) // only if empty
				}
			}
			os.Remove(dir)
		}
	}
	return nil
}

// removeSupersededOrSay removes the superseded batches' files, saying on
// stderr what it could not remove (the batch is committed: a later run
// removes them).
func removeSupersededOrSay(stderr io.Writer, target string, tree *objstore.Tree, root string, m *export.Manifest, ids []int, by *export.Batch) {
	if len(ids) == 0 {
		return
	}
	if err := removeSuperseded(target, tree, root, m, ids, by); err != nil {
		fmt.Fprintf(stderr, "walscope: %s: the files of the merged batches %v are not all removed (no reader reads them; the next append removes them): %v\n", target, ids, err)
	}
}

// mergedNote says which batches a batch merged ("" if none).
func mergedNote(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	if len(ids) == 1 {
		return fmt.Sprintf(", merged batch %d into it", ids[0])
	}
	return fmt.Sprintf(", merged batches %d to %d into it", ids[0], ids[len(ids)-1])
}
