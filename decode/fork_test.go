package decode_test

import (
	"testing"

	"github.com/walscope/walscope/decode"
)

// TestForkNumber: names as pg_waldump prints them (forkNames in relpath.c),
// parsed back as forkname_to_number does; numbers that name no fork.
func TestForkNumber(t *testing.T) {
	for f, name := range map[decode.ForkNumber]string{
		decode.ForkMain: "main", decode.ForkFSM: "fsm", decode.ForkVisibilityMap: "vm", decode.ForkInit: "init",
	} {
		if !f.Valid() || f.Name() != name || f.String() != name {
			t.Errorf("fork %d: Valid %v, Name %q, String %q; want %q", f, f.Valid(), f.Name(), f.String(), name)
		}
		if g, ok := decode.ParseForkNumber(name); !ok || g != f {
			t.Errorf("ParseForkNumber(%q) = %d, %v", name, g, ok)
		}
	}
	if f := decode.ForkNumber(7); f.Valid() || f.Name() != "" || f.String() != "7" {
		t.Errorf("fork 7: Valid %v, Name %q, String %q", f.Valid(), f.Name(), f.String())
	}
	if _, ok := decode.ParseForkNumber("visibilitymap"); ok {
		t.Error("ParseForkNumber accepts visibilitymap")
	}
	b := decode.BlockRef{ForkFlags: decode.BlockHasImage | uint8(decode.ForkVisibilityMap)}
	if b.Fork() != decode.ForkVisibilityMap {
		t.Errorf("Fork() = %v", b.Fork())
	}
}
