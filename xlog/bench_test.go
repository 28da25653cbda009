package xlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// loadCorpus reads a corpus's archive into memory, so the benchmark measures
// reading, CRC and decoding, not the disk.
func loadCorpus(b *testing.B, name string) (*xlog.MemSource, int64) {
	b.Helper()
	for _, s := range testwal.Sets(b) {
		if s.Name != name {
			continue
		}
		dir := filepath.Join(testwal.Extract(b, s), "archive")
		ents, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		files := map[string][]byte{}
		var total int64
		for _, e := range ents {
			if strings.Contains(e.Name(), ".") {
				continue // single timeline: skip .partial and .history
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			files[e.Name()] = data
			total += int64(len(data))
		}
		return xlog.NewMemSource(files), total
	}
	b.Fatalf("corpus %s not found", name)
	return nil, 0
}

// BenchmarkReadDecode measures one core reading, validating (page headers,
// CRC-32C, prev links) and decoding (block references, main data) every
// record of a 64 MiB pgbench archive. Bytes are WAL bytes.
func BenchmarkReadDecode(b *testing.B) {
	for _, corpus := range []string{"corpora/pg18-8k-pgbench-replica", "corpora/pg18-8k-mixed"} {
		b.Run(strings.TrimPrefix(corpus, "corpora/"), func(b *testing.B) {
			src, total := loadCorpus(b, corpus)
			b.SetBytes(total)
			b.ReportAllocs()
			records := 0
			for b.Loop() {
				r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true, Timeline: 1})
				if err != nil {
					b.Fatal(err)
				}
				dec := decode.NewDecoder(8192)
				n := 0
				for {
					rec, err := r.Next()
					if err != nil {
						break
					}
					if _, err := dec.Decode(rec); err != nil {
						b.Fatal(err)
					}
					n++
				}
				r.Close()
				records = n
			}
			b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
