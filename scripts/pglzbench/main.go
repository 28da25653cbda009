// Command pglzbench is the Go half of scripts/bench-pglz.sh, which measures
// walscope's pglz compressor against PostgreSQL's own pglz_compress (built
// by the script from PostgreSQL's src/common/pg_lzcompress.c) on the same
// pages, and checks that both give the same bytes.
//
//	pglzbench pages [-max-mb N] [-every K] -o PAGES WALDIR
//	pglzbench compress [-runs R] -o OUT PAGES
//	pglzbench check PAGES WANT GOT
//
// pages writes the full-page images of the WAL in WALDIR (plain segment
// files) as PostgreSQL compresses them, each rebuilt and without its hole,
// as a little-endian uint32 length followed by the bytes; -every K keeps
// every K-th image, -max-mb stops at N MB of pages.
//
// compress compresses every page of PAGES R times with
// decode.PGLZCompressor, as the C harness does with pglz_compress and
// PGLZ_strategy_default, and prints the best run's CPU time (of the one
// thread compressing), MB/s of input and the heap allocations per page.
// OUT gets each page's result as the harness writes it: a little-endian
// int32, pglz_compress's return value (-1 when PostgreSQL would store the
// page uncompressed), then that many compressed bytes.
//
// check compares two such results of PAGES page by page (WANT is the C
// harness's) and fails unless every page has the same result: the same
// size, or -1 in both, and the same bytes. It prints how many pages were
// compressed and how many differ.
package main

import (
	"bufio"
	"bytes"
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
	case "check":
		err = checkCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pglzbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pglzbench pages [-max-mb N] [-every K] -o PAGES WALDIR\n       pglzbench compress [-runs R] -o OUT PAGES\n       pglzbench check PAGES WANT GOT")
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
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range *runs {
		t0 := threadCPU()
		for _, p := range pages {
			dst, _ = c.Compress(dst[:0], p)
		}
		best = min(best, threadCPU()-t0)
	}
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / float64(*runs*len(pages))
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
	fmt.Printf("go pglz: %d pages, %.1f MB, best of %d runs %.3f s CPU, %.1f MB/s, %.4f allocations per page\n",
		len(pages), float64(total)/(1<<20), *runs, best.Seconds(), float64(total)/(1<<20)/best.Seconds(), allocs)
	return nil
}

func checkCmd(args []string) error {
	if len(args) != 3 {
		usage()
	}
	pages, _, err := readPages(args[0])
	if err != nil {
		return err
	}
	want, err := readResults(args[1], len(pages))
	if err != nil {
		return err
	}
	got, err := readResults(args[2], len(pages))
	if err != nil {
		return err
	}
	compressed, sizes, contents := 0, 0, 0
	first := -1
	for i := range pages {
		w, g := want[i], got[i]
		if w != nil {
			compressed++
		}
		switch {
		case (w == nil) != (g == nil) || len(w) != len(g):
			sizes++
		case !bytes.Equal(w, g):
			contents++
		default:
			continue
		}
		if first < 0 {
			first = i
		}
	}
	fmt.Printf("%d pages, %d compressed, %d left uncompressed; differing: %d in size or in whether compressed, %d in content only\n",
		len(pages), compressed, len(pages)-compressed, sizes, contents)
	if first >= 0 {
		return fmt.Errorf("%s and %s differ, first at page %d (%d bytes): %s, %s", args[1], args[2], first, len(pages[first]),
			describe(want[first]), describe(got[first]))
	}
	return nil
}

// describe names one page's result.
func describe(r []byte) string {
	if r == nil {
		return "not compressed (-1)"
	}
	return fmt.Sprintf("%d bytes", len(r))
}

// readResults reads the per-page results written by compress or the C
// harness, nil for a page left uncompressed, and requires one per page.
func readResults(path string, pages int) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errors.New(path + ": truncated")
		}
		n := int32(binary.LittleEndian.Uint32(b))
		b = b[4:]
		switch {
		case n == -1:
			out = append(out, nil)
		case n < 0 || int(n) > len(b):
			return nil, fmt.Errorf("%s: result %d: bad length %d", path, len(out), n)
		default:
			out = append(out, b[:n])
			b = b[n:]
		}
	}
	if len(out) != pages {
		return nil, fmt.Errorf("%s: %d results for %d pages", path, len(out), pages)
	}
	return out, nil
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
