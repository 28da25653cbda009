package prefault

import (
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// A non-PIE Go executable (text at 0x400000), as walscope is built, then a
// PIE one, each with the lines around them /proc/self/maps gives.
const nonPIE = `00400000-009f6000 r-xp 00000000 fe:00 1234                               /usr/local/bin/walscope
009f6000-0102a000 r--p 005f6000 fe:00 1234                               /usr/local/bin/walscope
0102a000-010cf000 rw-p 00c2a000 fe:00 1234                               /usr/local/bin/walscope
010cf000-03110000 rw-p 00000000 00:00 0 
1afd6dc00000-1afd6e000000 rw-p 00000000 00:00 0 
7ffd8f9a2000-7ffd8f9c3000 rw-p 00000000 00:00 0                          [stack]
7ffd8f9f4000-7ffd8f9f8000 r--p 00000000 00:00 0                          [vvar]
7ffd8f9f8000-7ffd8f9fa000 r-xp 00000000 00:00 0                          [vdso]
`

const pie = `55e0c1000000-55e0c1200000 r--p 00000000 fe:00 99                         /opt/my tools/walscope
55e0c1200000-55e0c1800000 r-xp 00200000 fe:00 99                         /opt/my tools/walscope
55e0c1800000-55e0c1900000 r--p 00800000 fe:00 99                         /opt/my tools/walscope
55e0c1900000-55e0c1950000 rw-p 00900000 fe:00 99                         /opt/my tools/walscope
7f0000000000-7f0000100000 r-xp 00000000 fe:00 7                          /usr/lib/x86_64-linux-gnu/libc.so.6
`

func TestCode(t *testing.T) {
	for _, c := range []struct {
		name   string
		text   string
		inside uintptr
		want   []Mapping
	}{
		{"non-PIE, inside read-only data", nonPIE, 0xa00000, []Mapping{{0x400000, 0x9f6000}}},
		{"non-PIE, inside writable data", nonPIE, 0x102b000, []Mapping{{0x400000, 0x9f6000}}},
		{"PIE, path with a space; not the library", pie, 0x55e0c1850000, []Mapping{{0x55e0c1200000, 0x55e0c1800000}}},
		{"inside anonymous memory", nonPIE, 0x1afd6dc00010, nil},
		{"inside nothing", nonPIE, 0x300000, nil},
		{"cut short: the second line half there", nonPIE[:strings.Index(nonPIE, "\n")+40], 0x400100, []Mapping{{0x400000, 0x9f6000}}},
		{"cut short in the line that would hold it", nonPIE[:strings.Index(nonPIE, "\n")+40], 0xa00000, nil},
		{"only the code line, inside it", nonPIE[:strings.Index(nonPIE, "\n")+1], 0x400100, []Mapping{{0x400000, 0x9f6000}}},
		{"garbage", "not maps\n\x00\x01-\n-\nzz-yy r--p\n", 0xa00000, nil},
	} {
		got := Code([]byte(c.text), c.inside)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %x, want %x", c.name, got, c.want)
		}
	}
}

// TestOwnImage: in this test binary, what populate maps holds the code of a
// function, not the bytes of a string constant (read-only data) nor heap
// memory.
func TestOwnImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/maps is Linux's")
	}
	text, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	const s = "a string constant of this test"
	data := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	ms := Code(text, data)
	code := reflect.ValueOf(TestOwnImage).Pointer()
	heap := uintptr(unsafe.Pointer(new([64]byte)))
	in := func(a uintptr) bool {
		for _, m := range ms {
			if m.Start <= a && a < m.End {
				return true
			}
		}
		return false
	}
	if !in(code) || in(data) || in(heap) {
		t.Errorf("mappings %x: code %x in them %v, constant %x %v, heap %x %v (want true, false, false)", ms, code, in(code), data, in(data), heap, in(heap))
	}
}

func FuzzCode(f *testing.F) {
	f.Add([]byte(nonPIE), uint64(0xa00000))
	f.Add([]byte(pie), uint64(0x55e0c1850000))
	f.Fuzz(func(t *testing.T, text []byte, inside uint64) {
		for _, m := range Code(text, uintptr(inside)) {
			if m.End <= m.Start {
				t.Fatalf("empty or reversed mapping %x", m)
			}
		}
	})
}
