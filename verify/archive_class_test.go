package verify

import (
	"testing"

	"github.com/walscope/walscope/xlog/archive"
)

// TestArchiveProblemClasses: every problem kind ls reports is named, in ls
// and in verify's archive summary, by one of the classes the readers give
// (the README's table), so that one bad file has one name in every command.
func TestArchiveProblemClasses(t *testing.T) {
	classes := map[Class]bool{}
	for _, c := range []Class{ClassZeroedTorn, ClassRecycled, ClassCRC, ClassRecordHeader, ClassPageHeader,
		ClassMissingSegment, ClassTruncated, ClassOtherSystem, ClassUnknownVersion, ClassEncrypted,
		ClassArchiveChecksum, ClassArchiveCorrupt, ClassDuplicate, ClassHistory, ClassUnreadable} {
		classes[c] = true
	}
	for kind, want := range map[archive.ProblemKind]Class{
		archive.ProblemDuplicate:      ClassDuplicate,
		archive.ProblemOtherSystem:    ClassOtherSystem,
		archive.ProblemGap:            ClassMissingSegment,
		archive.ProblemEncrypted:      ClassEncrypted,
		archive.ProblemUnrecognized:   ClassEncrypted,
		archive.ProblemChecksum:       ClassArchiveChecksum,
		archive.ProblemTooLarge:       ClassArchiveCorrupt, // as Classify(archive.ErrTooLarge)
		archive.ProblemCorrupt:        ClassArchiveCorrupt,
		archive.ProblemUnreadable:     ClassUnreadable,
		archive.ProblemMissing:        ClassMissingSegment,
		archive.ProblemIndex:          ClassArchiveCorrupt,
		archive.ProblemTruncated:      ClassTruncated,
		archive.ProblemUnknownVersion: ClassUnknownVersion,
		archive.ProblemPageHeader:     ClassPageHeader,
		archive.ProblemRecycled:       ClassRecycled,
		archive.ProblemHistory:        ClassHistory,
	} {
		got := Class(kind.Class())
		if got != want || !classes[got] {
			t.Errorf("kind %s: class %q, want %q", kind, got, want)
		}
	}
	// The errors behind the kinds a reading meets get the same class.
	for err, want := range map[error]Class{
		archive.ErrTooLarge: ClassArchiveCorrupt, archive.ErrCorrupt: ClassArchiveCorrupt,
		archive.ErrChecksum: ClassArchiveChecksum, archive.ErrEncrypted: ClassEncrypted, archive.ErrUnrecognized: ClassEncrypted,
	} {
		if got := Classify(err); got != want {
			t.Errorf("Classify(%v) = %s, want %s", err, got, want)
		}
	}
}
