// Package names names relation files: from a catalog export (Catalog, a
// CSV of pg_class), and from the pg_class, pg_namespace and pg_database
// tuples and the relation mapper's records the WAL itself carries
// (WALNames), learnt in a reading of their own (LearnNames), run beside the
// main reading (StartNames) or within a first pass (XLOGPassWithNames).
// FirstName asks several namers in turn.
package names
