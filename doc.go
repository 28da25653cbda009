// Package walscope is the root of the walscope module: a pure-Go, offline
// reader and analyzer of PostgreSQL write-ahead log. See README.md; the
// command is cmd/walscope and the libraries are xlog, decode and rmgr.
package walscope
