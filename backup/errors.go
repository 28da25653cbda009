package backup

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors: every error of the package wraps one of them (or
// fs.ErrNotExist for a file the backup does not hold) inside an *Error that
// says where.
var (
	// ErrNotBackup: the path is not a base backup in any layout the package reads.
	ErrNotBackup = errors.New("not a base backup")
	// ErrMissingFile: a file the backup says it holds (a tar member a
	// manifest lists, a pgBackRest file in a referenced backup or bundle) is
	// not where it should be.
	ErrMissingFile = errors.New("file of the backup missing")
	// ErrDamaged: a file of the backup is unreadable as what it should be
	// (truncated tar, bad manifest, pg_control whose CRC does not match, an
	// INCREMENTAL file with a bad header, a compressed file that does not
	// decompress).
	ErrDamaged = errors.New("backup damaged")
	// ErrNoBlock: the block is at or beyond the end of the relation fork.
	ErrNoBlock = errors.New("block beyond the end of the relation")
	// ErrChain: the backups given to Open do not make an incremental chain
	// (an incremental backup first, a backup that does not follow the one
	// before it, a file whose older versions are missing).
	ErrChain = errors.New("not an incremental backup chain")
	// ErrUnsupported: a valid backup using something the package does not read
	// (an encrypted pgBackRest repository, block incremental, a pg_control
	// version it does not know).
	ErrUnsupported = errors.New("unsupported backup feature")
)

// Error is a positioned error: the backup, the file inside it (a
// data-directory-relative path, a tar member, a repository file) and, when
// known, the byte offset in that file.
type Error struct {
	Backup string // the path given to Open (the newest one for a chain)
	File   string // the file or member concerned, "" if none
	Offset int64  // byte offset in File, -1 if not applicable
	Err    error  // wraps a sentinel
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Backup)
	if e.File != "" {
		b.WriteString(": ")
		b.WriteString(e.File)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// errorf makes an *Error wrapping sentinel with a message.
func errorf(backup, file string, off int64, sentinel error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	var err error = sentinel
	if msg != "" {
		err = fmt.Errorf("%w: %s", sentinel, msg)
	}
	return &Error{Backup: backup, File: file, Offset: off, Err: err}
}
