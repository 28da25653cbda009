package xactstate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/walscope/walscope/xlog"
)

// Sentinel errors, wrapped by every *Error.
var (
	// ErrCorrupt: bytes of a backup file or a WAL record do not hold what
	// their layout requires (a short SLRU page, a pg_twophase file whose
	// magic, length or CRC-32C is wrong, a record shorter than its header
	// announces).
	ErrCorrupt = errors.New("corrupt transaction state")
	// ErrNoMulti: a multixact id that does not exist as of the target: never
	// created, removed by a truncation, or with members nobody recorded.
	ErrNoMulti = errors.New("no such multixact")
	// ErrSetup: New was given a block size or version it cannot read.
	ErrSetup = errors.New("unsupported transaction state setup")
)

// Error is a positioned error: the file of the backup (data-directory
// relative) and the byte offset in it, or the WAL record, and the
// transaction or multixact concerned, as applicable.
type Error struct {
	File   string   // e.g. "pg_xact/0000"; "" for a WAL record
	Offset int64    // in File
	LSN    xlog.LSN // the record's start; 0 for a file
	XID    xlog.XID
	Multi  MultiXactID
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "%s at offset %d", e.File, e.Offset)
	}
	if e.LSN != 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "record at %s", e.LSN)
	}
	if e.XID != 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "transaction %d", e.XID)
	}
	if e.Multi != 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "multixact %d", e.Multi)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }
