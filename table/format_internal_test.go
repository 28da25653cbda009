package table

import "testing"

// TestIsJSONNumber: the texts numeric, float4/8 and the integers print
// that json.c's IsValidJsonNumber takes as numbers (row_to_json writes
// them bare), and those it quotes.
func TestIsJSONNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "42": true, "-1.50": true, "0.000": true, "1e-300": true, "3.40282e+38": true,
		"1.79769313486232e+308":                                true, // float8 max at extra_float_digits 0: past float64, still a JSON number
		"123456789012345678901234567890.000000000000000000001": true, "5e-324": true, "1E+2": true,
		"NaN": false, "Infinity": false, "-Infinity": false, "": false, "-": false, "1.": false, ".5": false,
		"1e": false, "1e+": false, "01": false, "+1": false, "1.5x": false, "0x10": false,
	} {
		if got := isJSONNumber([]byte(s)); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
