package verify

import (
	"errors"
	"sort"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// ArchiveSummary is what verify reports of the files themselves: segments per
// timeline, stored and decompressed bytes, and the problems no reader meets
// (a segment stored twice with different content, files an index does not
// match), from archive.Source.Facts.
type ArchiveSummary struct {
	Layouts     []string          `json:"layouts"`
	Files       int               `json:"files"`
	StoredBytes int64             `json:"stored_bytes"`
	Bytes       int64             `json:"bytes"` // decompressed, where known
	Timelines   []ArchiveTimeline `json:"timelines"`
	Problems    map[Class]int     `json:"problems"` // files per class (archive.ProblemKind.Class)
}

// ArchiveTimeline counts one timeline's files.
type ArchiveTimeline struct {
	TLI      xlog.TimeLineID `json:"timeline"`
	Segments int             `json:"segments"`
	Partial  int             `json:"partial"`
	First    string          `json:"first_segment"`
	Last     string          `json:"last_segment"`
}

// SummarizeArchive lists the archive's files (reading only what the formats
// declare, hashing only segments stored more than once) and returns the
// summary and, as verify problems, the duplicates with different content and
// the index mismatches.
func SummarizeArchive(src *archive.Source) (*ArchiveSummary, []Problem, error) {
	facts, err := src.FactsWith(archive.FactsOptions{Quick: true})
	if err != nil {
		return nil, nil, err
	}
	sum := &ArchiveSummary{Files: len(facts), Problems: map[Class]int{}}
	layouts := map[string]bool{}
	tls := map[xlog.TimeLineID]*ArchiveTimeline{}
	var problems []Problem
	for _, f := range facts {
		layouts[string(f.Layout)] = true
		sum.StoredBytes += f.StoredSize
		if f.Size > 0 {
			sum.Bytes += f.Size
		} else if f.Kind == "segment" && f.SegmentSize > 0 && len(f.Problems) == 0 {
			// A complete segment holds its segment size of WAL whatever
			// its compression declares (zstd and lz4 frames without a
			// content size, bzip2, xz, lzma and brotli declare none):
			// opening it refuses any other size.
			sum.Bytes += int64(f.SegmentSize)
		}
		if f.Kind == "segment" || f.Kind == "partial" {
			t := tls[f.Timeline]
			if t == nil {
				t = &ArchiveTimeline{TLI: f.Timeline}
				tls[f.Timeline] = t
			}
			if f.Kind == "partial" {
				t.Partial++
			} else {
				t.Segments++
				if t.First == "" || f.Name < t.First {
					t.First = f.Name
				}
				if f.Name > t.Last {
					t.Last = f.Name
				}
			}
		}
		for _, p := range f.Problems {
			c := Class(p.Kind.Class())
			sum.Problems[c]++
			switch p.Kind {
			case archive.ProblemDuplicate, archive.ProblemMissing, archive.ProblemIndex:
				path := f.Path
				if f.Member != "" {
					path += ":" + f.Member
				}
				problems = append(problems, Problem{Class: c, File: path, LSNStr: "0/0", Message: p.Message})
			}
		}
	}
	for l := range layouts {
		sum.Layouts = append(sum.Layouts, l)
	}
	sort.Strings(sum.Layouts)
	for _, t := range tls {
		sum.Timelines = append(sum.Timelines, *t)
	}
	sort.Slice(sum.Timelines, func(i, j int) bool { return sum.Timelines[i].TLI < sum.Timelines[j].TLI })
	return sum, problems, nil
}

// UnreadableContent reports whether err is a segment whose content cannot
// be read as WAL: encrypted, or neither WAL nor compressed WAL.
func UnreadableContent(err error) bool {
	return errors.Is(err, archive.ErrEncrypted) || errors.Is(err, archive.ErrUnrecognized)
}

// UnreadableReport is verify's report when no segment of an archive could be
// read at all (an encrypted repository: err, from Verify, is
// UnreadableContent): each such file as a problem of ClassEncrypted, where a
// reading would have found it. It is nil when src is no archive, err is
// another error, or no file is encrypted or unrecognised.
func UnreadableReport(src xlog.Source, err error) *VerifyReport {
	as, ok := src.(*archive.Source)
	if !ok || !UnreadableContent(err) {
		return nil
	}
	facts, ferr := as.FactsWith(archive.FactsOptions{Quick: true})
	if ferr != nil {
		return nil
	}
	rep := &VerifyReport{ByClass: map[Class]int{}}
	for _, f := range facts {
		for _, p := range f.Problems {
			if p.Kind != archive.ProblemEncrypted && p.Kind != archive.ProblemUnrecognized {
				continue
			}
			path := f.Path
			if f.Member != "" {
				path += ":" + f.Member
			}
			rep.Problems = append(rep.Problems, Problem{Class: ClassEncrypted, File: path, LSNStr: "0/0", Message: p.Message})
			rep.ByClass[ClassEncrypted]++
		}
	}
	if len(rep.Problems) == 0 {
		return nil
	}
	return rep
}
