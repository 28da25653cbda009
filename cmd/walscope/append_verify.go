package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/objstore"
)

// exportedCheck is what an append checks of the segments earlier batches
// exported: at once, the size of every plain file (and with
// --verify-exported the checksum of every one); the checksum of the segment
// the last batch ended in (the new batch reads it again) while the batch is
// read, and before it commits (wait). Hashing that 16 MB segment first was
// most of a small night's overhead against exporting it alone (issue 29:
// 12 of the 40 ms a one-segment night's append took more, with SHA-256); it
// now runs on the core the night's reading leaves idle. Each segment is
// checked with the checksum its batch recorded: the CRC-32C, or the
// SHA-256 in a manifest of version 1.
type exportedCheck struct {
	target  string
	batch   int
	hashes  *archive.SegmentChecksums
	changed []string              // found at once
	later   []xlog.SegmentFile    // summed in the background, compared by wait
	want    []export.SegmentEntry // later's entries in the manifest
}

// checkExported compares the input's segments with what the manifest
// recorded of them: every plain file's size, and the checksum of the segment
// the last batch ended in (later, by wait), or of every one with all (at
// once). The checksums come from hashes, whose Prefetch should have started
// on the segments from the last batch's end.
func checkExported(target string, hashes *archive.SegmentChecksums, m *export.Manifest, last *export.Batch, segSize uint32, all bool) *exportedCheck {
	x := &exportedCheck{target: target, batch: last.ID, hashes: hashes}
	src := hashes.Source()
	end, _ := xlog.ParseLSN(last.End)
	boundary := xlog.NewSegmentName(xlog.TimeLineID(last.EndTimeline), uint64(end)/uint64(segSize), segSize).String()
	for _, f := range src.Segments() {
		name := segmentFileName(f)
		want, ok := m.Segment(name)
		if !ok {
			continue
		}
		if size := f.Size; filepath.Base(f.Path) == name {
			// A plain file: its size, from the listing or the file system.
			if size <= 0 && !objstore.IsURL(f.Path) {
				if st, err := os.Stat(f.Path); err == nil {
					size = st.Size()
				}
			}
			if size > 0 && size != want.Size {
				x.changed = append(x.changed, fmt.Sprintf("%s: %d bytes, exported with %d", f.Path, size, want.Size))
				continue
			}
		}
		switch {
		case all:
			x.changed = append(x.changed, compareSum(hashes, f, want)...)
		case name == boundary:
			x.later, x.want = append(x.later, f), append(x.want, want)
		}
	}
	return x
}

// now returns the error of the segments found changed at once (nil if
// none).
func (x *exportedCheck) now() error {
	if x == nil || len(x.changed) == 0 {
		return nil
	}
	return x.error(x.changed)
}

// wait returns the error of every segment found changed, waiting for the
// checksums summed in the background (nil if none). Call it before a
// batch commits, and before any other outcome of the run is reported (a
// changed segment may be what made the reading fail).
func (x *exportedCheck) wait() error {
	if x == nil {
		return nil
	}
	changed := x.changed
	for i, f := range x.later {
		changed = append(changed, compareSum(x.hashes, f, x.want[i])...)
	}
	if len(changed) == 0 {
		return nil
	}
	return x.error(changed)
}

func (x *exportedCheck) error(changed []string) error {
	return &exitError{code: exitSegmentChanged, noHint: true, msg: fmt.Sprintf("%s: %d segment(s) changed since batch %d exported them (re-pushed or damaged), nothing appended: %s",
		x.target, len(changed), x.batch, strings.Join(changed, "; "))}
}

// compareSum returns what differs between segment file f's checksum and
// the manifest's entry (nothing if they agree), summed with the algorithm
// the entry recorded.
func compareSum(hashes *archive.SegmentChecksums, f xlog.SegmentFile, want export.SegmentEntry) []string {
	alg, wantSum := want.Checksum()
	size, sum, err := hashes.Get(f, alg)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s: %v", f.Path, err)}
	case size != want.Size || sum != wantSum:
		return []string{fmt.Sprintf("%s: %s %s (%d bytes), exported with %s (%d bytes)", f.Path, alg, sum, size, wantSum, want.Size)}
	}
	return nil
}
