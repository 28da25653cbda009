package xlog

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Segment and page size limits (src/include/access/xlog_internal.h,
// IsValidWalSegSize; configure's --with-wal-blocksize).
const (
	MinSegmentSize = 1 << 20
	MaxSegmentSize = 1 << 30
	MinPageSize    = 1 << 10
	MaxPageSize    = 1 << 16
)

// ValidSegmentSize reports whether n is a segment size PostgreSQL allows.
func ValidSegmentSize(n uint32) bool {
	return n >= MinSegmentSize && n <= MaxSegmentSize && n&(n-1) == 0
}

// ValidPageSize reports whether n is an XLOG_BLCKSZ PostgreSQL allows.
func ValidPageSize(n uint32) bool {
	return n >= MinPageSize && n <= MaxPageSize && n&(n-1) == 0
}

// SegmentName is a WAL file name, TTTTTTTTXXXXXXXXYYYYYYYY
// (XLogFileName in src/include/access/xlog_internal.h). The name alone does not
// fix the segment size, so conversions to segment numbers take it.
type SegmentName struct {
	TLI      TimeLineID
	Log, Seg uint32
}

// ParseSegmentName parses the 24 upper-case hex digits of a segment file name.
// A ".partial" suffix is accepted and reported.
func ParseSegmentName(name string) (n SegmentName, partial bool, err error) {
	base, partial := strings.CutSuffix(name, ".partial")
	if !IsSegmentName(base) {
		return n, false, fmt.Errorf("%w: WAL file name %q", ErrSyntax, name)
	}
	t, _ := strconv.ParseUint(base[0:8], 16, 32)
	l, _ := strconv.ParseUint(base[8:16], 16, 32)
	s, _ := strconv.ParseUint(base[16:24], 16, 32)
	return SegmentName{TimeLineID(t), uint32(l), uint32(s)}, partial, nil
}

// IsSegmentName reports whether name is exactly 24 upper-case hex digits
// (IsXLogFileName).
func IsSegmentName(name string) bool {
	if len(name) != 24 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// SegNo returns the segment number the name stands for with segments of segSize bytes.
func (n SegmentName) SegNo(segSize uint32) uint64 {
	return uint64(n.Log)*segsPerXLogID(segSize) + uint64(n.Seg)
}

// NewSegmentName returns the name of segment segno of timeline tli.
func NewSegmentName(tli TimeLineID, segno uint64, segSize uint32) SegmentName {
	per := segsPerXLogID(segSize)
	return SegmentName{tli, uint32(segno / per), uint32(segno % per)}
}

func (n SegmentName) String() string {
	// By hand, not with fmt: every segment opened took a Sprintf, and
	// every comparison of names in a sort two (issue 16: over many
	// switched segments, an eighth of the allocations).
	var b [24]byte
	putHex8(b[0:8], uint32(n.TLI))
	putHex8(b[8:16], n.Log)
	putHex8(b[16:24], n.Seg)
	return string(b[:])
}

// putHex8 writes v as 8 upper-case hex digits.
func putHex8(b []byte, v uint32) {
	const digits = "0123456789ABCDEF"
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
}

// Compare orders names as their file names sort (-1, 0 or +1): by
// timeline, then log, then segment.
func (n SegmentName) Compare(m SegmentName) int {
	if c := cmp.Compare(n.TLI, m.TLI); c != 0 {
		return c
	}
	if c := cmp.Compare(n.Log, m.Log); c != 0 {
		return c
	}
	return cmp.Compare(n.Seg, m.Seg)
}

func segsPerXLogID(segSize uint32) uint64 { return 0x100000000 / uint64(segSize) }

// TimeLineID is a timeline, TimeLineID (src/include/access/xlogdefs.h).
type TimeLineID uint32

// XID is a TransactionId.
type XID uint32

// SegmentIndex is a Source's segment files indexed by name, built once and
// shared by the readers of one parallel reading (Options.Index). Each reader
// would otherwise index every file of the source again: over an archive of
// many small or empty files, cut into many spans, that is quadratic in the
// files (issue 16: 10,000 empty files took 26 s to verify). It is safe for
// concurrent use; use it only with the Source it was first used with.
type SegmentIndex struct {
	mu      sync.Mutex
	built   bool
	files   int
	segSize uint32
	byName  map[SegmentName][]SegmentFile // plain file first, then .partial, as Segments lists them
	maxSeg  map[TimeLineID]uint64         // the highest segment number per timeline
	// the geometry the first reader read from geoPath's long page header:
	// later spans' readers do not open that file again for it
	geoPath string
	geo     geometry
}

// NewSegmentIndex returns an empty index; the first reader given it fills it.
func NewSegmentIndex() *SegmentIndex { return &SegmentIndex{} }

// lookup returns the files by name and the highest segment number on the
// timelines onPlan accepts, building the index on first use. ok is false
// when the index was built over other files or another segment size: the
// reader then indexes the files itself.
func (x *SegmentIndex) lookup(files []SegmentFile, segSize uint32, onPlan func(TimeLineID) bool) (byName map[SegmentName][]SegmentFile, maxSegNo uint64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built {
		x.byName = indexByName(files)
		x.maxSeg = map[TimeLineID]uint64{}
		for _, f := range files {
			x.maxSeg[f.Name.TLI] = max(x.maxSeg[f.Name.TLI], f.Name.SegNo(segSize))
		}
		x.built, x.files, x.segSize = true, len(files), segSize
	}
	if x.files != len(files) || x.segSize != segSize {
		return nil, 0, false
	}
	for tli, s := range x.maxSeg {
		if onPlan(tli) {
			maxSegNo = max(maxSegNo, s)
		}
	}
	return x.byName, maxSegNo, true
}

// indexByName indexes files by name, each name's files in their order.
// Sources list a name's files one after the other (Segments): each name's
// slice is then a piece of files, not an allocation of its own per file
// (issue 16: one per segment, over many switched segments).
func indexByName(files []SegmentFile) map[SegmentName][]SegmentFile {
	byName := make(map[SegmentName][]SegmentFile, len(files))
	for i := 0; i < len(files); {
		j := i + 1
		for j < len(files) && files[j].Name == files[i].Name {
			j++
		}
		if have, ok := byName[files[i].Name]; ok {
			// (not next to the name's other files: a copy)
			byName[files[i].Name] = append(have[:len(have):len(have)], files[i:j]...)
		} else {
			byName[files[i].Name] = files[i:j:j]
		}
		i = j
	}
	return byName
}
