package archive_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// FuzzArchiveFile stores arbitrary bytes as a segment file and opens it as
// every command does: facts, the head the reader's geometry comes from, the
// whole content, and the reader over it. Whatever the bytes, nothing panics,
// every failure is an *archive.Error or a positioned *xlog.Error, and no
// content is larger than the segment size its own long header gives. The
// file is held in a memTree: a temporary directory per input cost a third
// of each execution's CPU time, and more waiting on the disk.
func FuzzArchiveFile(f *testing.F) {
	seg, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sample", "000000010000000000000006"))
	if err != nil {
		f.Fatal(err)
	}
	head := seg[:64<<10]
	f.Add(head, "")
	enc, _ := zstd.NewWriter(nil)
	f.Add(enc.EncodeAll(head, nil), ".zst")
	f.Add(enc.EncodeAll(seg, nil)[:5000], ".zst")
	for _, m := range []string{"gzip", "lz4", "bzip2", "xz"} {
		if archivetest.HaveTool(m) {
			c := archivetest.Compress(f, m, head)
			f.Add(c, "")
			f.Add(c[:len(c)/2], ".partial")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, suffix string) {
		switch suffix {
		case "", ".zst", ".gz", ".lz4", ".partial", ".br", ".xz":
		default:
			return
		}
		tree := memTree{}
		tree.add("/w/000000010000000000000006"+suffix, data)
		src, err := archive.OpenTree(tree, "/w")
		if err != nil {
			return
		}
		defer src.Close()
		src.FactsWith(archive.FactsOptions{Quick: true})
		src.Facts()
		for _, sf := range src.Segments() {
			hb := make([]byte, xlog.LongPageHeaderSize)
			if _, err := src.ReadHead(sf, hb); err != nil {
				checkArchiveErr(t, err)
			}
			fh, err := src.Open(sf)
			if err != nil {
				checkArchiveErr(t, err)
				continue
			}
			var content bytes.Buffer
			buf := make([]byte, 1<<16)
			for off := int64(0); ; {
				n, err := fh.ReadAt(buf, off)
				content.Write(buf[:n])
				off += int64(n)
				if err != nil || n == 0 {
					break
				}
			}
			fh.Close()
			limit := xlog.MinSegmentSize
			if h, ok := xlog.ParsePageHeader(content.Bytes()); ok && h.Long() && xlog.ValidSegmentSize(h.SegmentSize) {
				limit = int(h.SegmentSize)
			}
			if content.Len() > limit {
				t.Fatalf("%d bytes of content, more than the segment size %d", content.Len(), limit)
			}
		}
		r, err := xlog.NewReader(src, xlog.Options{})
		if err != nil {
			return
		}
		defer r.Close()
		for i := 0; i < 200; i++ {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					if _, ok := errors.AsType[*xlog.Error](err); !ok {
						checkArchiveErr(t, err)
					}
				}
				return
			}
		}
	})
}

func checkArchiveErr(t testing.TB, err error) {
	t.Helper()
	if _, ok := errors.AsType[*archive.Error](err); !ok && !errors.Is(err, os.ErrNotExist) {
		if _, ok := errors.AsType[*xlog.Error](err); !ok {
			t.Fatalf("error %T %v is neither an archive nor a WAL error", err, err)
		}
	}
}
