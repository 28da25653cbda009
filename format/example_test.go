package format_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

// pg_waldump's --stats, computed on every core: each span of the stream
// counts into its own stats.Stats, merged in WAL order, and the table is
// the one pg_waldump --stats prints for the same files, byte for byte.
func ExampleAppendStatsTable() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	s, err := stream.Open(src, stream.Config{Reader: xlog.Options{HeadersOnly: true}, SpanBytes: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	type part struct {
		dec   *decode.Decoder
		stats stats.Stats
	}
	var total stats.Stats
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(stream.SpanInfo) *part { return &part{dec: decode.NewDecoder(8192)} },
		Record: func(p *part, rec *xlog.Record) error {
			d, err := p.dec.Decode(rec)
			if err != nil {
				return err // the reading ends here, as pg_waldump's would
			}
			p.stats.Add(d)
			return nil
		},
		Merge: func(p *part) error {
			total.Merge(&p.stats)
			return nil
		},
	})
	if err != nil || res.Err != nil && !xlog.IsEndOfWAL(res.Err) {
		fmt.Println(err, res.Err)
		return
	}
	os.Stdout.Write(format.AppendStatsTable(nil, &total, false))
	// Output:
	// WAL statistics between 0/600100 and 0/7FFFF0:
	// Type                                           N      (%)          Record size      (%)             FPI size      (%)        Combined size      (%)
	// ----                                           -      ---          -----------      ---             --------      ---        -------------      ---
	// XLOG                                          22 (  0.10)                 1482 (  0.08)                  498 (  0.21)                 1980 (  0.10)
	// Transaction                                   36 (  0.16)                 6762 (  0.37)                    0 (  0.00)                 6762 (  0.33)
	// Storage                                       16 (  0.07)                  672 (  0.04)                    0 (  0.00)                  672 (  0.03)
	// CLOG                                           0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// Database                                       2 (  0.01)                   84 (  0.00)                    0 (  0.00)                   84 (  0.00)
	// Tablespace                                     0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// MultiXact                                      0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// RelMap                                         0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// Standby                                       25 (  0.11)                 1346 (  0.07)                    0 (  0.00)                 1346 (  0.07)
	// Heap2                                        178 (  0.80)                85752 (  4.74)                10851 (  4.54)                96603 (  4.72)
	// Heap                                       12355 ( 55.25)              1058162 ( 58.55)               130284 ( 54.56)              1188446 ( 58.08)
	// Btree                                       8876 ( 39.70)               591866 ( 32.75)                97152 ( 40.69)               689018 ( 33.67)
	// Hash                                         850 (  3.80)                61172 (  3.38)                    0 (  0.00)                61172 (  2.99)
	// Gin                                            0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// Gist                                           0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// Sequence                                       0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// SPGist                                         0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// BRIN                                           0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// CommitTs                                       0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// ReplicationOrigin                              0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// Generic                                        0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	// LogicalMessage                                 0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
	//                                         --------                      --------                      --------                      --------
	// Total                                      22360                       1807298 [88.33%]               238785 [11.67%]              2046083 [100%]
}
