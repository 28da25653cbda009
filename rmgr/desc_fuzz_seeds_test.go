package rmgr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// descSeedDir is FuzzDesc's committed seed corpus.
const descSeedDir = "testdata/fuzz/FuzzDesc"

// descSeedEnv, set to 1, makes TestDescRealWAL rewrite the generated seeds
// of FuzzDesc (the files named real-* and malformed-*; inputs the fuzzer
// found are kept):
//
//	WALSCOPE_FUZZ_SEEDS=1 go test -run '^TestDescRealWAL$' ./rmgr
const descSeedEnv = "WALSCOPE_FUZZ_SEEDS"

// descSeedMaxData caps the data of a real record taken as a seed, to keep
// the corpus small.
const descSeedMaxData = 1024

// TestDescRealWAL runs FuzzDesc's checks over every record of the real WAL
// (fixtures/ and ../shared/corpora: PostgreSQL 13, 15 and 18), as written
// and relabelled as every other version, so the bounds hold on real WAL; and
// it checks that the record FuzzDesc builds from a real record's fields is
// described exactly as the real record is, so FuzzDesc's input leaves out
// nothing a description reads. With WALSCOPE_FUZZ_SEEDS=1 it rewrites the
// generated seeds (descWriteSeeds).
func TestDescRealWAL(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every corpus")
	}
	t.Cleanup(testwal.Cleanup)
	type pick struct {
		in      descInput
		descLen int
		from    string
	}
	picks := map[[3]uint8]pick{}
	checked := map[[4]uint8]int{}
	var records, ratioRec int
	var maxRatio float64
	var maxShort int
	dec := decode.NewDecoder(descFzBlcksz)
	var wantDesc, gotDesc []byte
	for _, set := range testwal.Sets(t) {
		dir := testwal.Extract(t, set)
		for _, tl := range testwal.Timelines(t, dir) {
			descEachRecord(t, dir, tl, func(rec *decode.Record) {
				in, ok := descInputOf(rec)
				if !ok {
					return
				}
				records++
				// The rebuilt record describes as the real one, once the
				// origin is the one FuzzDesc's records name.
				want := *rec
				want.Origin = descFzOriginID
				wantDesc = AppendDesc(wantDesc[:0], &want)
				gotDesc = AppendDesc(gotDesc[:0], descDecode(t, dec, in.raw(), in.version()))
				if !bytes.Equal(gotDesc, wantDesc) {
					t.Fatalf("%s %s: rebuilt record described as\n%q\nnot\n%q", set.Name, rec.LSN, gotDesc, wantDesc)
				}
				n := len(in.main) + len(in.blockData())
				if len(wantDesc) > descMaxLen(n) {
					t.Fatalf("%s %s: description of %d bytes for %d bytes of data: %.300q", set.Name, rec.LSN, len(wantDesc), n, wantDesc)
				}
				// All of descCheck for the first records of each kind.
				kind := [4]uint8{in.ver, in.rmid, in.info, in.flags}
				if checked[kind] < 20 {
					checked[kind]++
					descCheck(t, in)
				}
				if r := float64(len(wantDesc)) / float64(max(n, 1)); r > maxRatio && n >= 16 {
					maxRatio, ratioRec = r, n
				}
				if n < 16 {
					maxShort = max(maxShort, len(wantDesc))
				}
				key := [3]uint8{in.ver, in.rmid, in.info}
				if p, seen := picks[key]; n <= descSeedMaxData && (!seen || len(wantDesc) > p.descLen) {
					in.main, in.block = bytes.Clone(in.main), bytes.Clone(in.block)
					picks[key] = pick{in, len(wantDesc), set.Name + " " + tl.TLI + " " + rec.LSN.String()}
				}
			})
		}
	}
	if records == 0 {
		t.Fatal("no records read")
	}
	// The real records again as every version's.
	keys := make([][3]uint8, 0, len(picks))
	for k := range picks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	for _, k := range keys {
		for v := uint8(10); v <= 18; v++ {
			in := picks[k].in
			in.ver = v
			descCheck(t, in)
		}
	}
	t.Logf("%d records, %d (version, rmgr, info) kinds; longest description per data byte %.1f (%d bytes of data); longest for under 16 bytes %d",
		records, len(picks), maxRatio, ratioRec, maxShort)

	if os.Getenv(descSeedEnv) != "1" {
		return
	}
	seeds := map[string]descInput{}
	for _, k := range keys {
		p := picks[k]
		name := fmt.Sprintf("real-pg%d-%s-%s-%02x", p.in.ver, descSeedName(Name(p.in.rmgrID())),
			descSeedName(string(AppendRecordType(nil, p.in.version(), p.in.rmgrID(), p.in.info))), p.in.info)
		seeds[name] = p.in
	}
	for name, in := range descMalformedSeeds(t) {
		seeds[name] = in
	}
	descWriteSeeds(t, seeds)
}

// descEachRecord calls fn with every record of one timeline of an extracted
// set that decodes.
func descEachRecord(t *testing.T, dir string, tl testwal.Timeline, fn func(*decode.Record)) {
	t.Helper()
	src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	tli, _ := strconv.ParseUint(tl.TLI, 16, 32)
	r, err := xlog.NewReader(src, xlog.Options{Timeline: xlog.TimeLineID(tli)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dec := decode.NewDecoder(0)
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !xlog.IsEndOfWAL(err) {
				t.Logf("%s: reading stopped: %v", tl.TLI, err)
			}
			return
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Errorf("%s %s: %v", tl.TLI, rec.LSN, err)
			continue
		}
		fn(d)
	}
}

// descInputOf is FuzzDesc's input for a real record: what its descriptions
// read (block 0's data, image and flags, whether there are other blocks, the
// origin), sharing rec's bytes. ok is false for a custom resource manager's
// record.
func descInputOf(rec *decode.Record) (in descInput, ok bool) {
	if rec.Header.Rmid > xlog.RmgrMaxBuiltin {
		return in, false
	}
	in = descInput{ver: uint8(rec.Version), rmid: uint8(rec.Header.Rmid), info: rec.Header.Info, main: rec.MainData}
	if b := rec.Block(0); b != nil {
		in.flags |= descFzBlock0 | uint8(b.Fork())<<descFzForkShift
		if b.HasImage {
			in.flags |= descFzImage
			if b.Apply {
				in.flags |= descFzApply
			}
		}
		in.block = b.Data
	}
	if len(rec.Blocks) > 1 || len(rec.Blocks) == 1 && rec.Blocks[0].ID != 0 {
		in.flags |= descFzBlock1
	}
	if rec.HasOrigin {
		in.flags |= descFzOrigin
	}
	if rec.Header.XID != 0 {
		in.flags |= descFzXID
	}
	return in, true
}

// descSeedName makes a name part of a file name.
func descSeedName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '+':
			return r
		}
		return '_'
	}, s)
}

// descOld holds the payloads of the no-panic tests FuzzDesc replaced.
type descOld struct {
	pattern []byte // TestBtreeIndexDescNoPanic: main and block data cut from it
	garbage []byte // TestSmgrGroupDescNeverPanics: descending bytes
	huge    []byte // TestSmgrGroupDescNeverPanics: a logical message of 2^62 and 2^63 bytes
	random  func(n int) []byte
	group   []descOldPayload // TestGroupDescTruncated
}

// descOldPayload is one of TestGroupDescTruncated's hand-made payloads and
// the record it was made for.
type descOldPayload struct {
	v    xlog.Version
	id   xlog.RmgrID
	info uint8
	data []byte
}

func descOldPayloads() descOld {
	var o descOld
	o.pattern = make([]byte, 80)
	for i := range o.pattern {
		o.pattern[i] = byte(i*37 + 11)
	}
	o.garbage = make([]byte, 64)
	for i := range o.garbage {
		o.garbage[i] = 0xFF - byte(i)
	}
	o.huge = descLE(uint32(0), uint8(1), "\x00\x00\x00", uint64(1<<62), uint64(1<<63), "x")
	// TestHeapDescMalformed: random main and block data.
	rng := rand.New(rand.NewSource(1))
	o.random = func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	o.group = []descOldPayload{
		{xlog.V11, xlog.RmgrXLOG, 0x10, xlogTestCheckpoint11()},
		{xlog.V12, xlog.RmgrXLOG, 0x00, xlogTestCheckpoint12(1)},
		{xlog.V18, xlog.RmgrTransaction, 0x00, xactTestCommit(xlog.V18)},
		{xlog.V15, xlog.RmgrTransaction, 0x10, xactTestPrepare(xlog.V15)},
		{xlog.V13, xlog.RmgrTransaction, 0x10, xactTestPrepare(xlog.V13)},
		{xlog.V16, xlog.RmgrStandby, 0x10, xlogTestLE(int32(5), int32(9), true, 3, uint32(1), uint32(2), uint32(3), uint32(4), uint32(5))},
		{xlog.V14, xlog.RmgrRelMap, 0x00, xlogTestLE(int32(3), uint32(1), uint32(2), uint32(3))},
		{xlog.V17, xlog.RmgrStandby, 0x00, xlogTestLE(int32(-5), int32(-7), uint32(0xFFFFFFFF), int32(0x7FFFFFFF), 20)},
	}
	return o
}

// TestDescOldPayloads runs FuzzDesc's checks over the grid the no-panic
// tests it replaced swept: every resource manager (and two unknown ids),
// every version and every record type, each with their payloads: the index
// pattern split between main and block data (with an image) and as main data
// alone, the descending garbage, the huge logical message, random main and
// block data, and one of the hand-made XLOG, Transaction, Standby and RelMap
// payloads. Each payload is cut at a length, and the low info bits set to a
// value, that change from one combination to the next, so every length of
// every payload is tried over the grid.
func TestDescOldPayloads(t *testing.T) {
	o := descOldPayloads()
	k := 0
	for id := 0; id < 24; id++ {
		for v := uint8(10); v <= 18; v++ {
			for typ := 0; typ < 256; typ += 0x10 {
				k++
				info, low := uint8(typ), uint8(typ|k%16)
				g := o.group[k%len(o.group)]
				for j := range 4 {
					c := k*7 + j*23 // a cut that moves through every length
					for _, in := range []descInput{
						{v, uint8(id), info, descFzBlock0 | descFzImage | uint8(k%2)*descFzApply, o.pattern[:c%81], o.pattern[c%81:]},
						{v, uint8(id), info, 0, o.pattern[:c%81], nil},
						{v, uint8(id), low, 0, o.garbage[:c%65], nil},
						{v, uint8(id), low, uint8(j%2) * descFzBlock1, o.huge[:len(o.huge)-j], nil},
						{v, uint8(id), info, descFzBlock0 | descFzOrigin, o.random(c % 48), o.random(k % 41)},
						{v, uint8(id), low, descFzXID, g.data[:c%(len(g.data)+1)], nil},
					} {
						descCheck(t, in)
					}
				}
			}
		}
	}
}

// descMalformedSeeds are the malformed and truncated records that the
// no-panic tests FuzzDesc replaced fed to the descriptions, as seeds: for
// each manager they swept, the record type that describes their payload at
// greatest length, whole and cut short, at a few versions.
func descMalformedSeeds(t *testing.T) map[string]descInput {
	seeds := map[string]descInput{}
	// longest adds the record type of manager id at version v whose
	// description of (main, block) is the longest.
	longest := func(prefix string, v xlog.Version, id xlog.RmgrID, flags uint8, main, block []byte) {
		best, bestLen := -1, -1
		for info := 0; info < 256; info += 0x10 {
			in := descInput{uint8(v), uint8(id), uint8(info), flags, main, block}
			rec := descDecode(t, decode.NewDecoder(descFzBlcksz), in.raw(), v)
			if n := len(AppendDesc(nil, rec)); n > bestLen {
				best, bestLen = info, n
			}
		}
		in := descInput{uint8(v), uint8(id), uint8(best), flags, main, block}
		seeds[fmt.Sprintf("malformed-%s-pg%d-%s-%s", prefix, v, descSeedName(Name(id)),
			descSeedName(string(AppendRecordType(nil, v, id, uint8(best)))))] = in
	}
	o := descOldPayloads()
	buf := o.pattern
	for _, id := range []xlog.RmgrID{xlog.RmgrBtree, xlog.RmgrHash, xlog.RmgrGin, xlog.RmgrGist, xlog.RmgrSPGist, xlog.RmgrBRIN} {
		longest("index", xlog.V16, id, descFzBlock0|descFzImage, buf[:40], buf[40:])
		longest("index-short", xlog.V11, id, descFzBlock0, buf[:3], buf[3:5])
	}
	for _, id := range []xlog.RmgrID{xlog.RmgrHeap, xlog.RmgrHeap2} {
		for _, v := range []xlog.Version{xlog.V10, xlog.V16, xlog.V17} {
			longest("heap-random", v, id, descFzBlock0, o.random(48), o.random(40))
		}
		longest("heap-short", xlog.V18, id, descFzBlock0, o.random(5), o.random(3))
	}
	for _, id := range []xlog.RmgrID{xlog.RmgrStorage, xlog.RmgrCLOG, xlog.RmgrDatabase, xlog.RmgrTablespace,
		xlog.RmgrMultiXact, xlog.RmgrSequence, xlog.RmgrCommitTs, xlog.RmgrReplicationOrigin,
		xlog.RmgrGeneric, xlog.RmgrLogicalMessage} {
		longest("garbage", xlog.V18, id, 0, o.garbage, nil)
	}
	longest("huge", xlog.V13, xlog.RmgrLogicalMessage, 0, o.huge, nil)
	longest("huge", xlog.V18, xlog.RmgrLogicalMessage, 0, o.huge, nil)
	for i, p := range o.group {
		for _, cut := range []int{len(p.data), len(p.data) / 2} {
			in := descInput{uint8(p.v), uint8(p.id), p.info, 0, p.data[:cut], nil}
			seeds[fmt.Sprintf("malformed-group%d-pg%d-%s-%s-%dof%d", i, p.v, descSeedName(Name(p.id)),
				descSeedName(string(AppendRecordType(nil, p.v, p.id, p.info))), cut, len(p.data))] = in
		}
	}
	return seeds
}

// descWriteSeeds replaces the generated files of FuzzDesc's corpus with seeds,
// in go test's corpus file format.
func descWriteSeeds(t *testing.T, seeds map[string]descInput) {
	t.Helper()
	if err := os.MkdirAll(descSeedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadDir(descSeedDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range old {
		if strings.HasPrefix(e.Name(), "real-") || strings.HasPrefix(e.Name(), "malformed-") {
			if err := os.Remove(filepath.Join(descSeedDir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := 0
	for name, in := range seeds {
		b := fmt.Appendf(nil, "go test fuzz v1\nuint8(%d)\nuint8(%d)\nuint8(0x%02x)\nuint8(0x%02x)\n[]byte(%q)\n[]byte(%q)\n",
			in.ver, in.rmid, in.info, in.flags, in.main, in.block)
		if err := os.WriteFile(filepath.Join(descSeedDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		total += len(b)
	}
	t.Logf("wrote %d seeds, %d bytes, to %s", len(seeds), total, descSeedDir)
}
