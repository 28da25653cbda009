package format

import (
	"math"
	"strconv"
	"strings"
)

// FormatBytes shows a byte count as PostgreSQL's pg_size_pretty would, in
// bytes, kB, MB, GB or TB (powers of 1024), with up to one decimal.
func FormatBytes(v float64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " bytes"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + units[i]
}

// FormatCount shows a count with thousands separators.
func FormatCount(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
