// Command pglzbench is the Go half of scripts/bench-pglz.sh, which measures
// walscope's pglz compressor against PostgreSQL's own pglz_compress (built
// by the script from PostgreSQL's src/common/pg_lzcompress.c) on the same
// pages, and checks that both give the same bytes.
//
//	pglzbench pages [-max-mb N] [-every K] -o PAGES WALDIR
//	pglzbench compress [-runs R] -o OUT PAGES
//
// pages writes the full-page images of the WAL in WALDIR (plain segment
// files) as PostgreSQL compresses them, each rebuilt and without its hole,
// as a little-endian uint32 length followed by the bytes; -every K keeps
// every K-th image, -max-mb stops at N MB of pages.
//
// compress compresses every page of PAGES R times with
// decode.PGLZCompressor, as the C harness does with pglz_compress and
// PGLZ_strategy_default, and prints the best run's CPU time (of the one
// thread compressing) and MB/s of input. OUT gets each page's result as
// the harness writes it: a little-endian int32, pglz_compress's return
// value (-1 when PostgreSQL would store the page uncompressed), then that
// many compressed bytes.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "pages":
		err = pagesCmd(os.Args[2:])
	case "compress":
		err = compressCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pglzbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pglzbench pages [-max-mb N] [-every K] -o PAGES WALDIR\n       pglzbench compress [-runs R] -o OUT PAGES")
	os.Exit(2)
}

func pagesCmd(args []string) error {
	fs := flag.NewFlagSet("pages", flag.ExitOnError)
	out := fs.String("o", "", "output `FILE`")
	maxMB := fs.Int("max-mb", 64, "stop after `N` MB of pages")
	every := fs.Int("every", 1, "keep every `K`-th image")
	blcksz := fs.Int("blcksz", 8192, "the data page size")
	fs.Parse(args)
	if *out == "" || fs.NArg() != 1 || *every < 1 {
		usage()
	}
	src, err := xlog.OpenDir(fs.Arg(0))
	if err != nil {
		return err
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	dec := decode.NewDecoder(*blcksz)
	var page []byte
	seen, kept, total := 0, 0, 0
	for total < *maxMB<<20 {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF || xlog.IsEndOfWAL(err) {
				break
			}
			f.Close()
			return err
		}
		d, err := dec.Decode(rec)
		if err != nil {
			f.Close()
			return err
		}
		for i := range d.Blocks {
			b := &d.Blocks[i]
			if !b.HasImage {
				continue
			}
			seen++
			if (seen-1)%*every != 0 {
				continue
			}
			if page, err = dec.AppendPage(page[:0], d, b); err != nil {
				f.Close()
				return err
			}
			// The hole out, as XLogCompressBackupBlock does before compressing.
			ho, hl := int(b.HoleOffset), int(b.HoleLength)
			if hl == 0 {
				ho = 0
			}
			w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(page)-hl)))
			w.Write(page[:ho])
			w.Write(page[ho+hl:])
			kept++
			total += len(page) - hl
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%d pages (%d of the images read), %.1f MB\n", kept, seen, float64(total)/(1<<20))
	return nil
}

func compressCmd(args []string) error {
	fs := flag.NewFlagSet("compress", flag.ExitOnError)
	out := fs.String("o", "", "output `FILE`")
	runs := fs.Int("runs", 5, "compress every page `R` times")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `FILE`")
	fs.Parse(args)
	if *out == "" || fs.NArg() != 1 || *runs < 1 {
		usage()
	}
	pages, total, err := readPages(fs.Arg(0))
	if err != nil {
		return err
	}
	// One thread, as the C harness: its CPU time is what the run cost,
	// whatever else the machine is doing.
	runtime.LockOSThread()
	var c decode.PGLZCompressor
	dst := make([]byte, 0, 1<<16)
	best := time.Duration(1<<63 - 1)
	if *profile != "" {
		pf, err := os.Create(*profile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(pf)
		defer pf.Close()
		defer pprof.StopCPUProfile()
	}
	for range *runs {
		t0 := threadCPU()
		for _, p := range pages {
			dst, _ = c.Compress(dst[:0], p)
		}
		best = min(best, threadCPU()-t0)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, p := range pages {
		var ok bool
		dst, ok = c.Compress(dst[:0], p)
		n := int32(len(dst))
		if !ok {
			n = -1
		}
		w.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
		if ok {
			w.Write(dst)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("go pglz: %d pages, %.1f MB, best of %d runs %.3f s CPU, %.1f MB/s\n",
		len(pages), float64(total)/(1<<20), *runs, best.Seconds(), float64(total)/(1<<20)/best.Seconds())
	return nil
}

// readPages reads a pages file.
func readPages(path string) ([][]byte, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var pages [][]byte
	total := 0
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, 0, errors.New(path + ": truncated")
		}
		n := int(binary.LittleEndian.Uint32(b))
		if len(b)-4 < n {
			return nil, 0, errors.New(path + ": truncated")
		}
		pages = append(pages, b[4:4+n])
		total += n
		b = b[4+n:]
	}
	return pages, total, nil
}

// threadCPU is the CPU time of the calling thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
