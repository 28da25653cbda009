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
// array_out, arrayfuncs.c; ranges: range_out, rangetypes.c; multiranges:
// multirange_out; composites: record_out, rowtypes.c; geometric types:
// path_encode, geo_ops.c). No typmod changes what an output function
// prints (the value is stored already coerced to it), so Append takes none.
//
// The types printed: bool, int2, int4, int8, oid, xid, cid, xid8, float4,
// float8, numeric, money, text, varchar, bpchar, name, "char", cstring,
// json, xml, jsonb, bytea, uuid, date, time, timetz, timestamp,
// timestamptz, interval, inet, cidr, macaddr, macaddr8, bit, varbit,
// pg_lsn, tid, int2vector, oidvector, point, lseg, box, path, polygon,
// line, circle; enums, domains, arrays of any of these, ranges and
// multiranges over any of them, and named composite types of any of them.
// Not printed (ErrUnsupported): the reg* types (regclass, regtype...:
// their text is a looked-up, search_path-qualified name), tsvector,
// tsquery, anonymous records, pg_snapshot/txid_snapshot, aclitem and
// extension types.
//
// Where the output differs between versions, Major selects the version's:
// "char" with the high bit set prints as \ooo from 15; floats print their
// shortest exact text (extra_float_digits > 0) from 12 and as printf %g
// before; intervals of -2147483648 days print as the pre-15 int fields did.
// Values only later versions store (numeric ±Infinity from 14, interval
// ±infinity from 17, multiranges from 14) print whatever Major says.
//
// timestamptz text depends on the TimeZone setting: zones are loaded with
// Go's time.LoadLocation from the system's zoneinfo (or Go's embedded
// copy), unless Settings.TZDir names the directory of the server's own
// zone files. PostgreSQL reads its own copy of the IANA data (bundled under
// SHAREDIR/timezone, or the system's with --with-system-tzdata, as
// Debian's packages are built), so without TZDir a zone whose rules differ
// between the two copies (far past dates, backzone links, recent rule
// changes) may print a different offset or abbreviation than the server:
// PostgreSQL 18's bundled data has Europe/Amsterdam as Brussels, and
// prints 00:17:30 LMT where the system's data gives 00:19:32 LMT.
//
// A type the package cannot print is an error wrapping ErrUnsupported that
// names the type; a caller may choose to print the raw bytes instead
// (AppendByteaHex). A malformed datum is an error wrapping ErrCorrupt: bad
// input never panics and nothing outside the datum is read.
//
// The package also quotes values for output formats: COPY's text format
// (AppendCopyText, CopyAttributeOutText in copyto.c), CSV (CSV.Append,
// CopyAttributeOutCSV) and SQL literals with a cast (AppendLiteral,
// quote_literal in quote.c); and reads the settings from a data
// directory's postgresql.conf, its includes and postgresql.auto.conf
// (LoadSettings; Settings.ParseConf for one file, Settings.Set for one
// setting, as a flag would override it) with the GUC file syntax of
// guc-file.l.
package typeout
