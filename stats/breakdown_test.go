package stats

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestBreakdownSums: on every fixture and corpus, the relation table's totals
// equal the per-rmgr statistics' totals, and the checkpoint, time, segment,
// timeline and transaction tables each add up to the stream's totals.
func TestBreakdownSums(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		src, err := xlog.OpenDir(filepath.Join(testwal.Extract(t, set), "archive"))
		if err != nil {
			t.Fatal(err)
		}
		read := func(each func(*decode.Record)) (xlog.LSN, xlog.LSN) {
			r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dec := decode.NewDecoder(8192)
			var start xlog.LSN
			for {
				rec, err := r.Next()
				if err != nil {
					if err != io.EOF && !xlog.IsEndOfWAL(err) {
						t.Fatalf("%s: %v", set.Name, err)
					}
					return start, r.EndLSN()
				}
				if start == 0 {
					start = rec.LSN
				}
				d, err := dec.Decode(rec)
				if err != nil {
					t.Fatal(err)
				}
				each(d)
			}
		}
		var finder RedoFinder
		start, end := read(func(d *decode.Record) { finder.Add(d) })
		b := NewBreakdown(time.Minute, finder.Sorted(), start, end)
		var st Stats
		read(func(d *decode.Record) { b.Add(d); st.Add(d) })
		b.Finish()
		tot := st.Totals()
		if b.Total.Records != tot.Count || b.Total.RecordBytes != tot.RecLen+tot.FPILen || b.Total.ImageBytes != tot.FPILen {
			t.Fatalf("%s: breakdown total %+v, stats %+v", set.Name, b.Total, tot)
		}
		sum := func(name string, vs []Volume) {
			var s Volume
			for _, v := range vs {
				s.Records += v.Records
				s.RecordBytes += v.RecordBytes
				s.WALBytes += v.WALBytes
				s.Images += v.Images
				s.ImageBytes += v.ImageBytes
			}
			if s != b.Total {
				t.Errorf("%s: %s rows add up to %+v, stream total %+v", set.Name, name, s, b.Total)
			}
		}
		var rels, cycles, buckets, segs, tls []Volume
		for _, r := range b.Relations {
			rels = append(rels, r.Volume)
		}
		rels = append(rels, b.NoRel)
		// Relation rows count record and image bytes; their WAL bytes are
		// record-attributed and not compared.
		var rs Volume
		for _, r := range rels {
			rs.Records += r.Records
			rs.RecordBytes += r.RecordBytes
			rs.Images += r.Images
			rs.ImageBytes += r.ImageBytes
		}
		if rs.Records != tot.Count || rs.RecordBytes != tot.RecLen+tot.FPILen || rs.ImageBytes != tot.FPILen {
			t.Errorf("%s: relation rows add up to %+v; per-rmgr totals %+v", set.Name, rs, tot)
		}
		for _, c := range b.Cycles {
			cycles = append(cycles, c.Volume)
			var tenths uint64
			for _, x := range c.Tenths {
				tenths += x
			}
			if tenths != c.ImageBytes {
				t.Errorf("%s: cycle at %s: tenths add up to %d, image bytes %d", set.Name, c.Redo, tenths, c.ImageBytes)
			}
		}
		for _, v := range b.Buckets {
			buckets = append(buckets, v.Volume)
		}
		for _, v := range b.Segments {
			segs = append(segs, *v)
		}
		for _, v := range b.Timelines {
			tls = append(tls, *v)
		}
		sum("checkpoint", cycles)
		sum("time", buckets)
		sum("segment", segs)
		sum("timeline", tls)
		if strings.Contains(set.Name, "mixed") && len(b.Renamed) == 0 {
			t.Errorf("%s: the workload truncates and clusters, yet no relation file replaced another", set.Name)
		}
		if len(b.Cycles) < 2 {
			t.Errorf("%s: %d checkpoint cycles", set.Name, len(b.Cycles))
		}
	}
}
