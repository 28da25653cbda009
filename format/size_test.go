package format

import "testing"

func TestFormatBytes(t *testing.T) {
	for v, want := range map[float64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 kB", 1536: "1.5 kB", 16 << 20: "16 MB", 3 << 30: "3 GB"} {
		if got := FormatBytes(v); got != want {
			t.Errorf("FormatBytes(%v) = %q, want %q", v, got, want)
		}
	}
	if got := FormatCount(1234567); got != "1,234,567" {
		t.Errorf("FormatCount = %q", got)
	}
}
