// Package report draws the HTML report of walscope report: one
// self-contained page (inline CSS and SVG, no external resources) with
// charts of WAL volume over time and LSN, checkpoint cycles, resource
// managers, relations, what-if scenarios and verification, for one stream or
// two side by side. The charts (AreaChart, BarChart) are drawn as SVG by the
// package itself; every chart of a document takes its element ids from the
// document's ChartIDs, so a document's ids are unique and the same on every
// rendering.
package report
