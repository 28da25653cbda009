//go:build linux

package archive_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

// TestNoDescriptorLeft: plain segments on disk are read through bare
// descriptors (segmentFile), which no finalizer closes; every reading, on 1
// to 3 workers, ending cleanly, at damage (every corruption case), or
// stopped by its Job with ErrStop or another error, closes all it opened.
func TestNoDescriptorLeft(t *testing.T) {
	root := testwal.Root(t)
	dirs := []string{filepath.Join(root, "fixtures", "sample")}
	for _, c := range testwal.CorruptCases(t, 10) {
		dirs = append(dirs, testwal.ExtractCase(t, c))
	}
	open := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	before := open()
	for _, dir := range dirs {
		for _, workers := range []int{1, 2, 3} {
			for _, stopAfter := range []int{0, 1000, 5000} {
				for _, stopErr := range []error{stream.ErrStop, errors.New("enough")} {
					src, err := archive.Open(dir)
					if err != nil {
						t.Fatal(err)
					}
					s, err := stream.Open(src, stream.Config{Reader: xlog.Options{FollowHistory: true}, Workers: workers, SpanBytes: 1 << 20})
					if err != nil {
						src.Close()
						continue // a case whose first segment is unusable
					}
					stream.Run(s, stream.Job[*int]{
						NewPart: func(stream.SpanInfo) *int { return new(int) },
						Record: func(n *int, _ *xlog.Record) error {
							if *n++; stopAfter > 0 && *n >= stopAfter {
								return stopErr
							}
							return nil
						},
						Merge: func(*int) error { return nil },
					})
					src.Close()
				}
			}
		}
	}
	if after := open(); after != before {
		t.Errorf("%d descriptors open before the readings, %d after", before, after)
	}
}
