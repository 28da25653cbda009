package archive

import (
	"strings"

	"github.com/walscope/walscope/xlog"
)

// Name is what a stored file's name says about it.
type Name struct {
	Canonical string           // 24 hex digits (+ ".partial"), or TTTTTTTT.history
	Segment   xlog.SegmentName // for segment files
	TLI       xlog.TimeLineID
	Partial   bool
	History   bool
	SHA1      string // pgBackRest's checksum of the content, lower-case hex
	Ext       string // the compression extension, without the dot ("" for none; "." for wal-g's trailing dot)
}

// compressionExts are the extensions that archivers append. Detection never
// relies on them: they are only stripped from names.
var compressionExts = []string{"gz", "zst", "zstd", "lz4", "bz2", "xz", "lzma", "br", "brotli", "sz", "snappy"}

// ParseName parses the file names the layouts use for WAL segment and history
// files:
//
//	000000010000000000000001                 plain (pg_wal, pg_receivewal, Barman)
//	000000010000000000000001.partial         a partial segment
//	000000010000000000000001.gz              pg_receivewal, wal-g (.lz4 .br .zst .lzma), any archive_command
//	000000010000000000000001.gz.partial      pg_receivewal's compressed partial segment
//	000000010000000000000001.                wal-g with no compression
//	000000010000000000000001-<sha1>.gz       pgBackRest (also .partial-<sha1>)
//	00000002.history[.ext]                   timeline history files
func ParseName(base string) (Name, bool) {
	var n Name
	s := base
	for changed := true; changed; {
		changed = false
		if rest, ok := strings.CutSuffix(s, ".partial"); ok && !n.Partial {
			s, n.Partial, changed = rest, true, true
		}
		if n.Ext == "" {
			for _, e := range compressionExts {
				if rest, ok := strings.CutSuffix(s, "."+e); ok {
					s, n.Ext, changed = rest, e, true
					break
				}
			}
		}
		if rest, ok := strings.CutSuffix(s, "."); ok && n.Ext == "" {
			s, n.Ext, changed = rest, ".", true
		}
	}
	if len(s) > 41 && s[len(s)-41] == '-' && isLowerHex(s[len(s)-40:]) {
		n.SHA1 = s[len(s)-40:]
		s = s[:len(s)-41]
		if rest, ok := strings.CutSuffix(s, ".partial"); ok {
			s, n.Partial = rest, true
		}
	}
	if xlog.IsSegmentName(s) {
		seg, _, err := xlog.ParseSegmentName(s)
		if err != nil {
			return n, false
		}
		n.Segment, n.TLI = seg, seg.TLI
		n.Canonical = s
		if n.Partial {
			n.Canonical += ".partial"
		}
		return n, true
	}
	if n.Partial {
		return n, false
	}
	if tli, ok := xlog.ParseHistoryName(s); ok {
		n.History, n.TLI, n.Canonical = true, tli, s
		return n, true
	}
	return n, false
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isUpperHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
