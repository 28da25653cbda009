package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/walscope/walscope/xlog"
)

// ProblemKind classifies a problem with an archive file.
type ProblemKind string

// The problems Facts reports.
const (
	ProblemDuplicate    ProblemKind = "duplicate"           // the same segment elsewhere with different content
	ProblemOtherSystem  ProblemKind = "other-system"        // long header system id differs from the most common one
	ProblemGap          ProblemKind = "gap"                 // segments missing before this one on its timeline
	ProblemEncrypted    ProblemKind = "encrypted"           // an encryption envelope
	ProblemUnrecognized ProblemKind = "unrecognised"        // neither WAL nor compressed WAL (maybe encrypted)
	ProblemChecksum     ProblemKind = "checksum"            // pgBackRest's SHA-1 does not match
	ProblemTooLarge     ProblemKind = "too-large"           // content larger than its segment size
	ProblemCorrupt      ProblemKind = "corrupt-compression" // the compressed stream is damaged
	ProblemUnreadable   ProblemKind = "unreadable"          // an I/O error
	ProblemMissing      ProblemKind = "missing"             // listed by an index (Barman's xlog.db) but absent
	ProblemIndex        ProblemKind = "index"               // present but not listed by the index
)

// Problem is one problem with a file.
type Problem struct {
	Kind    ProblemKind `json:"kind"`
	Message string      `json:"message"`
}

// FileFact is what an archive holds in one file.
type FileFact struct {
	Name     string          `json:"name"` // 000000010000000000000001, ….partial, or 00000002.history
	Kind     string          `json:"kind"` // segment, partial or history
	Timeline xlog.TimeLineID `json:"timeline"`
	Layout   Layout          `json:"layout"`
	Path     string          `json:"path"`             // the file (the tar file for a member)
	Member   string          `json:"member,omitempty"` // the tar member
	// StoredSize is the size of the file (or member) as stored.
	StoredSize int64 `json:"stored_size"`
	// Size is the decompressed size, -1 if the file could not be read.
	Size        int64       `json:"size"`
	Compression Compression `json:"compression,omitempty"` // "" if unknown (encrypted, unreadable)
	// From the long page header of a segment.
	SystemID    uint64 `json:"system_id,omitempty"`
	Version     int    `json:"pg_version,omitempty"`
	SegmentSize uint32 `json:"segment_size,omitempty"`
	// SHA256 of the decompressed content.
	SHA256   string    `json:"sha256,omitempty"`
	Problems []Problem `json:"problems,omitempty"`

	segno uint64
}

// Facts reads every file of the source (decompressing it, checking
// pgBackRest's SHA-1, never materialising it) and reports what each holds,
// with the problems found: duplicates with different content, files of
// another system, gaps per timeline, encrypted, unrecognised and unreadable
// files. Files are read in parallel; members of a compressed tar in order.
func (s *Source) Facts() ([]FileFact, error) {
	facts := make([]FileFact, len(s.entries))
	var jobs [][]int
	byTar := map[*tarArchive]int{}
	for i, e := range s.entries {
		if e.tar != nil && e.member.offset < 0 {
			if j, ok := byTar[e.tar]; ok {
				jobs[j] = append(jobs[j], i)
				continue
			}
			byTar[e.tar] = len(jobs)
		}
		jobs = append(jobs, []int{i})
	}
	for _, j := range byTar {
		idx := jobs[j]
		sort.Slice(idx, func(a, b int) bool { return s.entries[idx[a]].member.ordinal < s.entries[idx[b]].member.ordinal })
	}
	work := make(chan []int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for idx := range work {
				for _, i := range idx {
					facts[i] = s.fact(s.entries[i])
				}
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	crossCheck(facts)
	return facts, nil
}

func (s *Source) fact(e *entry) FileFact {
	f := FileFact{Name: e.name.Canonical, Timeline: e.name.TLI, Layout: e.layout, Path: e.file,
		StoredSize: e.size, Size: -1, Kind: "segment"}
	switch {
	case e.name.History:
		f.Kind = "history"
	case e.name.Partial:
		f.Kind = "partial"
	}
	if e.member != nil {
		f.Member = e.member.name
	}
	f.Problems = append(f.Problems, e.problems...)
	if e.missing {
		return f
	}
	h := sha256.New()
	err := s.withStream(e, func(st *stream) error {
		f.Compression = st.comp
		c, err := e.readHash(st, false, h)
		if err != nil {
			return err
		}
		f.Size = c.size
		if ph, ok := xlog.ParsePageHeader(c.head); ok && ph.Long() && !e.name.History {
			f.SystemID, f.SegmentSize = ph.SystemID, ph.SegmentSize
			if v, ok := xlog.VersionFromMagic(ph.Magic); ok {
				f.Version = int(v)
			}
		}
		return nil
	})
	if err != nil {
		f.Problems = append(f.Problems, problemOf(err))
		if errors.Is(err, ErrEncrypted) || errors.Is(err, ErrUnrecognized) {
			f.Compression = ""
		}
		return f
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return f
}

func problemOf(err error) Problem {
	msg := err.Error()
	if ae, ok := errors.AsType[*Error](err); ok && ae.Msg != "" {
		msg = ae.Msg
	}
	kind := ProblemUnreadable
	switch {
	case errors.Is(err, ErrEncrypted):
		kind = ProblemEncrypted
	case errors.Is(err, ErrUnrecognized):
		kind = ProblemUnrecognized
	case errors.Is(err, ErrChecksum):
		kind = ProblemChecksum
	case errors.Is(err, ErrTooLarge):
		kind = ProblemTooLarge
	case errors.Is(err, ErrCorrupt):
		kind = ProblemCorrupt
	case errors.Is(err, fs.ErrNotExist):
		kind = ProblemMissing
	}
	return Problem{Kind: kind, Message: msg}
}

// crossCheck adds the problems that compare files: other systems,
// duplicates with different content, gaps.
func crossCheck(facts []FileFact) {
	// The system: the most common system identifier.
	sys := map[uint64]int{}
	sizes := map[uint32]int{}
	for _, f := range facts {
		if f.SystemID != 0 {
			sys[f.SystemID]++
		}
		if xlog.ValidSegmentSize(f.SegmentSize) {
			sizes[f.SegmentSize]++
		}
	}
	main, n := mostCommon(sys)
	for i := range facts {
		f := &facts[i]
		if f.SystemID != 0 && f.SystemID != main {
			f.Problems = append(f.Problems, Problem{Kind: ProblemOtherSystem, Message: fmt.Sprintf(
				"from another system: system identifier %d, where %d file(s) have %d", f.SystemID, n, main)})
		}
	}
	// Duplicates: the same name more than once, compared by content.
	byName := map[string][]int{}
	for i, f := range facts {
		byName[f.Name] = append(byName[f.Name], i)
	}
	for _, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			var differ []string
			for _, j := range idx {
				if j == i || facts[i].SHA256 == "" || facts[j].SHA256 == "" {
					continue
				}
				if facts[i].SHA256 != facts[j].SHA256 {
					differ = append(differ, facts[j].where())
				}
			}
			if len(differ) > 0 {
				facts[i].Problems = append(facts[i].Problems, Problem{Kind: ProblemDuplicate, Message: fmt.Sprintf(
					"duplicate with different content: %s", strings.Join(differ, ", "))})
			}
		}
	}
	// Gaps, per timeline, with the most common segment size.
	segSize, _ := mostCommon(sizes)
	if segSize == 0 {
		return
	}
	byTLI := map[xlog.TimeLineID][]int{}
	for i := range facts {
		f := &facts[i]
		if f.Kind == "history" {
			continue
		}
		n, ok := ParseName(f.Name)
		if !ok {
			continue
		}
		f.segno = n.Segment.SegNo(segSize)
		byTLI[f.Timeline] = append(byTLI[f.Timeline], i)
	}
	for tli, idx := range byTLI {
		sort.SliceStable(idx, func(a, b int) bool { return facts[idx[a]].segno < facts[idx[b]].segno })
		for k := 1; k < len(idx); k++ {
			prev, cur := facts[idx[k-1]].segno, facts[idx[k]].segno
			if cur <= prev+1 {
				continue
			}
			first := xlog.NewSegmentName(tli, prev+1, segSize)
			last := xlog.NewSegmentName(tli, cur-1, segSize)
			msg := fmt.Sprintf("gap: segment %s is missing before it", first)
			if cur-prev-1 > 1 {
				msg = fmt.Sprintf("gap: %d segments, %s to %s, are missing before it", cur-prev-1, first, last)
			}
			f := &facts[idx[k]]
			f.Problems = append(f.Problems, Problem{Kind: ProblemGap, Message: msg})
		}
	}
}

func (f *FileFact) where() string {
	if f.Member != "" {
		return f.Path + ":" + f.Member
	}
	return f.Path
}

func mostCommon[K uint64 | uint32](m map[K]int) (K, int) {
	var best K
	n := 0
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best, n
}

// TimelineSummary describes the segments of one timeline.
type TimelineSummary struct {
	TLI         xlog.TimeLineID `json:"timeline"`
	Segments    int             `json:"segments"` // files, partial ones included
	First       string          `json:"first"`
	Last        string          `json:"last"`
	Gaps        int             `json:"gaps"`
	History     bool            `json:"history_file"`
}

// Summary totals a list of facts.
type Summary struct {
	Files       int               `json:"files"`
	Segments    int               `json:"segments"`
	Histories   int               `json:"histories"`
	StoredBytes int64             `json:"stored_bytes"`
	Bytes       int64             `json:"bytes"`
	SystemID    uint64            `json:"system_id,omitempty"`
	Timelines   []TimelineSummary `json:"timelines"`
	Problems    map[ProblemKind]int `json:"problems"`
}

// Summarize totals facts: per timeline, per problem kind.
func Summarize(facts []FileFact) Summary {
	s := Summary{Problems: map[ProblemKind]int{}}
	tl := map[xlog.TimeLineID]*TimelineSummary{}
	sys := map[uint64]int{}
	get := func(t xlog.TimeLineID) *TimelineSummary {
		if tl[t] == nil {
			tl[t] = &TimelineSummary{TLI: t}
		}
		return tl[t]
	}
	for _, f := range facts {
		s.Files++
		s.StoredBytes += f.StoredSize
		if f.Size > 0 {
			s.Bytes += f.Size
		}
		if f.SystemID != 0 {
			sys[f.SystemID]++
		}
		for _, p := range f.Problems {
			s.Problems[p.Kind]++
		}
		t := get(f.Timeline)
		if f.Kind == "history" {
			s.Histories++
			t.History = true
			continue
		}
		s.Segments++
		t.Segments++
		if t.First == "" || f.Name < t.First {
			t.First = f.Name
		}
		if f.Name > t.Last {
			t.Last = f.Name
		}
		for _, p := range f.Problems {
			if p.Kind == ProblemGap {
				t.Gaps++
			}
		}
	}
	s.SystemID, _ = mostCommon(sys)
	for _, t := range tl {
		s.Timelines = append(s.Timelines, *t)
	}
	sort.Slice(s.Timelines, func(i, j int) bool { return s.Timelines[i].TLI < s.Timelines[j].TLI })
	return s
}
