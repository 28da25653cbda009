// Package incident finds what happened in a stream and how to undo it:
// events (drops, truncates, rewrites, deletes and updates of many rows,
// restore points, database creation and drop) with their transactions and
// times (Events; ReadEvents reads a stream into one on every core), and
// point-in-time recovery plans (ScanPITR, PlanPITR): the recovery target
// just before an event, the settings that reach it, the WAL and base backup
// it needs.
package incident
