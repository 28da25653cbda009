package format

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/stats"
)

var volumeColumns = []string{"records", "record_bytes", "wal_bytes", "images", "image_bytes"}

func volumeCells(v stats.Volume) []string {
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	return []string{u(v.Records), u(v.RecordBytes), u(v.WALBytes), u(v.Images), u(v.ImageBytes)}
}

func numeric(text, nums int) []bool {
	out := make([]bool, text+nums)
	for i := text; i < text+nums; i++ {
		out[i] = true
	}
	return out
}

// RelationTable lists relation forks by WAL bytes, the records without block
// references last, named by cat (an names.Catalog, the names the WAL
// carries, names.FirstName of both; nil names nothing).
func RelationTable(b *stats.Breakdown, cat names.RelNamer, top int) *Table {
	if cat == nil {
		cat = names.FirstName(nil)
	}
	rels := make([]*stats.RelVolume, 0, len(b.Relations))
	for _, r := range b.Relations {
		rels = append(rels, r)
	}
	sort.Slice(rels, func(i, j int) bool {
		if rels[i].RecordBytes != rels[j].RecordBytes {
			return rels[i].RecordBytes > rels[j].RecordBytes
		}
		a, c := rels[i].Rel, rels[j].Rel
		return fmt.Sprint(a) < fmt.Sprint(c)
	})
	t := &Table{Columns: append([]string{"relation", "fork", "name"}, volumeColumns...), Numeric: numeric(3, 5)}
	for i, r := range rels {
		if top > 0 && i >= top {
			break
		}
		rel := fmt.Sprintf("%d/%d/%d", r.Rel.SpcOID, r.Rel.DBOID, r.Rel.RelNumber)
		name := relationName(b, cat, r.Rel.RelFileLocator)
		if orig, changed := b.Original(r.Rel.RelFileLocator); changed {
			// A file that replaced another (TRUNCATE, CLUSTER, VACUUM FULL).
			name += fmt.Sprintf(" (replaced %d)", orig.RelNumber)
		}
		t.Rows = append(t.Rows, append([]string{rel, r.Rel.Fork.Name(), strings.TrimSpace(name)}, volumeCells(r.Volume)...))
	}
	if b.NoRel.Records > 0 {
		t.Rows = append(t.Rows, append([]string{"(no block)", "", ""}, volumeCells(b.NoRel)...))
	}
	return t
}

// relationName names a file: each namer in turn (the members of an
// names.FirstName, the catalog first) names it, or else the file it
// replaced (and so on); the first name given wins. A catalog naming the
// file a rewrite replaced thus wins over the name the WAL gives the new file.
func relationName(b *stats.Breakdown, cat names.RelNamer, rel decode.RelFileLocator) string {
	namers, ok := cat.(names.FirstName)
	if !ok {
		namers = names.FirstName{cat}
	}
	orig, changed := b.Original(rel)
	for _, n := range namers {
		if n == nil {
			continue
		}
		if s := n.Name(rel); s != "" {
			return s
		}
		if changed {
			if s := n.Name(orig); s != "" {
				return s
			}
		}
	}
	return ""
}

// SegmentTable lists segments in order.
func SegmentTable(b *stats.Breakdown) *Table {
	names := make([]string, 0, len(b.Segments))
	for n := range b.Segments {
		names = append(names, n)
	}
	sort.Strings(names)
	t := &Table{Columns: append([]string{"segment"}, volumeColumns...), Numeric: numeric(1, 5)}
	for _, n := range names {
		t.Rows = append(t.Rows, append([]string{n}, volumeCells(*b.Segments[n])...))
	}
	return t
}

// TimelineTable lists timelines.
func TimelineTable(b *stats.Breakdown) *Table {
	t := &Table{Columns: append([]string{"timeline"}, volumeColumns...), Numeric: numeric(0, 6)}
	var tlis []int
	for tli := range b.Timelines {
		tlis = append(tlis, int(tli))
	}
	sort.Ints(tlis)
	for _, tli := range tlis {
		for k, v := range b.Timelines {
			if int(k) == tli {
				t.Rows = append(t.Rows, append([]string{strconv.Itoa(tli)}, volumeCells(*v)...))
			}
		}
	}
	return t
}

// XidTable lists the transactions that wrote the most WAL.
func XidTable(b *stats.Breakdown, top int) *Table {
	xs := make([]*stats.XidVolume, 0, len(b.Xids))
	for _, x := range b.Xids {
		xs = append(xs, x)
	}
	sort.Slice(xs, func(i, j int) bool {
		if xs[i].RecordBytes != xs[j].RecordBytes {
			return xs[i].RecordBytes > xs[j].RecordBytes
		}
		return xs[i].XID < xs[j].XID
	})
	t := &Table{Columns: append([]string{"xid", "end", "time"}, volumeColumns...), Numeric: numeric(3, 5)}
	t.Numeric[0] = true
	for i, x := range xs {
		if top > 0 && i >= top {
			break
		}
		end, ts := "none seen", ""
		if x.Ended {
			end = "abort"
			if x.Commit {
				end = "commit"
			}
			ts = x.Time.In(time.Local).Format("2006-01-02 15:04:05.000000 MST")
		}
		t.Rows = append(t.Rows, append([]string{strconv.FormatUint(uint64(x.XID), 10), end, ts}, volumeCells(x.Volume)...))
	}
	return t
}

// TimeTable lists time buckets in order.
func TimeTable(b *stats.Breakdown) *Table {
	keys := make([]int64, 0, len(b.Buckets))
	for k := range b.Buckets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	t := &Table{Columns: append([]string{"time", "commits"}, volumeColumns...), Numeric: numeric(1, 6)}
	for _, k := range keys {
		tb := b.Buckets[k]
		label := "(before any timestamp)"
		if !tb.Start.IsZero() {
			label = tb.Start.In(time.Local).Format("2006-01-02 15:04:05 MST")
		}
		t.Rows = append(t.Rows, append([]string{label, strconv.FormatUint(tb.Commits, 10)}, volumeCells(tb.Volume)...))
	}
	return t
}

// CheckpointTable lists checkpoint cycles, with why each checkpoint began
// and the image bytes of each tenth of the cycle (the sawtooth's decay).
func CheckpointTable(b *stats.Breakdown) *Table {
	cols := append([]string{"redo_lsn", "end_lsn", "checkpoint_lsn", "time", "kind", "cause"}, volumeColumns...)
	cols = append(cols, "distinct_blocks_imaged")
	for i := 1; i <= 10; i++ {
		cols = append(cols, fmt.Sprintf("image_bytes_tenth_%d", i))
	}
	t := &Table{Columns: cols, Numeric: numeric(6, 16)}
	for _, c := range b.Cycles {
		kind, ts, ck, cause := "before first redo", "", "", ""
		if c.Checkpoint != 0 {
			kind = "shutdown"
			if c.Online {
				kind = "online"
			}
			ts = c.Time.In(time.Local).Format("2006-01-02 15:04:05 MST")
			ck = c.Checkpoint.String()
			// why it began (time, wal, requested, shutdown, ...: stats.CheckpointCause)
			cause = c.Cause.String()
		}
		row := append([]string{c.Redo.String(), c.End.String(), ck, ts, kind, cause}, volumeCells(c.Volume)...)
		row = append(row, strconv.Itoa(c.DistinctBlocks))
		for _, v := range c.Tenths {
			row = append(row, strconv.FormatUint(v, 10))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
