package verify

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
	"github.com/walscope/walscope/xlog/xlogtest"
)

// writeArchive writes n segments of 1 MiB into a directory of b's: with
// switched, each holds ten small records and an XLOG SWITCH, then zeroes
// (what pg_switch_wal or archive_timeout leaves on an idle server); else
// records of about 200 bytes fill every one.
func writeArchive(b *testing.B, n int, switched bool) string {
	b.Helper()
	const segSize = 1 << 20
	w := xlogtest.NewWriter(xlog.V15, 8192, segSize, 1)
	end := xlog.LSN((1 + uint64(n)) * segSize)
	for i := 0; w.Pos() < end-segSize/2; i++ {
		w.Record(xlog.RmgrXLOG, 0x20, 0, xlogtest.MainData(64+i%256)) // XLOG_NOOP
		if switched && i%10 == 9 {
			w.Switch()
		}
	}
	dir := b.TempDir()
	for name, data := range w.Finish() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkSwitchedSegments measures what a switched, nearly empty segment
// costs stats and verify, listing and opening included (issue 16:
// pg_waldump reads one page of each and moves on), with one reader (-j1)
// and with two: on 200 synthetic 1 MiB segments, and on
// scripts/bench-short.sh's archive of 201 16 MiB segments when it is there
// (WALSCOPE_BENCH_SHORT names another). dense, 32 full 1 MiB segments, is
// the control: what makes switched segments cheap must not cost it.
func BenchmarkSwitchedSegments(b *testing.B) {
	type set struct {
		name string
		dir  func() string
	}
	var switched, dense string
	sets := []set{
		{"synthetic", func() string {
			if switched == "" {
				switched = writeArchive(b, 200, true)
			}
			return switched
		}},
		{"dense", func() string {
			if dense == "" {
				dense = writeArchive(b, 32, false)
			}
			return dense
		}},
	}
	short := os.Getenv("WALSCOPE_BENCH_SHORT")
	if short == "" {
		short = "/tmp/walscope-bench-short/archive"
	}
	if _, err := os.Stat(short); err == nil {
		sets = append(sets, set{"bench-short", func() string { return short }})
	}
	for _, s := range sets {
		for _, job := range []struct {
			name    string
			verify  bool
			workers int
		}{{"stats", false, 1}, {"verify", true, 1}, {"stats-j2", false, 2}, {"verify-j2", true, 2}} {
			b.Run(s.name+"/"+job.name, func(b *testing.B) {
				dir := s.dir()
				segments := 0
				b.ReportAllocs()
				for b.Loop() {
					src, err := archive.Open(dir)
					if err != nil {
						b.Fatal(err)
					}
					segments = len(src.Segments())
					opts := xlog.Options{Timeline: 1}
					if job.verify {
						var rep *VerifyReport
						if rep, err = Verify(src, opts, 8192, job.workers); err == nil && !rep.OK() {
							b.Fatalf("verify found problems: %+v", rep.Problems)
						}
					} else {
						err = statsLikeCommand(src, opts, job.workers)
					}
					if err != nil {
						b.Fatal(err)
					}
					src.Close()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(segments), "ns/segment")
			})
		}
	}
}

// statsLikeCommand counts the records as walscope stats does: a Stats and
// a decoder per span of 32 MiB, merged in WAL order.
func statsLikeCommand(src xlog.Source, opts xlog.Options, workers int) error {
	opts.HeadersOnly = true
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: workers, SpanBytes: 32 << 20})
	if err != nil {
		return err
	}
	type part struct {
		st  stats.Stats
		dec *decode.Decoder
	}
	var total stats.Stats
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(stream.SpanInfo) *part { return &part{dec: decode.NewDecoder(8192)} },
		Record: func(p *part, rec *xlog.Record) error {
			d, err := p.dec.Decode(rec)
			if err != nil {
				return err
			}
			p.st.Add(d)
			return nil
		},
		Merge: func(p *part) error {
			total.Merge(&p.st)
			return nil
		},
	})
	if err == nil && !xlog.IsEndOfWAL(res.Err) {
		err = res.Err // (zeroes after the last record are the end of the WAL)
	}
	return err
}
