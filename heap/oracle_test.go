package heap_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// The oracle without a server: real WAL holds, for the same heap block, a
// full-page image, then records, then another image (after the next
// checkpoint, or FPI_FOR_HINT). Each image is the page as the server had it
// right after that record. So: from an image on, every later record touching
// the block is redone with heap.Redo; at the next record carrying an image of
// the block, that record is redone too as if it had no image, and the result
// must equal the image once both are masked with heap.Mask.

// oracleSets is every set of real WAL: fixtures/versions (10 to 18, 4 kB
// and 32 kB pages), the other fixtures and the corpora.
func oracleSets(t *testing.T) []testwal.Set {
	root := testwal.Root(t)
	sets := testwal.Sets(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "fixtures", "versions", "*", "archive.tar.zst"))
	for _, d := range dirs {
		dir := filepath.Dir(d)
		sets = append(sets, testwal.Set{Name: "fixtures/versions/" + filepath.Base(dir), Dir: dir})
	}
	if len(dirs) < 11 {
		t.Fatalf("only %d sets in fixtures/versions", len(dirs))
	}
	// Every heap record checked on its own: wal_consistency_checking's
	// images (testdata/wcc/generate.sh).
	sets = append(sets, testwal.Set{Name: "heap/testdata/wcc", Dir: filepath.Join(root, "heap", "testdata", "wcc")})
	return sets
}

// blockKey names one block of one relation's fork.
type blockKey struct {
	rel  decode.RelFileLocator
	fork decode.ForkNumber
	blk  uint32
}

// tracked is a block whose content is known: from an image, or from a
// record that initialized it.
type tracked struct {
	page    []byte
	redone  int      // records redone since the image or the initialization
	from    xlog.LSN // the image's (or initializing record's) LSN
	history []string // the records redone since, for a report
	types   []string // their record types
}

// oracleStats are one set's counts.
type oracleStats struct {
	compared, identical int
	redone              map[string]int // record type -> blocks redone (Applied)
	verified            map[string]int // record type -> redone blocks an image then confirmed
	outcomes            map[heap.Outcome]int
	errors              int
	omitted             int // images whose record left out the block's data
	vmCompared          int // visibility map pages compared (18)
	vmIdentical         int
}

var blcksz = regexp.MustCompile(`(?m)^blcksz=(\d+)$`)

func TestRedoAgainstImages(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every fixture and corpus")
	}
	t.Cleanup(testwal.Cleanup)
	var summary []string
	for _, set := range oracleSets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := testwal.Extract(t, set)
			size := 8192
			if b, err := os.ReadFile(filepath.Join(set.Dir, "settings.txt")); err == nil {
				if m := blcksz.FindSubmatch(b); m != nil {
					size, _ = strconv.Atoi(string(m[1]))
				}
			}
			st := oracleStats{redone: map[string]int{}, verified: map[string]int{}, outcomes: map[heap.Outcome]int{}}
			for _, tli := range archiveTimelines(t, filepath.Join(dir, "archive")) {
				oracleTimeline(t, dir, tli, size, &st)
			}
			line := fmt.Sprintf("%s: %d blocks compared, %d identical (%d images not comparable: data left out); %d map pages compared, %d identical; outcomes %v;\n  redone: %s;\n  verified by an image: %s",
				set.Name, st.compared, st.identical, st.omitted, st.vmCompared, st.vmIdentical, st.outcomes, counts(st.redone), counts(st.verified))
			t.Log(line)
			summary = append(summary, line)
			if st.compared == 0 && st.outcomes[heap.Restored] > 0 {
				t.Errorf("no block compared")
			}
		})
	}
	if out := os.Getenv("WALSCOPE_HEAP_ORACLE_SUMMARY"); out != "" {
		_ = os.WriteFile(out, []byte(strings.Join(summary, "\n")+"\n"), 0o644)
	}
}

// heapRelations finds the relations whose blocks only Heap, Heap2 and XLOG
// records touch (the others are indexes, sequences and the like).
func heapRelations(t *testing.T, archive string, tli uint32, size int) map[decode.RelFileLocator]bool {
	r := openTimeline(t, archive, tli)
	defer r.Close()
	dec := decode.NewDecoder(size)
	heapRels := map[decode.RelFileLocator]bool{}
	other := map[decode.RelFileLocator]bool{}
	for {
		xr, err := r.Next()
		if err != nil {
			break
		}
		rec, err := dec.Decode(xr)
		if err != nil {
			continue
		}
		for _, b := range rec.Blocks {
			switch rec.Header.Rmid {
			case xlog.RmgrHeap, xlog.RmgrHeap2:
				heapRels[b.Rel] = true
			case xlog.RmgrXLOG:
			default:
				other[b.Rel] = true
			}
		}
	}
	for rel := range other {
		delete(heapRels, rel)
	}
	return heapRels
}

func oracleTimeline(t *testing.T, dir string, tli uint32, size int, st *oracleStats) {
	archive := filepath.Join(dir, "archive")
	heapRels := heapRelations(t, archive, tli, size)
	r := openTimeline(t, archive, tli)
	defer r.Close()
	dec := decode.NewDecoder(size)
	blocks := map[blockKey]*tracked{}
	image := make([]byte, size)
	mismatches := 0
	for {
		xr, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		rec, err := dec.Decode(xr)
		if err != nil {
			t.Fatalf("decoding %s: %v", xr.LSN, err)
		}
		if rel, nblocks, ok := rmgr.SmgrTruncate(rec); ok {
			for k := range blocks {
				if k.rel == rel && k.blk >= nblocks {
					delete(blocks, k)
				}
			}
		}
		if rel, _, ok := rmgr.SmgrCreate(rec); ok {
			for k := range blocks {
				if k.rel == rel {
					delete(blocks, k)
				}
			}
		}
		rm := rec.Header.Rmid
		if rm != xlog.RmgrHeap && rm != xlog.RmgrHeap2 && rm != xlog.RmgrXLOG {
			continue
		}
		typ := rmgr.Name(rm) + "/" + string(rmgr.AppendRecordType(nil, rec.Version, rm, rec.Header.Info))
		for i := range rec.Blocks {
			b := &rec.Blocks[i]
			// The map pages too where every change to them is a block
			// reference of its own: 18.6 registers the map page of a heap
			// record that clears its bits (before, redo cleared them
			// through a page the record does not name).
			vm := b.Fork() == decode.ForkVisibilityMap && rec.Version >= xlog.V18
			if (b.Fork() != decode.ForkMain && !vm) || !heapRels[b.Rel] {
				continue
			}
			key := blockKey{b.Rel, b.Fork(), b.Block}
			tr := blocks[key]
			if tr == nil && b.WillInit() && rm != xlog.RmgrXLOG {
				// The record initializes the page: its redo needs nothing
				// before it.
				tr = &tracked{page: make([]byte, size), from: rec.LSN}
				blocks[key] = tr
			}
			if b.HasImage {
				if tr != nil {
					// Redo the record as if it carried no image, then compare.
					if !vm && dataOmitted(rec, b) {
						// The image replaced the block's data in the record
						// (no REGBUF_KEEP_DATA): nothing to redo it from.
						st.omitted++
						delete(blocks, key)
						goto restore
					}
					if rm != xlog.RmgrXLOG {
						plain := *rec
						plain.Blocks = slices.Clone(rec.Blocks)
						plain.Blocks[i].HasImage = false
						if !oracleRedo(t, st, &plain, b.ID, tr, typ, dec) {
							delete(blocks, key)
							goto restore
						}
					}
					// A map page's XLOG FPI is no oracle of the redo before
					// it: log_newpage carries VACUUM's truncation of the map.
					if tr.redone > 0 && !(vm && rm == xlog.RmgrXLOG) {
						img, err := dec.AppendPage(image[:0], rec, b)
						if err != nil {
							t.Fatalf("%s: image of block %d: %v", rec.LSN, b.ID, err)
						}
						diff := ""
						if vm {
							st.vmCompared++
							diff = compareVM(tr.page, img)
						} else {
							st.compared++
							diff = compareMasked(tr.page, img, b.Block)
						}
						if diff == "" {
							if vm {
								st.vmIdentical++
							} else {
								st.identical++
							}
							for _, typ := range tr.types {
								st.verified[typ]++
							}
							// Verified up to here.
							tr.redone, tr.history, tr.types = 0, tr.history[:0], tr.types[:0]
						} else {
							mismatches++
							if mismatches <= 5 {
								t.Errorf("%s %s block %d/%d/%d blk %d: redo from %s through %d records (%s) differs from the image:\n%s",
									rec.LSN, typ, b.Rel.SpcOID, b.Rel.DBOID, b.Rel.RelNumber, b.Block, tr.from, tr.redone,
									strings.Join(tail(tr.history, 8), "; "), diff)
							}
						}
					}
				}
			restore:
				if !b.Apply {
					// wal_consistency_checking's image: the redo above made
					// the page; an untracked block starts from the image.
					if blocks[key] == nil {
						tr = &tracked{page: make([]byte, size), from: rec.LSN}
						if _, err := dec.AppendPage(tr.page[:0], rec, b); err != nil {
							t.Fatalf("%s: image of block %d: %v", rec.LSN, b.ID, err)
						}
						blocks[key] = tr
					}
					continue
				}
				if vm && b.HasHole {
					// Logged as a standard page, a map page loses its map
					// (it lies between pd_lower and pd_upper, the hole):
					// recovery restores zeros where the primary kept bits
					// (CREATE DATABASE's WAL_LOG copy does this).
					delete(blocks, key)
					continue
				}
				if tr == nil || blocks[key] == nil {
					tr = &tracked{page: make([]byte, size)}
					blocks[key] = tr
				}
				out, err := heap.Redo(rec, b.ID, tr.page, dec)
				if err != nil || out != heap.Restored {
					t.Fatalf("%s: restoring block %d: %v %v", rec.LSN, b.ID, out, err)
				}
				st.outcomes[out]++
				tr.redone, tr.from, tr.history, tr.types = 0, rec.LSN, tr.history[:0], tr.types[:0]
				continue
			}
			if tr == nil {
				if !b.WillInit() {
					continue // content unknown until an image or an initialization
				}
				tr = &tracked{page: make([]byte, size), from: rec.LSN}
				blocks[key] = tr
			}
			if !oracleRedo(t, st, rec, b.ID, tr, typ, dec) {
				delete(blocks, key)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("timeline %d: %d blocks differ from their images", tli, mismatches)
	}
}

// oracleRedo redoes one block; false means the block is no longer known.
func oracleRedo(t *testing.T, st *oracleStats, rec *decode.Record, id uint8, tr *tracked, typ string, dec *decode.Decoder) bool {
	out, err := heap.Redo(rec, id, tr.page, dec)
	if err != nil {
		st.errors++
		if !errors.Is(err, heap.ErrRedo) {
			t.Errorf("error not wrapping ErrRedo: %v", err)
		}
		t.Errorf("%v", err)
		return false
	}
	st.outcomes[out]++
	switch out {
	case heap.Applied:
		st.redone[typ]++
		tr.redone++
		tr.history = append(tr.history, fmt.Sprintf("%s %s", rec.LSN, typ))
		tr.types = append(tr.types, typ)
	case heap.Skipped:
		t.Errorf("%s %s: skipped a page at %X after an image", rec.LSN, typ, tr.from)
	case heap.NotFound:
		return false
	}
	return true
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return append([]string{"..."}, s[len(s)-n:]...)
	}
	return s
}

// compareMasked masks copies of both pages and describes how they differ
// ("" when they do not): the first differing bytes and the line pointers and
// tuple headers of both.
func compareMasked(got, want []byte, blk uint32) string {
	g, w := slices.Clone(got), slices.Clone(want)
	heap.Mask(g, blk)
	heap.Mask(w, blk)
	var diffs []string
	for i := range g {
		if g[i] != w[i] {
			diffs = append(diffs, fmt.Sprintf("@%d got %02x want %02x", i, g[i], w[i]))
			if len(diffs) == 12 {
				break
			}
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	gp, _ := heap.ReadPage(got)
	wp, _ := heap.ReadPage(want)
	return fmt.Sprintf("  bytes: %s\n  got  %s\n  want %s", strings.Join(diffs, ", "), pageSummary(gp), pageSummary(wp))
}

func pageSummary(p heap.Page) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "lower %d upper %d flags %#x items:", p.Header.Lower, p.Header.Upper, p.Header.Flags)
	for _, it := range p.Items {
		fmt.Fprintf(&sb, " %d:%d/%d/%d", it.LP, it.LPFlags, it.LPOff, it.LPLen)
		if it.HasTuple {
			fmt.Fprintf(&sb, "[%d,%d,%#x,%#x,(%d,%d)]", it.Xmin, it.Xmax, it.Infomask, it.Infomask2, it.CtidBlock, it.CtidOffset)
		}
	}
	return sb.String()
}

// dataOmitted tells whether block b of rec has an image and none of the data
// its redo reads: XLogRecordAssemble leaves the data out when it takes an
// image, unless the record asked for REGBUF_KEEP_DATA (logical decoding).
func dataOmitted(rec *decode.Record, b *decode.BlockRef) bool {
	if !b.HasImage || b.DataLen > 0 {
		return false
	}
	op := rec.Header.Info & 0x70
	switch rec.Header.Rmid {
	case xlog.RmgrHeap:
		switch op {
		case 0x00, 0x70: // INSERT, INPLACE
			return true
		case 0x20, 0x40: // UPDATE, HOT_UPDATE: the new tuple's block
			return b.ID == 0
		}
	case xlog.RmgrHeap2:
		switch op {
		case 0x10, 0x20, 0x30, 0x50: // prune, vacuum, freeze; MULTI_INSERT
			return true
		}
	}
	return false
}

// archiveTimelines lists the timelines of the segments in archive, in order.
func archiveTimelines(t *testing.T, archive string) []uint32 {
	ents, err := os.ReadDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	var out []uint32
	for _, e := range ents {
		n := e.Name()
		if len(n) != 24 || strings.Contains(n, ".") {
			continue
		}
		tli, err := strconv.ParseUint(n[:8], 16, 32)
		if err != nil || seen[uint32(tli)] {
			continue
		}
		seen[uint32(tli)] = true
		out = append(out, uint32(tli))
	}
	slices.Sort(out)
	return out
}

func counts(m map[string]int) string {
	var s []string
	for k, n := range m {
		s = append(s, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// openTimeline opens a reader of one timeline of the segments in archive.
func openTimeline(t *testing.T, archive string, tli uint32) *xlog.Reader {
	src, err := xlog.OpenDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	r, err := xlog.NewReader(src, xlog.Options{Timeline: xlog.TimeLineID(tli)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// compareVM compares two visibility map pages after masking only their LSN
// and checksum (heap_mask would blank the whole map: it lies between
// pd_lower and pd_upper).
func compareVM(got, want []byte) string {
	g, w := slices.Clone(got), slices.Clone(want)
	for _, p := range [][]byte{g, w} {
		clear(p[0:10]) // pd_lsn, pd_checksum
	}
	for i := range g {
		if g[i] != w[i] {
			return fmt.Sprintf("  map page differs first at byte %d: got %02x want %02x", i, g[i], w[i])
		}
	}
	return ""
}
