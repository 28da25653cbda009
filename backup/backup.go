// Package backup opens a PostgreSQL base backup in the layout it was taken
// in and reads its files where they lie, for replaying WAL onto its pages:
//
//   - a plain data directory or pg_basebackup -Fp copy (tablespaces through
//     pg_tblspc/OID symlinks or tablespace_map);
//   - pg_basebackup -Ft: base.tar and OID.tar per tablespace (and
//     pg_wal.tar), uncompressed or compressed with gzip, LZ4 or zstd by the
//     client or the server;
//   - a pgBackRest backup in its repository (full, diff, incr; files
//     referenced from earlier backups through backup.manifest; gz, lz4, zst,
//     bz2 or no compression; bundles);
//   - a Barman backup (base/ID/data and backup.info; with backup_compression,
//     the tars pg_basebackup -Ft wrote in data/);
//   - a PostgreSQL 17+ incremental chain (pg_basebackup --incremental),
//     several backups given oldest (the full one) first, whose INCREMENTAL.*
//     files are combined block by block as pg_combinebackup combines them.
//
// Nothing is extracted whole: plain files and members of uncompressed tars
// are read with ReadAt; a compressed file is decompressed on first use (or
// as Open's pass over a compressed tar goes) into a bounded cache of ours
// (see cache.go). A Backup is safe for concurrent
// use; its calls are serialized.
package backup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Layout names how a backup is stored.
type Layout string

// Layouts Open reads.
const (
	LayoutPlain       Layout = "plain"       // a data directory, pg_basebackup -Fp
	LayoutTar         Layout = "tar"         // pg_basebackup -Ft
	LayoutPgBackRest  Layout = "pgbackrest"  // a backup in a pgBackRest repository
	LayoutBarman      Layout = "barman"      // a Barman backup
	LayoutIncremental Layout = "incremental" // a PostgreSQL 17+ incremental chain
)

// Options tune Open.
type Options struct {
	// TempDir is where decompressed copies of compressed files go (a
	// directory of ours is made in it); "" is os.TempDir().
	TempDir string
	// CacheBytes bounds the decompressed copies kept (in memory and in
	// TempDir); 0 is 1 GiB. The copy in use is kept even if larger.
	CacheBytes int64
	// IndexDir, when not "", is a directory of ours where the index of a
	// gzip-compressed tar (its members, and points where inflating can
	// resume) is kept between runs (made if missing): the next Open of
	// the same file reads it instead of inflating the whole tar again.
	// A file is the same when its size, modification time and the
	// content of its first and last 64 KiB are; the directory keeps the
	// 64 most recently used index files (at most 32 MiB each, 512 MiB in
	// all). "" keeps none.
	IndexDir string
}

// Backup is an opened base backup. Close it to release files and remove
// decompressed copies.
type Backup struct {
	mu       sync.Mutex
	path     string // the path given (the newest of a chain)
	layout   Layout
	st       store
	cache    *extractCache
	label    *BackupLabel
	control  *ControlFile
	manifest *Manifest // backup_manifest, when the backup has one
	major    int
	blcksz   uint32
	relseg   uint32
	chain    []*Backup // the backups of an incremental chain, oldest first

	// incremental: the backup_label's INCREMENTAL FROM LSN/TLI (17+)
	incrFromLSN xlog.LSN
	incrFromTLI xlog.TimeLineID
}

// Open opens one base backup, or with several paths a PostgreSQL 17+
// incremental chain given oldest (the full backup) first. A path is a data
// directory or plain backup, a pg_basebackup -Ft directory or its base.tar*,
// a pgBackRest backup directory (REPO/backup/STANZA/LABEL), stanza directory
// (its newest backup) or repository with one stanza, or a Barman backup
// directory (SERVER/base/ID) or server directory (its newest DONE backup).
func Open(paths ...string) (*Backup, error) {
	return OpenOptions(Options{}, paths...)
}

// OpenOptions is Open with options.
func OpenOptions(opt Options, paths ...string) (*Backup, error) {
	if len(paths) == 0 {
		return nil, errorf("", "", -1, ErrNotBackup, "no backup given")
	}
	if opt.CacheBytes <= 0 {
		opt.CacheBytes = 1 << 30
	}
	cache := newExtractCache(opt.TempDir, opt.CacheBytes)
	cache.indexDir = opt.IndexDir
	if len(paths) == 1 {
		b, err := openOne(paths[0], cache)
		if err != nil {
			cache.close()
			return nil, err
		}
		if b.incrFromLSN != 0 {
			b.close()
			cache.close()
			return nil, errorf(b.path, "backup_label", -1, ErrChain,
				"an incremental backup (INCREMENTAL FROM LSN %s): give the backups it depends on first", b.incrFromLSN)
		}
		return b, nil
	}
	return openChain(paths, cache)
}

// openOne opens one backup of any layout.
func openOne(p string, cache *extractCache) (*Backup, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, &Error{Backup: p, Offset: -1, Err: err}
	}
	b := &Backup{path: p, cache: cache}
	dir := p
	if !st.IsDir() {
		// a tar of a pg_basebackup -Ft directory
		base := filepath.Base(p)
		if !strings.HasPrefix(base, "base.t") {
			return nil, errorf(p, "", -1, ErrNotBackup, "a file other than base.tar*")
		}
		dir = filepath.Dir(p)
	}
	exists := func(n string) bool { _, err := os.Stat(filepath.Join(dir, n)); return err == nil }
	switch {
	case st.IsDir() && (exists("global/pg_control") || exists("PG_VERSION")):
		b.layout = LayoutPlain
		var tblspc map[string]string
		if m, err := os.ReadFile(filepath.Join(dir, "tablespace_map")); err == nil {
			tblspc = readTablespaceMap(m)
		}
		b.st = newDirStore(dir, tblspc)
	case !st.IsDir() || exists("base.tar") || exists("base.tar.gz") || exists("base.tar.lz4") || exists("base.tar.zst") || exists("base.tgz"):
		b.layout = LayoutTar
		ts, err := openTarStore(p, dir, cache)
		if err != nil {
			return nil, err
		}
		b.st = ts
	default:
		l, ok, err := readToolBackup(dir)
		if !ok {
			return nil, errorf(p, "", -1, ErrNotBackup,
				"no global/pg_control, no base.tar, no pgBackRest backup.manifest or backup.info, no Barman backup.info")
		}
		if err != nil {
			return nil, &Error{Backup: p, Offset: -1, Err: fmt.Errorf("%w: %v", ErrDamaged, err)}
		}
		b.label = l
		switch l.Tool {
		case "pgBackRest":
			b.layout = LayoutPgBackRest
			ps, err := openPgBackRest(p, l.Path, cache)
			if err != nil {
				return nil, err
			}
			b.st = ps
		case "Barman":
			b.layout = LayoutBarman
			data := filepath.Join(l.Path, "data")
			if base, _, err := findTars(data); err == nil && base != "" {
				// backup_compression: pg_basebackup -Ft's tars in data/
				ts, err := openTarStore(p, data, cache)
				if err != nil {
					return nil, err
				}
				b.st = ts
				break
			}
			bs, err := openBarman(p, l.Path)
			if err != nil {
				return nil, err
			}
			b.st = bs
		default:
			return nil, errorf(p, "", -1, ErrNotBackup, "backup tool %q", l.Tool)
		}
	}
	if err := b.init(); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// init reads what every layout has: pg_control, backup_label,
// backup_manifest, PG_VERSION.
func (b *Backup) init() error {
	// the manifest first: it tells a file missing from a tar cut at a
	// member's end (pg_control is the last member pg_basebackup sends)
	if raw, err := b.readFile("backup_manifest"); err == nil {
		m, err := ParseManifest(raw)
		if err != nil {
			return &Error{Backup: b.path, File: "backup_manifest", Offset: -1, Err: err}
		}
		b.manifest = m
		if err := b.checkManifest(); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	raw, err := b.readFile("global/pg_control")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errorf(b.path, "global/pg_control", -1, ErrMissingFile, "a base backup has one")
		}
		return err
	}
	c, err := ParseControlFile(raw)
	if err != nil {
		return &Error{Backup: b.path, File: "global/pg_control", Offset: -1, Err: err}
	}
	if m := b.manifest; m != nil && m.SystemID != 0 && m.SystemID != c.SystemID {
		return errorf(b.path, "backup_manifest", -1, ErrDamaged, "system identifier %d, pg_control's %d", m.SystemID, c.SystemID)
	}
	b.control, b.blcksz, b.relseg = c, c.BlockSize, c.RelSegSize
	b.major = c.MajorVersion()
	if v, err := b.readFile("PG_VERSION"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n >= 10 {
			b.major = n
		}
	}
	if text, err := b.readFile("backup_label"); err == nil {
		l, err := ParseBackupLabel(string(text))
		if err != nil {
			return errorf(b.path, "backup_label", -1, ErrDamaged, "%v", err)
		}
		l.Path = filepath.Join(b.path, "backup_label")
		if b.label != nil {
			// a tool's backup: its repository's facts, the label's checkpoint
			if b.label.CheckpointLSN == 0 {
				b.label.CheckpointLSN = l.CheckpointLSN
			}
		} else {
			b.label = l
		}
		b.incrFromLSN, b.incrFromTLI = incrementalFrom(string(text))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if b.label == nil {
		// a data directory that is not a backup (a stopped cluster, a
		// standby's copy): recovery starts from its last checkpoint
		cp := c.CheckPointCopy
		b.label = &BackupLabel{Path: filepath.Join(b.path, "global", "pg_control"), StartLSN: cp.Redo,
			CheckpointLSN: c.Checkpoint, StartTLI: cp.ThisTimeLineID, Method: "pg_control",
			StartTime: c.Time.Format("2006-01-02 15:04:05 UTC")}
	}
	return nil
}

// checkManifest checks that every file backup_manifest lists is in the
// backup with its size (a tar cut at a member's end reads as complete).
func (b *Backup) checkManifest() error {
	for _, f := range b.manifest.Files {
		name, ok := cleanName(f.Path)
		if !ok {
			continue
		}
		size, err := b.st.stat(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return errorf(b.path, f.Path, -1, ErrMissingFile, "listed in backup_manifest")
			}
			return b.wrap(f.Path, err)
		}
		if size != f.Size && b.layout != LayoutPlain {
			// a plain data directory may be a running cluster's
			return errorf(b.path, f.Path, -1, ErrDamaged, "%d bytes, backup_manifest says %d", size, f.Size)
		}
	}
	return nil
}

// incrementalFrom reads a PostgreSQL 17+ backup_label's INCREMENTAL FROM
// LSN and TLI (0 for a full backup).
func incrementalFrom(text string) (xlog.LSN, xlog.TimeLineID) {
	var lsn xlog.LSN
	var tli xlog.TimeLineID
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch k {
		case "INCREMENTAL FROM LSN":
			lsn, _ = xlog.ParseLSN(strings.TrimSpace(v))
		case "INCREMENTAL FROM TLI":
			if t, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				tli = xlog.TimeLineID(t)
			}
		}
	}
	return lsn, tli
}

// wrap positions an error of a store.
func (b *Backup) wrap(name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Backup: b.path, File: name, Offset: -1, Err: err}
}

// readFile reads a whole file (no lock taken).
func (b *Backup) readFile(name string) ([]byte, error) {
	f, err := b.st.open(name)
	if err != nil {
		return nil, b.wrap(name, err)
	}
	out := make([]byte, f.Size())
	n, err := f.ReadAt(out, 0)
	if n == len(out) {
		return out, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, errorf(b.path, name, int64(n), ErrDamaged, "%v", err)
}

// Path is the path the backup was opened from (the newest of a chain).
func (b *Backup) Path() string { return b.path }

// Layout is how the backup is stored.
func (b *Backup) Layout() Layout { return b.layout }

// Label is the backup's start: backup_label's (or the backup tool's)
// START WAL LOCATION, CHECKPOINT LOCATION, timeline, start time and label.
// A data directory without backup_label gets one made from pg_control's
// last checkpoint (Method "pg_control").
func (b *Backup) Label() *BackupLabel { return b.label }

// Control returns global/pg_control, read and CRC-checked at Open.
func (b *Backup) Control() (*ControlFile, error) { return b.control, nil }

// Manifest returns the backup_manifest, nil when the backup has none.
func (b *Backup) Manifest() *Manifest { return b.manifest }

// SystemID is pg_control's database system identifier.
func (b *Backup) SystemID() uint64 { return b.control.SystemID }

// BlockSize is the data page size, BLCKSZ, from pg_control.
func (b *Backup) BlockSize() uint32 { return b.blcksz }

// MajorVersion is the PostgreSQL major version (PG_VERSION, else told by pg_control).
func (b *Backup) MajorVersion() int { return b.major }

// ConsistentLSN is where the files say recovery from the backup becomes
// consistent: backup_manifest's last WAL-Ranges end, pgBackRest's
// backup-lsn-stop, Barman's end_xlog (an upper bound: Label().StopUpperBound),
// pg_control's backupEndPoint or minRecoveryPoint (a backup taken from a
// standby, a standby's copy), or the last checkpoint of a cluster shut down
// cleanly. 0 when none says: the BACKUP_END record in the WAL does.
func (b *Backup) ConsistentLSN() xlog.LSN {
	if m := b.manifest; m != nil {
		return m.WALRanges[len(m.WALRanges)-1].End
	}
	if b.label != nil && b.label.StopLSN != 0 {
		return b.label.StopLSN
	}
	c := b.control
	switch {
	case c.BackupEndPoint != 0:
		return c.BackupEndPoint
	case c.MinRecoveryPoint != 0:
		return c.MinRecoveryPoint
	case b.label != nil && b.label.Method == "pg_control" && (c.State == DBShutdowned || c.State == DBShutdownedInRecovery):
		return c.Checkpoint
	}
	return 0
}

// ReadFile reads a whole file by its data-directory-relative path
// ("pg_xact/0000", "global/pg_filenode.map", "base/5/pg_filenode.map",
// "postgresql.auto.conf"). A file the backup does not hold gives an error
// for which errors.Is(err, fs.ErrNotExist).
func (b *Backup) ReadFile(name string) ([]byte, error) {
	n, ok := cleanName(name)
	if !ok || n == "." {
		return nil, &Error{Backup: b.path, File: name, Offset: -1, Err: fs.ErrInvalid}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out, err := b.readFile(n)
	if err != nil && errors.Is(err, fs.ErrNotExist) && b.manifest != nil {
		if _, listed := b.manifest.File(n); listed {
			return nil, errorf(b.path, n, -1, ErrMissingFile, "listed in backup_manifest")
		}
	}
	return out, err
}

// ReadDir lists a directory by its data-directory-relative path ("" or
// "." for the top), sorted by name. An INCREMENTAL.X file of an
// incremental chain is listed as X.
func (b *Backup) ReadDir(name string) ([]string, error) {
	n, ok := cleanName(name)
	if !ok {
		return nil, &Error{Backup: b.path, File: name, Offset: -1, Err: fs.ErrInvalid}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	names, err := b.st.list(n)
	if err != nil {
		return nil, b.wrap(n, err)
	}
	return names, nil
}

// Prefetch makes the named files (data-directory-relative) ready to read:
// for a compressed tar it decompresses them in one pass over the stream,
// instead of one pass per file asked for out of order. Other layouts need
// nothing.
func (b *Backup) Prefetch(names ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ts, ok := b.st.(*tarStore); ok {
		clean := make([]string, 0, len(names))
		for _, n := range names {
			if c, ok := cleanName(n); ok {
				clean = append(clean, c)
			}
		}
		return ts.prefetch(clean)
	}
	return nil
}

// Tablespace OIDs with fixed places (pg_tablespace.dat).
const (
	defaultTablespaceOID = 1663 // pg_default: base/DB/
	globalTablespaceOID  = 1664 // pg_global: global/
)

// forkSuffix is forkNames of src/common/relpath.c.
var forkSuffix = [...]string{"", "_fsm", "_vm", "_init"}

// RelPath is the data-directory-relative path of a relation fork's first
// segment (GetRelationPath of src/common/relpath.c): base/DB/REL,
// global/REL, or pg_tblspc/SPC/PG_<major>_<catversion>/DB/REL, with _fsm,
// _vm or _init for the other forks.
func (b *Backup) RelPath(loc decode.RelFileLocator, fork decode.ForkNumber) string {
	var buf [96]byte
	return string(b.appendRelPath(buf[:0], loc, fork))
}

func (b *Backup) appendRelPath(p []byte, loc decode.RelFileLocator, fork decode.ForkNumber) []byte {
	switch loc.SpcOID {
	case globalTablespaceOID:
		p = append(p, "global/"...)
	case defaultTablespaceOID:
		p = append(p, "base/"...)
		p = strconv.AppendUint(p, uint64(loc.DBOID), 10)
		p = append(p, '/')
	default:
		p = append(p, "pg_tblspc/"...)
		p = strconv.AppendUint(p, uint64(loc.SpcOID), 10)
		p = append(p, "/PG_"...)
		p = strconv.AppendInt(p, int64(b.major), 10)
		p = append(p, '_')
		p = strconv.AppendUint(p, uint64(b.control.CatalogVersion), 10)
		p = append(p, '/')
		p = strconv.AppendUint(p, uint64(loc.DBOID), 10)
		p = append(p, '/')
	}
	p = strconv.AppendUint(p, uint64(loc.RelNumber), 10)
	if int(fork) < len(forkSuffix) {
		return append(p, forkSuffix[fork]...)
	}
	p = append(p, "_fork"...)
	return strconv.AppendUint(p, uint64(fork), 10)
}

// segPath is the path of segment seg of a fork (REL, REL.1, REL.2 ...).
func segPath(first string, seg uint32) string {
	if seg == 0 {
		return first
	}
	return first + "." + strconv.FormatUint(uint64(seg), 10)
}

// NBlocks is the number of blocks of a relation fork, over its segment
// files of relseg_size blocks each as mdnblocks counts them: every segment
// before the last is full. A fork that is absent gives an error for which
// errors.Is(err, fs.ErrNotExist).
func (b *Backup) NBlocks(loc decode.RelFileLocator, fork decode.ForkNumber) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nblocks(b.RelPath(loc, fork))
}

func (b *Backup) nblocks(first string) (uint32, error) {
	return countBlocks(first, b.blcksz, b.relseg, func(name string) (int64, error) {
		size, err := b.st.stat(name)
		if err != nil {
			return 0, b.wrap(name, err)
		}
		return size, nil
	})
}

// countBlocks is mdnblocks over segment files whose sizes size gives.
func countBlocks(first string, blcksz, relseg uint32, size func(name string) (int64, error)) (uint32, error) {
	var total uint32
	for seg := uint32(0); ; seg++ {
		name := segPath(first, seg)
		n, err := size(name)
		if err != nil {
			if seg > 0 && errors.Is(err, fs.ErrNotExist) {
				return total, nil
			}
			return 0, err
		}
		blocks := n / int64(blcksz)
		if blocks > int64(relseg) {
			return 0, &Error{File: name, Offset: -1, Err: fmt.Errorf("%w: segment of %d blocks, relseg_size is %d", ErrDamaged, blocks, relseg)}
		}
		total += uint32(blocks)
		if blocks < int64(relseg) {
			return total, nil
		}
		if uint64(total)+uint64(relseg) > 0xFFFFFFFE {
			return total, nil // MaxBlockNumber+1 blocks at most
		}
	}
}

// blockPlace is the segment and byte offset of block blk.
func blockPlace(first string, blk, blcksz, relseg uint32) (string, int64) {
	return segPath(first, blk/relseg), int64(blk%relseg) * int64(blcksz)
}

// ReadBlock reads block blk of a relation fork into dst (at least
// BlockSize bytes). A block at or beyond the end of the fork gives
// ErrNoBlock; an absent fork an error for which errors.Is(err,
// fs.ErrNotExist).
func (b *Backup) ReadBlock(loc decode.RelFileLocator, fork decode.ForkNumber, blk uint32, dst []byte) error {
	if len(dst) < int(b.blcksz) {
		return fmt.Errorf("backup: ReadBlock: buffer of %d bytes, the block size is %d", len(dst), b.blcksz)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.RelPath(loc, fork)
	name, off := blockPlace(first, blk, b.blcksz, b.relseg)
	f, err := b.st.open(name)
	if err != nil {
		if blk >= b.relseg && errors.Is(err, fs.ErrNotExist) {
			if _, err0 := b.st.open(first); err0 == nil {
				return errorf(b.path, first, -1, ErrNoBlock, "block %d", blk)
			}
		}
		return b.wrap(name, err)
	}
	if off+int64(b.blcksz) > f.Size() {
		return errorf(b.path, name, off, ErrNoBlock, "block %d (the segment has %d bytes)", blk, f.Size())
	}
	n, err := f.ReadAt(dst[:b.blcksz], off)
	if n < int(b.blcksz) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return errorf(b.path, name, off+int64(n), ErrDamaged, "reading block %d: %v", blk, err)
	}
	return nil
}

// Close releases the backup's files and removes decompressed copies.
func (b *Backup) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.close()
	if e := b.cache.close(); err == nil {
		err = e
	}
	return err
}

func (b *Backup) close() error {
	var err error
	if b.st != nil {
		err = b.st.close()
	}
	for _, c := range b.chain {
		c.close()
	}
	return err
}

// readSmall reads a small file of the operating system (a label,
// an info file), at most 16 MiB.
func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.LimitReader(f, 16<<20))
	return buf.Bytes(), err
}
