package decode_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Decode records into their block references and restore the full-page
// images they carry, decompressed (this WAL was written with
// wal_compression = lz4) and with their hole filled: the pages as redo
// would write them.
func ExampleDecoder_AppendPage() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	var page []byte
	images := map[decode.Compression]int{}
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		d, err := dec.Decode(rec)
		if err != nil {
			fmt.Println(err) // a *decode.Error, xlogreader's message
			return
		}
		for i := range d.Blocks {
			b := &d.Blocks[i]
			if !b.HasImage {
				continue
			}
			images[b.Compression]++
			first := images[b.Compression] == 1
			page, err = dec.AppendPage(page[:0], d, b)
			if err != nil {
				fmt.Println(err) // a *decode.ImageError, wrapping the decompressor's error
				return
			}
			if first { // the first image of each compression method
				// pd_lsn, the first 8 bytes of the page header, as {xlogid, xrecoff}
				pdLSN := xlog.LSN(uint64(binary.LittleEndian.Uint32(page))<<32 | uint64(binary.LittleEndian.Uint32(page[4:])))
				fmt.Printf("%s: rel %d/%d/%d %s block %d, %d bytes stored (%s, hole %d), page of %d bytes with pd_lsn %s\n",
					d.LSN, b.Rel.SpcOID, b.Rel.DBOID, b.Rel.RelNumber, b.Fork(), b.Block, b.ImageLen, b.Compression, b.HoleLength, len(page), pdLSN)
			}
		}
	}
	fmt.Println("images:", images)
	// Output:
	// 0/600208: rel 1664/0/2671 main block 1, 124 bytes stored (none, hole 8068), page of 8192 bytes with pd_lsn 0/5F9890
	// 0/600828: rel 1664/0/1262 main block 0, 272 bytes stored (lz4, hole 7504), page of 8192 bytes with pd_lsn 0/600208
	// images: map[none:4 lz4:97]
}
