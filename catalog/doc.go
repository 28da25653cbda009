// Package catalog decodes PostgreSQL's system catalogs from their heap
// tuples, for every version from 10 to 18, without a server: pg_class,
// pg_namespace, pg_attribute, pg_type, pg_enum, pg_range, pg_index, pg_database and
// pg_tablespace, each with the column order and types of that version's
// src/include/catalog/pg_*.h (Layout; e.g. pg_class's relhasoids until 11
// and relallfrozen from 18, pg_attribute's atthasmissing and attmissingval
// from 11, attcompression from 14, its int2 attstattarget from 16 moved
// and made nullable in 17, pg_database's collations as text from 15 with
// daticulocale, then datlocale from 17; before 12 a row's oid is kept in the
// tuple header, HEAP_HASOID, not in a column).
//
// A Decoder turns a tuple into a typed row (Class, Namespace, Attribute,
// Type, Enum, Range, Index, Database, Tablespace), with package tuple deforming it.
// A Catalog collects the rows of one database and answers what a reader of
// its files asks: the relation a possibly quoted, qualified name means
// (Resolve, as 'name'::regclass with the default search_path), its
// attributes as a tuple descriptor (Desc), its TOAST relation, its enum
// labels and types, and where its files are (Locator), through the relation
// mapper files (ParseRelMap, pg_filenode.map; and the XLOG_RELMAP_UPDATE
// record that rewrites them, ParseRelMapUpdate) for the mapped catalogs,
// whose pg_class.relfilenode is 0.
//
// Which tuples are visible is the caller's business: give Add the live
// version of each row.
package catalog
