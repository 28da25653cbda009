package typeout_test

import (
	"encoding/binary"
	"fmt"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/typeout"
)

// A timestamptz and a numeric, as their bytes are stored in a heap tuple
// (the numeric's payload after its varlena header), printed as COPY would
// under two DateStyles and time zones.
func ExampleFormatter_Append() {
	ts := make([]byte, 8)
	// 2024-02-29 12:34:56.789 UTC: microseconds since 2000-01-01.
	binary.LittleEndian.PutUint64(ts, uint64(762525296789000))
	// numeric -1234.56 in the short form (NumericShort, numeric.c): the
	// header 0xa100 (short, negative, dscale 2, weight 0), then the
	// base-10000 digits 1234 and 5600.
	num := []byte{0x00, 0xa1, 0xd2, 0x04, 0xe0, 0x15}

	f := typeout.Formatter{Settings: typeout.DefaultSettings()}
	for _, set := range [][2]string{{"ISO, MDY", "UTC"}, {"German", "Asia/Kathmandu"}, {"Postgres, DMY", "America/St_Johns"}} {
		if err := f.Settings.Set("DateStyle", set[0]); err != nil {
			panic(err)
		}
		if err := f.Settings.Set("TimeZone", set[1]); err != nil {
			panic(err)
		}
		out, err := f.Append(nil, 1184, ts)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(out))
	}
	out, err := f.Append(nil, 1700, num)
	fmt.Println(string(out), err)

	// Output:
	// 2024-02-29 12:34:56.789+00
	// 29.02.2024 18:19:56.789 +0545
	// Thu 29 Feb 09:04:56.789 2024 NST
	// -1234.56 <nil>
}

// Quoting a value for COPY's text format, CSV and SQL.
func ExampleAppendLiteral() {
	v := []byte("it's a \\ path\twith a tab")
	fmt.Println(string(typeout.AppendCopyText(nil, v, '\t')))
	fmt.Println(string(typeout.DefaultCSV.Append(nil, v, false, false)))
	fmt.Println(string(typeout.AppendLiteral(nil, v, "text")))
	// Output:
	// it's a \\ path\twith a tab
	// it's a \ path	with a tab
	// E'it''s a \\ path	with a tab'::text
}

// The replay's catalog answers a Formatter's questions.
var _ typeout.Types = (*catalog.Catalog)(nil)
