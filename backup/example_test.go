package backup_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
)

// Open a pg_basebackup -Ft backup compressed with zstd (made by
// fixtures/backup-pg15/generate.sh) and read a table's pages and the files
// recovery needs, without extracting it.
func Example() {
	b, err := backup.Open("../fixtures/backup-pg15")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	c, _ := b.Control()
	fmt.Println("layout:", b.Layout(), "PostgreSQL", b.MajorVersion())
	fmt.Println("block size:", c.BlockSize, "blocks per segment:", c.RelSegSize, "checksums:", c.DataChecksumVersion)
	fmt.Println("starts on timeline", b.Label().StartTLI, "at its checkpoint's redo:", b.Label().StartLSN == c.CheckPointCopy.Redo)
	fmt.Println("consistent after the start:", b.ConsistentLSN() > b.Label().StartLSN)

	// public.example: database postgres (OID 5), relfilenode 16384
	// (fixtures/backup-pg15/example.env)
	example := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16384}
	fmt.Println("file:", b.RelPath(example, decode.ForkMain))
	n, err := b.NBlocks(example, decode.ForkMain)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("blocks:", n)
	page := make([]byte, b.BlockSize())
	if err := b.ReadBlock(example, decode.ForkMain, 0, page); err != nil {
		log.Fatal(err)
	}
	fmt.Println("pd_lower of block 0 > 24:", int(page[12])|int(page[13])<<8 > 24)
	err = b.ReadBlock(example, decode.ForkMain, n, page)
	fmt.Println("block", n, "is beyond the end:", errors.Is(err, backup.ErrNoBlock))

	xact, _ := b.ReadFile("pg_xact/0000")
	fmt.Println("pg_xact/0000:", len(xact), "bytes")
	_, err = b.ReadFile("base/5/999999")
	fmt.Println("an absent file:", errors.Is(err, fs.ErrNotExist))
	// Output:
	// layout: tar PostgreSQL 15
	// block size: 8192 blocks per segment: 131072 checksums: 1
	// starts on timeline 1 at its checkpoint's redo: true
	// consistent after the start: true
	// file: base/5/16384
	// blocks: 6
	// pd_lower of block 0 > 24: true
	// block 6 is beyond the end: true
	// pg_xact/0000: 8192 bytes
	// an absent file: true
}

// A gzip'd tar is inflated whole once to find its members (pg_control is
// the last); with an IndexDir, what that pass learnt is kept there, and the
// next Open of the same file reads it instead, then inflates only the
// members asked for, from the resume point before each.
func ExampleOpenOptions_indexDir() {
	dir, err := os.MkdirTemp("", "walscope-index-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	opt := backup.Options{IndexDir: dir}
	for run := 1; run <= 2; run++ {
		b, err := backup.OpenOptions(opt, "../fixtures/rows/base.tar.gz")
		if err != nil {
			log.Fatal(err)
		}
		c, _ := b.Control()
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		fmt.Println("run", run, "block size:", c.BlockSize, "index files:", len(files))
		b.Close()
	}
	// Output:
	// run 1 block size: 8192 index files: 1
	// run 2 block size: 8192 index files: 1
}
