package xlog

import "fmt"

// Version is a PostgreSQL major version (10 to 18), the only thing that decides
// how the WAL of one file is laid out and named. It is chosen from the page
// magic, never from a flag: each major release bumps XLOG_PAGE_MAGIC
// (src/include/access/xlog_internal.h).
type Version uint8

// Supported major versions.
const (
	V10 Version = 10
	V11 Version = 11
	V12 Version = 12
	V13 Version = 13
	V14 Version = 14
	V15 Version = 15
	V16 Version = 16
	V17 Version = 17
	V18 Version = 18
)

// pageMagic maps XLOG_PAGE_MAGIC of each released major version to it.
// Equality only: development magics between releases are unknown versions.
var pageMagic = map[uint16]Version{
	0xD097: V10,
	0xD098: V11,
	0xD101: V12,
	0xD106: V13,
	0xD10D: V14,
	0xD110: V15,
	0xD113: V16,
	0xD116: V17,
	0xD118: V18,
}

// VersionFromMagic returns the major version whose XLOG_PAGE_MAGIC is magic.
func VersionFromMagic(magic uint16) (Version, bool) {
	v, ok := pageMagic[magic]
	return v, ok
}

// Magic returns the XLOG_PAGE_MAGIC of v, or 0 for an unknown version.
func (v Version) Magic() uint16 {
	for m, x := range pageMagic {
		if x == v {
			return m
		}
	}
	return 0
}

func (v Version) String() string { return fmt.Sprintf("PostgreSQL %d", uint8(v)) }
