//go:build linux

package xlog

import "syscall"

// mmapFlags prefaults the mapping: WAL is read front to back exactly once, so
// mapping every page up front costs less than a fault per page.
const mmapFlags = syscall.MAP_SHARED | syscall.MAP_POPULATE
