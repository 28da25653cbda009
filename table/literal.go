package table

import "github.com/walscope/walscope/typeout"

// LiteralSettings returns the settings to print values with when they are
// to be read back as SQL literals ('text'::type, typeout.AppendLiteral),
// so that a server reads them as the same values whatever its own
// settings, once LiteralPreamble has run in the script's transaction:
// DateStyle ISO (year first: no day/month order to guess), IntervalStyle
// postgres (an interval's text read under sql_standard, or read as
// postgres_verbose's or iso_8601's, can mean another interval), and
// extra_float_digits at least 1 (at 0 and below floats print rounded: not
// the stored value). TimeZone stays: ISO text carries the offset, so a
// timestamptz is the same instant read anywhere. The display settings (a
// backup's configuration, --datestyle and the like) are for text a person
// reads, COPY's and CSV's; literals printed with them are not safe: under
// DateStyle German, '29.02.2024'::date fails on a server with ISO, MDY.
func LiteralSettings(display typeout.Settings) typeout.Settings {
	s := display
	s.DateStyle, s.DateOrder = typeout.ISO, typeout.MDY
	s.IntervalStyle = typeout.PostgresStyle
	if s.ExtraFloatDigits < 1 {
		s.ExtraFloatDigits = 1
	}
	return s
}

// LiteralPreamble sets, for the rest of the transaction, what reading
// LiteralSettings' literals depends on (DateStyle, IntervalStyle, and
// lc_monetary for money's text): put it after BEGIN.
const LiteralPreamble = "SET LOCAL DateStyle = 'ISO, MDY';\nSET LOCAL IntervalStyle = 'postgres';\nSET LOCAL lc_monetary = 'C';\n"
