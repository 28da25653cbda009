package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	ProblemTruncated    ProblemKind = "truncated-segment"   // a segment (not .partial) shorter than the segment size, or empty
	// The segment's first page header is not one PostgreSQL 10 to 18 wrote,
	// named as the readers' classes (analyze.ClassUnknownVersion,
	// ClassPageHeader): ls gives the file the class every command gives it.
	ProblemUnknownVersion ProblemKind = "unknown-version"     // a page magic no release 10 to 18 wrote (not zero: a zero-filled segment may be pg_wal's next one)
	ProblemPageHeader     ProblemKind = "invalid-page-header" // no long header, an invalid segment size or XLOG_BLCKSZ in it, or a page address the name does not give
	// A backup tool's archive (wal-g, pgBackRest, Barman) holding a segment
	// whose page address is an older segment's: such archives hold no
	// recycled segments (analyze.ClassRecycled; in a plain directory, maybe
	// a live pg_wal, it is a recycled segment, no problem).
	ProblemRecycled ProblemKind = "stale-recycled-segment"
	// A timeline history file that is no valid history (analyze.ClassHistory).
	ProblemHistory ProblemKind = "invalid-history"
)

// Class is the name every command gives the kind of bad input (the
// readers' classes, analyze.Class): ls and verify's archive summary print
// it, so that one file gets one name whichever command meets it. Kinds are
// finer (a gap and a file Barman's index lists but that is absent are both
// missing-segment).
func (k ProblemKind) Class() string {
	switch k {
	case ProblemDuplicate:
		return "duplicate-segment"
	case ProblemGap, ProblemMissing:
		return "missing-segment"
	case ProblemEncrypted, ProblemUnrecognized:
		return "encrypted-or-unrecognised"
	case ProblemChecksum:
		return "archive-checksum-mismatch"
	case ProblemTooLarge, ProblemCorrupt, ProblemIndex:
		return "corrupt-archive-file"
	case ProblemUnreadable:
		return "unreadable-file"
	}
	// other-system, truncated-segment, unknown-version,
	// invalid-page-header, stale-recycled-segment: named as the class.
	return string(k)
}

// Problem is one problem with a file.
type Problem struct {
	Kind    ProblemKind `json:"kind"`
	Message string      `json:"message"`
}

// MarshalJSON gives the problem's class beside its kind.
func (p Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Class   string      `json:"class"`
		Kind    ProblemKind `json:"kind"`
		Message string      `json:"message"`
	}{p.Kind.Class(), p.Kind, p.Message})
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
	// TarCompression is the compression of the whole tar file holding a
	// member.
	TarCompression Compression `json:"tar_compression,omitempty"`
	// IndexCompression is what an index says (Barman's xlog.db).
	IndexCompression string `json:"index_compression,omitempty"`
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
func (s *Source) Facts() ([]FileFact, error) { return s.FactsWith(FactsOptions{}) }

// FactsOptions tune FactsWith.
type FactsOptions struct {
	// Quick reads only the first bytes of each file. The decompressed size
	// is then the one the format declares (a plain file's size, gzip's ISIZE,
	// the content size in zstd and lz4 frame headers), -1 where it declares
	// none; pgBackRest's SHA-1 is not checked; and content hashes are
	// computed only for segments stored more than once, to compare them.
	Quick bool
}

// FactsWith is Facts with options.
func (s *Source) FactsWith(o FactsOptions) ([]FileFact, error) {
	facts := make([]FileFact, len(s.entries))
	all := make([]int, len(s.entries))
	for i := range all {
		all[i] = i
	}
	if !o.Quick {
		s.each(all, func(i int) { facts[i] = s.fact(s.entries[i]) })
	} else {
		s.each(all, func(i int) { facts[i] = s.quickFact(s.entries[i]) })
		byName := map[string][]int{}
		for i, f := range facts {
			byName[f.Name] = append(byName[f.Name], i)
		}
		var dups []int
		for _, idx := range byName {
			if len(idx) > 1 {
				dups = append(dups, idx...)
			}
		}
		s.each(dups, func(i int) { facts[i] = s.fact(s.entries[i]) })
	}
	var ref uint64
	if s.repo != nil {
		ref = s.repo.SystemID
	}
	crossCheck(facts, ref)
	s.checkHistories(facts)
	return facts, nil
}

// checkHistories gives each timeline history file that is no valid history
// (xlog.CheckHistories: syntax, timelines, switch points out of order, a
// parent's file contradicted) the problem every reading command stops at
// (analyze.ClassHistory): ls called such a file fine. A file that could not
// be read already has its problem.
func (s *Source) checkHistories(facts []FileFact) {
	for _, hp := range xlog.CheckHistories(s) {
		for i, e := range s.entries {
			if e.key == hp.File && len(facts[i].Problems) == 0 {
				facts[i].Problems = append(facts[i].Problems, Problem{Kind: ProblemHistory, Message: hp.Err.Error()})
			}
		}
	}
}

// each calls fn for the entries idx in parallel, the members of one
// compressed tar in order on one goroutine.
func (s *Source) each(idx []int, fn func(int)) {
	var jobs [][]int
	byTar := map[*tarArchive]int{}
	for _, i := range idx {
		e := s.entries[i]
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
		m := jobs[j]
		sort.Slice(m, func(a, b int) bool { return s.entries[m[a]].member.ordinal < s.entries[m[b]].member.ordinal })
	}
	work := make(chan []int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range work {
				for _, i := range job {
					fn(i)
				}
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

// baseFact is what an entry's name, place and stored size say.
func (s *Source) baseFact(e *entry) FileFact {
	f := FileFact{Name: e.name.Canonical, Timeline: e.name.TLI, Layout: e.layout, Path: e.file,
		StoredSize: e.storedSize(s.tree), Size: -1, Kind: "segment", IndexCompression: e.hint}
	switch {
	case e.name.History:
		f.Kind = "history"
	case e.name.Partial:
		f.Kind = "partial"
	}
	if e.member != nil {
		f.Member = e.member.name
		f.TarCompression = e.tar.comp
	}
	f.Problems = append(f.Problems, e.problems...)
	return f
}

// headerFacts records what a segment's long page header says, and checks
// its page address (xlp_pageaddr) against the start the file name gives
// (XLogSegNoOffsetToRecPtr with the header's segment size), as
// XLogReaderValidatePageHeader does ("unexpected pageaddr").
func (f *FileFact) headerFacts(head []byte, name xlog.SegmentName) {
	if f.Kind == "history" {
		return
	}
	ph, ok := xlog.ParsePageHeader(head)
	if !ok || ph.Magic == 0 && ph.Info == 0 {
		return // too short (truncated), or a zero-filled page (pg_wal's next segment)
	}
	v, known := xlog.VersionFromMagic(ph.Magic)
	switch {
	case !known:
		f.Problems = append(f.Problems, Problem{Kind: ProblemUnknownVersion, Message: fmt.Sprintf(
			"unknown page magic %04X: not WAL of PostgreSQL 10 to 18", ph.Magic)})
		return
	case !ph.Long():
		f.Problems = append(f.Problems, Problem{Kind: ProblemPageHeader, Message: fmt.Sprintf(
			"the first page has no long header (info bits %04X)", uint16(ph.Info))})
		return
	}
	f.SystemID, f.SegmentSize, f.Version = ph.SystemID, ph.SegmentSize, int(v)
	switch {
	case !xlog.ValidSegmentSize(ph.SegmentSize):
		f.Problems = append(f.Problems, Problem{Kind: ProblemPageHeader, Message: fmt.Sprintf(
			"invalid segment size in the long header: %d bytes (a power of two from 1 MB to 1 GB)", ph.SegmentSize)})
	case !xlog.ValidPageSize(ph.PageSize) || ph.SegmentSize%ph.PageSize != 0:
		f.Problems = append(f.Problems, Problem{Kind: ProblemPageHeader, Message: fmt.Sprintf(
			"invalid XLOG_BLCKSZ in the long header: %d bytes", ph.PageSize)})
	default:
		f.checkPageAddr(ph.PageAddr, name)
	}
}

// checkPageAddr reports a segment stored under another segment's name. One
// whose pages are an older segment's is a recycled segment (PostgreSQL
// renames old segments to future names in pg_wal: RemoveXlogFile), a problem
// only in a backup tool's archive; newer pages under an older name are never
// PostgreSQL's doing.
func (f *FileFact) checkPageAddr(found xlog.LSN, name xlog.SegmentName) {
	want := xlog.LSN(name.SegNo(f.SegmentSize) * uint64(f.SegmentSize))
	if found == want {
		return
	}
	msg := fmt.Sprintf("file %s: unexpected pageaddr %s in the long header, where the name says the segment starts at %s (%d-byte segments): another segment's pages",
		f.Name, found, want, f.SegmentSize)
	switch {
	case found > want:
		f.Problems = append(f.Problems, Problem{Kind: ProblemPageHeader, Message: msg})
	case f.Layout == LayoutWALG || f.Layout == LayoutPgBackRest || f.Layout == LayoutBarman:
		f.Problems = append(f.Problems, Problem{Kind: ProblemRecycled, Message: msg +
			fmt.Sprintf(" (a %s archive holds no recycled segments)", f.Layout)})
	}
}

// quickFact reads the first bytes of an entry only.
func (s *Source) quickFact(e *entry) FileFact {
	f := s.baseFact(e)
	if e.missing {
		return f
	}
	kind := kindSegment
	if e.name.History {
		kind = kindHistory
	}
	var err error
	if head, ok := e.knownHead(); ok && kind == kindSegment {
		// Read by a reader already (verify takes the facts after its
		// reading): plain WAL, and its first bytes are known. Opening it
		// again was three system calls a file, most of verify's time over
		// switched segments beyond stats' (issue 16).
		f.Compression = None
		err = s.headFacts(&f, e, kind, None, head)
	} else {
		err = s.withStreamBuffer(e, 4<<10, func(st *stream) error {
			f.Compression = st.comp
			head := make([]byte, xlog.LongPageHeaderSize)
			n, err := readHead(st.r, head)
			head = head[:n]
			if err != nil && err != io.EOF && !(e.name.Partial && errors.Is(err, io.ErrUnexpectedEOF)) {
				return st.readErr(e.key, kind, err)
			}
			if err := checkHead(st, e.key, kind, head); err != nil {
				return err
			}
			return s.headFacts(&f, e, kind, st.comp, head)
		})
	}
	if err != nil {
		f.Problems = append(f.Problems, problemOf(err))
		if errors.Is(err, ErrEncrypted) || errors.Is(err, ErrUnrecognized) {
			f.Compression = ""
		}
	}
	return f
}

// headFacts fills f with what an entry's first bytes (head, the content
// compressed with c) and its format declare, and refuses a segment whose
// content is larger than its header allows.
func (s *Source) headFacts(f *FileFact, e *entry, kind contentKind, c Compression, head []byte) error {
	f.headerFacts(head, e.name.Segment)
	f.Size = s.declaredSize(e, c)
	limit := int64(listLimit(head))
	if kind != kindSegment || f.Size <= limit {
		return nil
	}
	if c == None {
		return &Error{Path: e.key, Err: ErrTooLarge, Msg: fmt.Sprintf(
			"refused: it holds %d bytes, more than %s", f.Size, limitReason(head, int(limit)))}
	}
	// What the format declares is no size: a gzip file cut short ends in
	// compressed bytes where ISIZE should be, so the number is noise, not
	// a size to list or add up (a full reading finds the stream cut:
	// corrupt-archive-file too).
	declared := f.Size
	f.Size = -1
	what := "its " + string(c) + " frame header declares"
	if c == Gzip {
		what = "the last 4 bytes of its gzip stream (ISIZE) give"
	}
	return &Error{Path: e.key, Err: ErrTooLarge, Msg: fmt.Sprintf(
		"refused: %s %d bytes, more than %s: cut short or damaged, or not one segment", what, declared, limitReason(head, int(limit)))}
}

// declaredSize returns the decompressed size an entry's format declares, or
// -1: the stored size of plain content, gzip's ISIZE (modulo 2^32, of the
// last member), the content size of the first zstd frame or of an lz4 frame.
func (s *Source) declaredSize(e *entry, c Compression) int64 {
	stored := e.storedSize(s.tree)
	if e.member != nil {
		stored = e.member.size
	}
	if c == None {
		return stored
	}
	if e.tar != nil && e.member.offset < 0 {
		return -1 // inside a compressed tar: no random access
	}
	f, err := s.openHead(e.file)
	if err != nil {
		return -1
	}
	defer f.Close()
	var base int64
	if e.member != nil {
		base = e.member.offset
	}
	switch c {
	case Gzip:
		var b [4]byte
		if stored < 18 || e.name.Partial {
			// A .gz.partial is being written (pg_receivewal --compress):
			// its last 4 bytes are not yet a trailer.
			return -1
		}
		if _, err := f.ReadAt(b[:], base+stored-4); err != nil {
			return -1
		}
		return int64(binary.LittleEndian.Uint32(b[:]))
	case Zstd:
		var b [18]byte
		n, _ := f.ReadAt(b[:], base)
		if n < 6 || !bytes.HasPrefix(b[:], magicZstd) {
			return -1
		}
		fhd := b[4]
		single := fhd>>5&1 == 1
		pos := 5
		if !single {
			pos++
		}
		pos += []int{0, 1, 2, 4}[fhd&3]
		size := []int{0, 2, 4, 8}[fhd>>6]
		if size == 0 && single {
			size = 1
		}
		if size == 0 || pos+size > n {
			return -1
		}
		var v uint64
		for i := 0; i < size; i++ {
			v |= uint64(b[pos+i]) << (8 * i)
		}
		if size == 2 {
			v += 256
		}
		return int64(v)
	case LZ4:
		var b [14]byte
		n, _ := f.ReadAt(b[:], base)
		if n < 14 || !bytes.HasPrefix(b[:], magicLZ4) || b[4]&0x08 == 0 {
			return -1
		}
		return int64(binary.LittleEndian.Uint64(b[6:14]))
	}
	return -1
}

func (s *Source) fact(e *entry) FileFact {
	f := s.baseFact(e)
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
		f.headerFacts(c.head, e.name.Segment)
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

// crossCheck adds the problems that compare files: other systems (than
// ref, the repository's own system identifier, or else the most common one),
// duplicates with different content, gaps.
func crossCheck(facts []FileFact, ref uint64) {
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
	why := fmt.Sprintf("where %d file(s) have %d", n, main)
	if ref != 0 {
		main, why = ref, fmt.Sprintf("where the repository's info file says %d", ref)
	}
	for i := range facts {
		f := &facts[i]
		if f.SystemID != 0 && f.SystemID != main {
			f.Problems = append(f.Problems, Problem{Kind: ProblemOtherSystem, Message: fmt.Sprintf(
				"from another system: system identifier %d, %s", f.SystemID, why)})
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
	// Truncated or empty segments: every finished segment (a .partial is
	// being written) holds its whole segment size; verify calls the same
	// files truncated-segment. An empty one is, whatever the size.
	for i := range facts {
		f := &facts[i]
		if f.Kind != "segment" || f.Size < 0 || f.Size >= int64(segSize) && f.Size != 0 {
			continue
		}
		msg := fmt.Sprintf("truncated: %d bytes, less than the segment size of %d bytes", f.Size, segSize)
		if f.Size == 0 {
			msg = fmt.Sprintf("empty: 0 bytes, where a segment holds %d bytes", segSize)
		}
		if segSize == 0 {
			msg = "empty: 0 bytes"
		}
		f.Problems = append(f.Problems, Problem{Kind: ProblemTruncated, Message: msg})
	}
	if segSize == 0 {
		return
	}
	byTLI := map[xlog.TimeLineID][]int{}
	for i := range facts {
		f := &facts[i]
		if f.Kind == "history" || f.has(ProblemMissing) {
			continue // a file missing from the disk is part of a gap
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

func (f *FileFact) has(k ProblemKind) bool {
	for _, p := range f.Problems {
		if p.Kind == k {
			return true
		}
	}
	return false
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
	TLI      xlog.TimeLineID `json:"timeline"`
	Segments int             `json:"segments"` // files, partial ones included
	First    string          `json:"first"`
	Last     string          `json:"last"`
	Gaps     int             `json:"gaps"`
	History  bool            `json:"history_file"`
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
	Problems    map[string]int    `json:"problems"` // files per problem class (ProblemKind.Class)
}

// Summarize totals facts: per timeline, per problem class.
func Summarize(facts []FileFact) Summary {
	s := Summary{Problems: map[string]int{}}
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
			s.Problems[p.Kind.Class()]++
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
