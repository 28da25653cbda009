// Package duckdbtest checks walscope's exported tables with an independent
// reader, DuckDB (through cgo). It is a separate module so that the walscope
// module stays pure Go; .ci/run runs its tests after the main module's.
package duckdbtest
