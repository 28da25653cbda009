package xlog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

type written struct {
	lsn xlog.LSN
	raw []byte
}

// readAll reads every record of src and returns them with the final error.
func readAll(t *testing.T, src xlog.Source, opts xlog.Options) ([]written, error) {
	t.Helper()
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []written
	last := xlog.LSN(0)
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		if rec.LSN <= last && len(out) > 0 {
			t.Fatalf("LSN %s after %s", rec.LSN, last)
		}
		last = rec.LSN
		if len(rec.Raw) != int(rec.Header.TotLen) {
			t.Fatalf("record at %s: %d raw bytes, xl_tot_len %d", rec.LSN, len(rec.Raw), rec.Header.TotLen)
		}
		out = append(out, written{rec.LSN, bytes.Clone(rec.Raw)})
	}
}

// TestBoundarySweep writes records of pseudo-random sizes, from a bare header
// to several pages, over several segments and page sizes, and reads them back:
// every LSN and byte must come back, and the zeroed tail must end the WAL.
// The sweep must have produced each boundary case it is meant to cover.
func TestBoundarySweep(t *testing.T) {
	for _, geom := range []struct {
		v        xlog.Version
		pageSize uint32
	}{{xlog.V15, 1024}, {xlog.V18, 8192}, {xlog.V13, 4096}, {xlog.V18, 65536}} {
		w := xlogtest.NewWriter(geom.v, geom.pageSize, 1<<20, 3)
		rng := rand.New(rand.NewPCG(1, uint64(geom.pageSize)))
		var want []written
		ps := int(geom.pageSize)
		// Records that end exactly at the end of a page.
		for i := 0; i < 3; i++ {
			l, r := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(100*i))
			want = append(want, written{l, r})
			total := ps - int(w.Pos())%ps
			if total < 24+5+256 {
				total += ps - xlog.ShortPageHeaderSize
			}
			lsn, raw := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(total-24-5))
			want = append(want, written{lsn, raw})
		}
		for w.Pos() < xlog.LSN(5<<20)+xlog.LSN(1<<20)/2 {
			var n int
			switch rng.IntN(4) {
			case 0:
				n = rng.IntN(64)
			case 1:
				n = rng.IntN(ps)
			case 2:
				n = ps - 40 + rng.IntN(80)
			default:
				n = rng.IntN(4 * ps)
			}
			body := xlogtest.MainData(n)
			lsn, raw := w.Record(xlog.RmgrLogicalMessage, 0, xlog.XID(len(want)+1), body)
			want = append(want, written{lsn, raw})
		}
		var splitHeader, endsOnPage, crossSegment, multiPage int
		for _, rec := range want {
			off := int(rec.lsn) % ps
			end := int(rec.lsn) + len(rec.raw)
			if ps-off < xlog.RecordHeaderSize {
				splitHeader++
			}
			if end%ps == 0 {
				endsOnPage++
			}
			if int(rec.lsn)>>20 != (end-1)>>20 {
				crossSegment++
			}
			if len(rec.raw) > 2*ps {
				multiPage++
			}
		}
		if (splitHeader == 0 && ps <= 8192) || endsOnPage == 0 || crossSegment == 0 || multiPage == 0 {
			t.Fatalf("%s: sweep missed a case: split headers %d, segment crossings %d, multi-page %d",
				w, splitHeader, crossSegment, multiPage)
		}
		got, err := readAll(t, w.Source(), xlog.Options{})
		if !xlog.IsEndOfWAL(err) || err == io.EOF {
			t.Errorf("%s: final error %v, want an end of WAL (zeroed space)", w, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: read %d records, wrote %d (final error %v)", w, len(got), len(want), err)
		}
		for i := range want {
			if got[i].lsn != want[i].lsn || !bytes.Equal(got[i].raw, want[i].raw) {
				t.Fatalf("%s: record %d: got LSN %s (%d bytes), want %s (%d bytes)", w, i,
					got[i].lsn, len(got[i].raw), want[i].lsn, len(want[i].raw))
			}
		}
		t.Logf("%s: %d records; split headers %d, ending on a page end %d, crossing segments %d, multi-page %d",
			w, len(want), splitHeader, endsOnPage, crossSegment, multiPage)
	}
}

// TestSwitchSkipsRestOfSegment: after XLOG SWITCH the reader goes on at the
// next segment's first record, whatever the rest of the segment holds.
func TestSwitchSkipsRestOfSegment(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(100))
	sw := w.Switch()
	next, _ := w.Record(xlog.RmgrLogicalMessage, 0, 2, xlogtest.MainData(100))
	files := w.Finish()
	// Garbage after the switch record must not be read.
	seg := files[w.SegmentName(1)]
	for i := int(sw%(1<<20)) + 64; i < 1<<20; i++ {
		seg[i] = 0xAB
	}
	got, err := readAll(t, xlog.NewMemSource(files), xlog.Options{})
	if len(got) != 3 || got[2].lsn != next {
		t.Fatalf("got %d records (last %v), want 3 ending at %s; err %v", len(got), got, next, err)
	}
	if next != xlog.LSN(2<<20)+xlog.LongPageHeaderSize {
		t.Fatalf("record after switch at %s", next)
	}
}

// TestEndRange: a record that does not end at or before End is not returned,
// and the run ends with io.EOF, as pg_waldump -e does.
func TestEndRange(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V18, 8192, 1<<20, 1)
	var lsns []xlog.LSN
	var raws [][]byte
	for i := 0; i < 50; i++ {
		l, raw := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(300))
		lsns = append(lsns, l)
		raws = append(raws, raw)
	}
	src := w.Source()
	for _, k := range []int{0, 1, 10, 27, 49} {
		end := lsns[k] + xlog.LSN(len(raws[k]))
		for _, e := range []xlog.LSN{end, end - 1} {
			got, err := readAll(t, src, xlog.Options{End: e})
			want := k + 1
			if e < end {
				want = k
			}
			if err != io.EOF || len(got) != want {
				t.Errorf("End %s: %d records, err %v; want %d, io.EOF", e, len(got), err, want)
			}
		}
	}
	// Start in the middle of a record: the next record is the first.
	got, err := readAll(t, src, xlog.Options{Start: lsns[5] + 3})
	if len(got) != 44 || got[0].lsn != lsns[6] || !xlog.IsEndOfWAL(err) {
		t.Errorf("Start inside a record: %d records from %v, err %v", len(got), got[0].lsn, err)
	}
}

func TestCorruptionIsPositioned(t *testing.T) {
	base := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	var lsns []xlog.LSN
	for i := 0; i < 200; i++ {
		l, _ := base.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(100+i))
		lsns = append(lsns, l)
	}
	name := base.SegmentName(1)
	cases := []struct {
		name   string
		mutate func(seg []byte)
		want   error
		at     xlog.LSN
		n      int
		end    bool
	}{
		{"crc", func(s []byte) { s[int(lsns[50]%(1<<20))+20] ^= 1 }, xlog.ErrChecksum, lsns[50], 50, false},
		{"body", func(s []byte) { s[int(lsns[50]%(1<<20))+30] ^= 0x10 }, xlog.ErrChecksum, lsns[50], 50, false},
		{"prev", func(s []byte) { s[int(lsns[70]%(1<<20))+8] ^= 8 }, xlog.ErrPrevLink, lsns[70], 70, false},
		{"rmid", func(s []byte) { s[int(lsns[70]%(1<<20))+17] = 100 }, xlog.ErrRmgrID, lsns[70], 70, false},
		{"zero length", func(s []byte) { copy(s[int(lsns[70]%(1<<20)):], make([]byte, 4)) }, xlog.ErrZeroLength, lsns[70], 70, true},
		{"magic", func(s []byte) { s[3*8192] = 0x0D }, xlog.ErrMagic, 3 * 8192, -1, false},
		{"info bits", func(s []byte) { s[3*8192+2] = 0x15 }, xlog.ErrPageInfo, 3 * 8192, -1, false},
		{"pageaddr ahead", func(s []byte) { s[3*8192+10] ^= 0x40 }, xlog.ErrPageAddr, 3 * 8192, -1, false},
		{"pageaddr stale", func(s []byte) { s[3*8192+10] = 0 }, xlog.ErrPageAddr, 3 * 8192, -1, true},
		{"timeline", func(s []byte) { s[3*8192+4] = 0 }, xlog.ErrTimeline, 3 * 8192, -1, false},
		{"rem_len", func(s []byte) { s[3*8192+16] ^= 1 }, xlog.ErrContRecordLength, 3 * 8192, -1, false},
		{"contrecord flag", func(s []byte) { s[3*8192+2] &^= 1 }, xlog.ErrNoContRecord, 3 * 8192, -1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := base.Finish()
			seg := bytes.Clone(files[name])
			c.mutate(seg)
			files[name] = seg
			got, err := readAll(t, xlog.NewMemSource(files), xlog.Options{})
			xe, ok := errors.AsType[*xlog.Error](err)
			if !ok || !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			off := int64(c.at % (1 << 20))
			wantLSN := 1<<20 + c.at%(1<<20)
			if errors.Is(err, xlog.ErrContRecordLength) || errors.Is(err, xlog.ErrNoContRecord) {
				// PostgreSQL names the record being reassembled; the
				// offset is the damaged page's.
				for _, l := range lsns {
					if l < 1<<20+c.at%(1<<20) {
						wantLSN = l
					}
				}
			}
			if xe.LSN != wantLSN || xe.Offset != off || xe.File != name {
				t.Errorf("error at %s (%s offset %d), want %s offset %d", xe.LSN, xe.File, xe.Offset, wantLSN, off)
			}
			if c.n >= 0 && len(got) != c.n {
				t.Errorf("%d records before the error, want %d", len(got), c.n)
			}
			if len(got) > 0 && xe.RecordLSN != got[len(got)-1].lsn {
				t.Errorf("RecordLSN %s, want the last good record %s", xe.RecordLSN, got[len(got)-1].lsn)
			}
			if xlog.IsEndOfWAL(err) != c.end {
				t.Errorf("IsEndOfWAL = %v, want %v", !c.end, c.end)
			}
			if xe.Msg == "" {
				t.Error("no PostgreSQL message")
			}
		})
	}
}

// TestSkipCRC: with SkipCRC a record whose body or CRC is damaged is read
// (in one page and across pages, with and without HeadersOnly), while the
// other checks still apply.
func TestSkipCRC(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	var lsns []xlog.LSN
	for i := 0; i < 100; i++ {
		l, _ := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(100+(i*37)%800)) // under HeadersOnlyKeep: kept whole
		lsns = append(lsns, l)
	}
	name := w.SegmentName(1)
	files := w.Finish()
	seg := bytes.Clone(files[name])
	var spanning xlog.LSN // a record that crosses a page boundary
	for i, l := range lsns[:len(lsns)-1] {
		if l/8192 != (lsns[i+1]-1)/8192 && i > 10 {
			spanning = l
			break
		}
	}
	seg[int(lsns[5]%(1<<20))+40] ^= 0x10
	if spanning == 0 {
		t.Fatal("no record crosses a page")
	}
	seg[int(spanning%(1<<20))+40] ^= 0x10
	files[name] = seg
	for _, headersOnly := range []bool{false, true} {
		got, err := readAll(t, xlog.NewMemSource(files), xlog.Options{HeadersOnly: headersOnly})
		if !errors.Is(err, xlog.ErrChecksum) || len(got) != 5 {
			t.Errorf("checked: %d records, err %v; want 5 and a checksum error", len(got), err)
		}
		got, err = readAll(t, xlog.NewMemSource(files), xlog.Options{SkipCRC: true, HeadersOnly: headersOnly})
		if !xlog.IsEndOfWAL(err) || len(got) != len(lsns) {
			t.Errorf("SkipCRC: %d records, err %v; want %d and the end of WAL", len(got), err, len(lsns))
		}
	}
	seg[int(lsns[70]%(1<<20))+8] ^= 8 // xl_prev
	got, err := readAll(t, xlog.NewMemSource(files), xlog.Options{SkipCRC: true})
	if !errors.Is(err, xlog.ErrPrevLink) || len(got) != 70 {
		t.Errorf("SkipCRC, damaged xl_prev: %d records, err %v; want 70 and a prev-link error", len(got), err)
	}
}

// TestGapIsAnError: a missing segment between two present ones is an error
// naming the missing file; a missing segment after the last is the end.
func TestGapIsAnError(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	for w.Pos() < 3<<20+4096 {
		w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(3000))
	}
	files := w.Finish()
	delete(files, w.SegmentName(2))
	got, err := readAll(t, xlog.NewMemSource(files), xlog.Options{})
	if !errors.Is(err, xlog.ErrSegmentNotFound) || xlog.IsEndOfWAL(err) {
		t.Fatalf("err %v after %d records, want a missing segment", err, len(got))
	}
	files = w.Finish()
	delete(files, w.SegmentName(3))
	_, err = readAll(t, xlog.NewMemSource(files), xlog.Options{})
	if err != io.EOF {
		t.Fatalf("err %v at the end of the last file, want io.EOF", err)
	}
}

// TestOverwriteContrecord: a record whose continuation was lost and then
// overwritten (XLP_FIRST_IS_OVERWRITE_CONTRECORD) is dropped, as xlogreader
// drops it; the OVERWRITE_CONTRECORD record that follows is returned with the
// aborted record's LSN, and its xl_prev skipping the aborted record is valid.
func TestOverwriteContrecord(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	var lsns []xlog.LSN
	for i := 0; i < 10; i++ {
		l, _ := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(1000))
		lsns = append(lsns, l)
	}
	aborted, _ := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(9000))
	lost := (aborted/8192 + 1) * 8192
	w.OverwriteFrom(lost, lsns[9])
	body := append([]byte{255, 16}, make([]byte, 16)...)
	binary.LittleEndian.PutUint64(body[2:], uint64(aborted))
	over, _ := w.Record(xlog.RmgrXLOG, 0xD0, 0, body)
	after, _ := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(10))
	r, err := xlog.NewReader(w.Source(), xlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []xlog.LSN
	var abortedSeen xlog.LSN
	for {
		rec, err := r.Next()
		if err != nil {
			if !xlog.IsEndOfWAL(err) {
				t.Fatalf("error %v", err)
			}
			break
		}
		got = append(got, rec.LSN)
		if rec.LSN == over {
			abortedSeen = rec.Aborted
		}
	}
	want := append(append([]xlog.LSN{}, lsns...), over, after)
	if len(got) != len(want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d at %s, want %s", i, got[i], want[i])
		}
	}
	if over != lost+xlog.ShortPageHeaderSize || abortedSeen != aborted {
		t.Errorf("overwrite record at %s (page %s), reports aborted %s, want %s", over, lost, abortedSeen, aborted)
	}
}

// TestHeadersOnly: reading with HeadersOnly returns the same records, with
// the same first bytes, and still checks the CRC of every byte.
func TestHeadersOnly(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V18, 4096, 1<<20, 1)
	var lsns []xlog.LSN
	for i := 0; i < 300; i++ {
		l, _ := w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(i*61%20000))
		lsns = append(lsns, l)
	}
	full, errFull := readAll(t, w.Source(), xlog.Options{})
	short, errShort := readAll2(t, w.Source(), xlog.Options{HeadersOnly: true})
	if len(full) != len(short) || len(full) != 300 || !xlog.IsEndOfWAL(errFull) || !xlog.IsEndOfWAL(errShort) {
		t.Fatalf("%d and %d records (%v, %v)", len(full), len(short), errFull, errShort)
	}
	spanning := 0
	for i := range full {
		n := min(len(full[i].raw), xlog.HeadersOnlyKeep)
		if len(short[i].raw) < n || !bytes.Equal(short[i].raw[:n], full[i].raw[:n]) || full[i].lsn != short[i].lsn {
			t.Fatalf("record %d differs", i)
		}
		if len(short[i].raw) < len(full[i].raw) {
			spanning++
		}
	}
	if spanning == 0 {
		t.Fatal("no record was cut")
	}
	// Damage the last byte of a long record: the CRC still sees it.
	files := w.Finish()
	name := w.SegmentName(1)
	var victim written
	for _, r := range full {
		if len(r.raw) > 3*4096 {
			victim = r
			break
		}
	}
	seg := bytes.Clone(files[name])
	end := recordEnd(int(victim.lsn%(1<<20)), len(victim.raw), 4096)
	seg[end-1] ^= 0xFF
	files[name] = seg
	_, err := readAll2(t, xlog.NewMemSource(files), xlog.Options{HeadersOnly: true})
	if !errors.Is(err, xlog.ErrChecksum) {
		t.Fatalf("damaged tail: %v, want a checksum error", err)
	}
}

// readAll2 is readAll without the full-length check, for HeadersOnly.
func readAll2(t *testing.T, src xlog.Source, opts xlog.Options) ([]written, error) {
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []written
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, written{rec.LSN, bytes.Clone(rec.Raw)})
	}
}
