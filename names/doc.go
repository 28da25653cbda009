// Package names names relation files: from a catalog export (Catalog, a
// CSV of pg_class), and from the pg_class, pg_namespace and pg_database
// tuples the WAL itself carries (WALNames), learnt in a first pass beside
// the main reading (StartNames, XLOGPassWithNames).
package names
