package xlog_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

// historyDir writes two segments of timeline 1 and the history file of
// timeline 2 (switched from 1 at 0/180000) into a new directory.
func historyDir(t *testing.T) (dir, history string) {
	t.Helper()
	w := xlogtest.NewWriter(xlog.V16, 8192, 1<<20, 1)
	for i := range 40 {
		w.Record(xlog.RmgrLogicalMessage, 0, xlog.XID(i+1), xlogtest.MainData(30000))
	}
	dir = t.TempDir()
	for name, b := range w.Finish() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	history = filepath.Join(dir, "00000002.history")
	if err := os.WriteFile(history, []byte("1\t0/180000\tno recovery target specified\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, history
}

// TestDirSourceHistory: DirSource is a HistoryReader; the reader follows
// the history it reads, and ReadHistory reads only the files it lists.
func TestDirSourceHistory(t *testing.T) {
	dir, history := historyDir(t)
	src, err := xlog.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var hr xlog.HistoryReader = src
	if got := hr.Histories(); len(got) != 1 || got[2] != history {
		t.Fatalf("Histories() = %v, want timeline 2 at %s", got, history)
	}
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := []xlog.Timeline{{TLI: 1, End: 0x180000}, {TLI: 2, Begin: 0x180000}}
	if got := r.Timelines(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Timelines() = %v, want %v", got, want)
	}
	if _, err := src.ReadHistory(filepath.Join(dir, "000000010000000000000001")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadHistory of a segment file: %v, want fs.ErrNotExist", err)
	}
}

// listingSource lists history files but cannot read them: it is no
// HistoryReader.
type listingSource struct {
	src       *xlog.DirSource
	histories map[xlog.TimeLineID]string
}

func (s listingSource) Segments() []xlog.SegmentFile               { return s.src.Segments() }
func (s listingSource) Open(f xlog.SegmentFile) (xlog.File, error) { return s.src.Open(f) }
func (s listingSource) Histories() map[xlog.TimeLineID]string      { return s.histories }

// TestHistoryNeverReadBehindTheSource: the reader reads history files only
// through the source (HistoryReader), never from the local disk by the
// names a source gives.
func TestHistoryNeverReadBehindTheSource(t *testing.T) {
	dir, history := historyDir(t)
	dirSrc, err := xlog.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := listingSource{src: dirSrc, histories: map[xlog.TimeLineID]string{2: history}}
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Timelines(); len(got) != 1 || got[0].TLI != 1 || got[0].End != 0 {
		t.Errorf("Timelines() = %v: the history file was read from the disk, behind the source", got)
	}
}

// failingHistories is a HistoryReader whose history files cannot be read.
type failingHistories struct{ listingSource }

var errNoHistory = errors.New("history unavailable")

func (failingHistories) ReadHistory(string) (string, error) { return "", errNoHistory }

// TestHistoryReadError: a history file the source lists and cannot read is
// an error, not a silent fallback.
func TestHistoryReadError(t *testing.T) {
	dir, history := historyDir(t)
	dirSrc, err := xlog.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := failingHistories{listingSource{src: dirSrc, histories: map[xlog.TimeLineID]string{2: history}}}
	if _, err := xlog.NewReader(src, xlog.Options{FollowHistory: true}); !errors.Is(err, errNoHistory) {
		t.Errorf("NewReader: %v, want the source's error", err)
	}
}

// TestMemSourceHistory: MemSource reads the history files it holds and
// nothing else.
func TestMemSourceHistory(t *testing.T) {
	src := xlog.NewMemSource(map[string][]byte{
		"00000003.history":         []byte("1\t0/10\tx\n2\t0/20\ty\n"),
		"000000010000000000000001": make([]byte, 16),
	})
	var hr xlog.HistoryReader = src
	if text, err := hr.ReadHistory(hr.Histories()[3]); err != nil || text != "1\t0/10\tx\n2\t0/20\ty\n" {
		t.Errorf("ReadHistory = %q, %v", text, err)
	}
	if _, err := hr.ReadHistory("000000010000000000000001"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadHistory of a segment: %v, want fs.ErrNotExist", err)
	}
}
