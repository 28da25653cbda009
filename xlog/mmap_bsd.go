//go:build unix && !linux

package xlog

import "syscall"

const mmapFlags = syscall.MAP_SHARED
