package catalog_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// FuzzDecodeRow decodes arbitrary tuples as each catalog of each version:
// never a panic, and every error wraps tuple's or this package's sentinels.
func FuzzDecodeRow(f *testing.F) {
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint16(hdr[18:], 40)
	hdr[22] = 24
	f.Add(append(hdr, make([]byte, 400)...), uint8(5), uint8(2))
	f.Add(append(hdr, 0x01, 18, 0, 0), uint8(8), uint8(6))
	f.Add(append(hdr, make([]byte, 28)...), uint8(4), uint8(8)) // pg_range, 14
	f.Fuzz(func(t *testing.T, tup []byte, ver, which uint8) {
		d := catalog.NewDecoder(xlog.Version(10 + ver%9))
		var err error
		switch which % 9 {
		case 0:
			_, err = d.Class(tup)
		case 1:
			_, err = d.Namespace(tup)
		case 2:
			_, err = d.Attribute(tup)
		case 3:
			_, err = d.Type(tup)
		case 4:
			_, err = d.Enum(tup)
		case 5:
			_, err = d.Index(tup)
		case 6:
			_, err = d.Database(tup)
		case 7:
			_, err = d.Tablespace(tup)
		case 8:
			_, err = d.Range(tup)
		}
		if err != nil && !errors.Is(err, catalog.ErrRow) && !errors.Is(err, tuple.ErrCorrupt) &&
			!errors.Is(err, tuple.ErrUnsupported) && !errors.Is(err, tuple.ErrNoToast) {
			t.Fatalf("%v wraps no sentinel", err)
		}
	})
}

// FuzzRelMap parses arbitrary map files and RELMAP UPDATE payloads.
func FuzzRelMap(f *testing.F) {
	f.Add(relMapFile(62, []catalog.Mapping{{1259, 1259}}))
	f.Add(relMapFile(64, []catalog.Mapping{{1262, 1262}, {1213, 1213}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := catalog.ParseRelMap(b)
		if err != nil {
			if !errors.Is(err, catalog.ErrRelMap) {
				t.Fatal(err)
			}
		} else if len(m.Mappings) > m.MaxMappings {
			t.Fatalf("%d mappings of at most %d", len(m.Mappings), m.MaxMappings)
		}
		if _, err := catalog.ParseRelMapUpdate(b); err != nil && !errors.Is(err, catalog.ErrRelMap) {
			t.Fatal(err)
		}
	})
}
