package xlog

import "testing"

func TestLSNFormat(t *testing.T) {
	for _, c := range []struct {
		lsn           LSN
		plain, padded string
	}{
		{0, "0/0", "0/00000000"},
		{0x1000028, "0/1000028", "0/01000028"},
		{0xAB_0000CDEF, "AB/CDEF", "AB/0000CDEF"},
		{0xFFFFFFFF_FFFFFFFF, "FFFFFFFF/FFFFFFFF", "FFFFFFFF/FFFFFFFF"},
	} {
		if got := c.lsn.String(); got != c.plain {
			t.Errorf("%#x: String %q, want %q", uint64(c.lsn), got, c.plain)
		}
		if got := string(c.lsn.AppendPadded(nil)); got != c.padded {
			t.Errorf("%#x: AppendPadded %q, want %q", uint64(c.lsn), got, c.padded)
		}
		if back, err := ParseLSN(c.plain); err != nil || back != c.lsn {
			t.Errorf("ParseLSN(%q) = %v, %v", c.plain, back, err)
		}
	}
	for _, bad := range []string{"", "0", "/1", "1/", "G/0", "123456789/0", "0/0/0"} {
		if _, err := ParseLSN(bad); err == nil {
			t.Errorf("ParseLSN(%q) accepted", bad)
		}
	}
}
