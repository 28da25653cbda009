package archive_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// One call opens WAL wherever it is kept: here a zstd-compressed tar file,
// a plain directory, and a wal-g storage holding zstd-compressed segments
// (made from the plain ones first). The source reads alike whatever the
// layout and compression.
func ExampleOpen() {
	sample := filepath.Join("..", "..", "fixtures", "sample")
	storage, err := os.MkdirTemp("", "walg-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(storage)
	if err := walgPush(sample, filepath.Join(storage, "wal_005")); err != nil {
		fmt.Println(err)
		return
	}
	for _, path := range []string{
		filepath.Join("..", "..", "fixtures", "pg15-replica-lz4", "archive.tar.zst"),
		sample,
		storage,
	} {
		src, err := archive.Open(path)
		if err != nil {
			fmt.Println(err)
			return
		}
		records, err := count(src)
		src.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-9s %2d segments, %6d records\n", src.Layout(), len(src.Segments()), records)
	}
	// Output:
	// tar       13 segments,  84546 records
	// directory  2 segments,  22360 records
	// wal-g      2 segments,  22360 records
}

// walgPush writes the segments of dir into walDir as wal-g's wal-push does
// with zstd compression.
func walgPush(dir, walDir string) error {
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return err
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		return err
	}
	defer enc.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "0000000*"))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(walDir, filepath.Base(name)+".zst"), enc.EncodeAll(b, nil), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// count reads every record of src.
func count(src xlog.Source) (int, error) {
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for _, err := range r.Records() {
		if err != nil {
			if xlog.IsEndOfWAL(err) {
				break // zeroed or recycled space: the end of written WAL
			}
			return n, err
		}
		n++
	}
	return n, nil
}
