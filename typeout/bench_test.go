package typeout_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/walscope/walscope/typeout"
)

// BenchmarkAppend prints one stored datum of each type per iteration into
// a reused buffer.
func BenchmarkAppend(b *testing.B) {
	i4 := binary.LittleEndian.AppendUint32(nil, uint32(1234567))
	f8 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1+0.2))
	ts := binary.LittleEndian.AppendUint64(nil, uint64(762525296789000))
	iv := append(binary.LittleEndian.AppendUint64(nil, uint64(3723000004)), 3, 0, 0, 0, 14, 0, 0, 0)
	cases := []struct {
		name string
		oid  uint32
		d    []byte
	}{
		{"int4", 23, i4},
		{"float8", 701, f8},
		{"numeric", 1700, plainSeed(fuzzSeeds[6].hex)},
		{"timestamptz", 1184, ts},
		{"interval", 1186, iv},
		{"jsonb", 3802, plainSeed(fuzzSeeds[0].hex)},
		{"int4[]", 1007, plainSeed(fuzzSeeds[1].hex)},
		{"text[]", 1009, plainSeed(fuzzSeeds[2].hex)},
		{"numrange", 3906, plainSeed(fuzzSeeds[3].hex)},
		{"inet", 869, plainSeed(fuzzSeeds[4].hex)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f := &typeout.Formatter{Settings: typeout.DefaultSettings(), Types: newFuzzTypes()}
			f.Settings.TimeZone = "America/St_Johns"
			var buf []byte
			var err error
			b.ReportAllocs()
			b.SetBytes(int64(len(c.d)))
			for b.Loop() {
				if buf, err = f.Append(buf[:0], c.oid, c.d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
