// Package tuple deforms PostgreSQL heap tuples: given a tuple's bytes
// (HeapTupleHeaderData followed by its data) and a descriptor of the
// relation's attributes, it returns each column's datum as stored, as
// heap_deform_tuple and nocachegetattr do (src/backend/access/common/
// heaptuple.c), without a server.
//
// A varlena datum is classified by its header as varatt.h (postgres.h
// before PostgreSQL 16) lays it out: 1-byte header, 4-byte header, inline
// compressed (pglz, or lz4 from 14 by va_tcinfo's method bits) or an
// external TOAST pointer (varatt_external). In-memory forms (indirect and
// expanded pointers) never reach a page and are rejected. Value.Detoast
// turns any of them into the plain value: inline compressed values are
// decompressed here, external ones fetched through a Detoaster, for which
// ToastStore reassembles the chunks of a TOAST relation as toast_fetch_datum
// does (detoast.c, heaptoast.c).
//
// Columns the tuple does not hold (added by ALTER TABLE after it was
// written) read as the attribute's missing value (atthasmissing,
// attmissingval) or NULL, as getmissingattr does.
//
// The layout read here is the same in every PostgreSQL version from 10 to
// 18 (htup_details.h, varatt.h, toast_compression.h, detoast.h): a tuple
// with HEAP_HASOID (10 and 11) keeps its oid just before t_hoff, which
// Header reports. Data is little-endian, as every platform walscope reads
// WAL from writes it. Nothing is read outside the given bytes: malformed
// tuples are errors wrapping ErrCorrupt, never panics.
package tuple
