// Package export writes the decoded stream as datasets for DuckDB, pandas,
// Spark or Trino: the records, blocks, checkpoints, transactions and
// segments tables (schema.go, docs/schema.md) as Parquet (its own writer,
// parquet.go), JSON Lines or CSV files, partitioned and written in
// parallel spans. pg_waldump's text formats and the breakdown tables are in
// package format, the HTML report in package report.
package export
