// Package format writes decoded WAL and its analyses as text: pg_waldump's
// record lines and block references (dump, dump -b), pg_waldump's --stats
// tables and their JSON and CSV forms, and the tables of the breakdowns
// (relation, checkpoint cycle, time, transaction, segment, timeline) as
// aligned text, CSV or JSON, with FormatBytes and FormatCount for sizes and
// counts. It formats only: what it prints is computed by analyze.
//
// It links no Parquet or Arrow code (deps_test.go checks it), so a program
// that prints pg_waldump's formats stays small; the Parquet, JSON Lines and
// CSV datasets are package export, the HTML report package report.
package format
