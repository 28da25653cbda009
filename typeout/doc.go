// Package typeout prints column values as PostgreSQL's output functions do,
// byte for byte, from the datums stored on disk, without a server: the text
// `COPY ... TO STDOUT` and psql show.
//
// A Formatter holds the session settings the output functions read
// (Settings: DateStyle, IntervalStyle, TimeZone, extra_float_digits,
// bytea_output, lc_monetary), the major version whose output functions it
// mirrors, and a Types resolver (the catalog as of the target: package
// catalog's Catalog implements it) for the types a value's text depends on:
// array elements, range subtypes, composite attributes, enum labels, domain
// base types. Append prints one datum:
//
//   - fixed-length types (attlen > 0): the attlen bytes as stored;
//   - varlena types (attlen -1): the plain payload, without its varlena header,
//     already detoasted and decompressed (tuple.Value.Detoast, then
//     tuple.Value.Payload; AppendValue does both);
//   - cstring types (attlen -2): the bytes without the terminating NUL.
//
// Each output function is a port of the server's, named next to it (bool:
// boolout, bool.c; float: float8out_internal, float.c and Ryu's d2s.c;
// numeric: numeric_out, numeric.c; dates and times: EncodeDateTime and
// friends, datetime.c; jsonb: JsonbToCString, jsonb.c; inet:
// pg_inet_net_ntop, inet_net_ntop.c; money: cash_out, cash.c; arrays:
// array_out, arrayfuncs.c; ranges: range_out, rangetypes.c; composites:
// record_out, rowtypes.c). No typmod changes what an output function prints
// (the value is stored already coerced to it), so Append takes none.
//
// timestamptz and timetz text depends on the TimeZone setting: zones are
// loaded with Go's time.LoadLocation from the system's zoneinfo (or Go's
// embedded copy). PostgreSQL uses its own copy of the IANA data (bundled
// or --with-system-tzdata), so a zone whose rules differ between the two
// copies (typically far past or far future dates, or a recent rule change)
// may print a different offset or abbreviation than the server.
//
// A type the package cannot print is an error wrapping ErrUnsupported that
// names the type; a caller may choose to print the raw bytes instead
// (AppendByteaHex). A malformed datum is an error wrapping ErrCorrupt: bad
// input never panics and nothing outside the datum is read.
//
// The package also quotes values for output formats: COPY's text format
// (AppendCopyText, CopyAttributeOutText in copyto.c), CSV
// (AppendCopyCSV, CopyAttributeOutCSV) and SQL literals with a cast
// (AppendLiteral, quote_literal in quote.c); and reads the settings from
// postgresql.conf and its includes (ParseSettings) with the GUC file
// syntax of guc-file.l.
package typeout
