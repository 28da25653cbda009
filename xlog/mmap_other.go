//go:build !unix

package xlog

import "os"

func openMapped(path string) (File, error) { return os.Open(path) }
