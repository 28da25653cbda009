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

// planMerge lets the batch merge its files with the dataset's small files
// of the days it writes (export/merge.go); nothing with --no-merge.
func planMerge(below int64, m *export.Manifest, cfg *export.Config, dsFS fs.FS) {
	if below > 0 {
		cfg.Merge = m.MergeInput(dsFS, below, cfg.Format.Ext())
	}
}

// removeReplaced removes the earlier batches' files that the committed
// batch b merged into its own (or, by the next run, those a run killed
// before removing them left): the completion markers of their batch=N/
// directories first (a reader that finds a marker finds its files), then
// the files, then a local dataset's directories left empty. Nothing there
// is no error.
func removeReplaced(target string, tree *objstore.Tree, root string, b *export.Batch) error {
	markers, files := export.ReplacedFiles(b)
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
		for _, f := range files {
			day := filepath.Dir(filepath.Join(target, filepath.FromSlash(f)))
			os.Remove(day)               // only if empty
			os.Remove(filepath.Dir(day)) // the batch=N/ directory, likewise
		}
	}
	return nil
}

// removeReplacedOrSay removes the replaced files, saying on stderr what it
// could not remove (the batch is committed: a later run removes them).
func removeReplacedOrSay(stderr io.Writer, target string, tree *objstore.Tree, root string, b *export.Batch) {
	if len(b.Replaces) == 0 {
		return
	}
	if err := removeReplaced(target, tree, root, b); err != nil {
		fmt.Fprintf(stderr, "walscope: %s: batch %d: the files it merged are not all removed (no reader of the manifest reads them; the next append removes them): %v\n", target, b.ID, err)
	}
}

// mergedNote says how many earlier files a batch merged ("" if none).
func mergedNote(b *export.Batch) string {
	if len(b.Replaces) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d earlier files merged into it", len(b.Replaces))
}
