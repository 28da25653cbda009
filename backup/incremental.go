package backup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// A PostgreSQL 17+ incremental backup (pg_basebackup --incremental) stores
// a relation segment whose blocks changed little as INCREMENTAL.NAME
// (src/backend/backup/basebackup_incremental.c): uint32 magic 0xd3ae1f0d,
// uint32 number of blocks, uint32 truncation_block_length, the blocks'
// numbers relative to the segment (uint32 each), padded with zeros to a
// multiple of BLCKSZ when there are blocks, then the blocks. A chain of
// backups, the full one first, is read as pg_combinebackup would write it
// (src/bin/pg_combinebackup/reconstruct.c): the newest backup's file list
// is the result's; an INCREMENTAL file's block comes from the newest backup
// that has it, older INCREMENTAL files giving the blocks the newer ones do
// not have, down to a full copy of the file, which gives the rest (blocks
// it does not have are zeros); the file is as long as the newest
// truncation_block_length, or its highest block present plus one.

const incrementalMagic = 0xd3ae1f0d

// incrementalHeader is an INCREMENTAL file's header.
type incrementalHeader struct {
	blocks     []uint32 // relative block numbers, in file order
	truncation uint32   // truncation_block_length
	dataOff    int64    // where the first block starts
}

// parseIncrementalHeader reads the header of an INCREMENTAL file of size
// bytes from r, for a cluster of block size blcksz and relseg_size relseg.
func parseIncrementalHeader(r io.ReaderAt, size int64, blcksz, relseg uint32) (*incrementalHeader, error) {
	var head [12]byte
	if n, err := r.ReadAt(head[:], 0); n < len(head) {
		return nil, fmt.Errorf("%w: INCREMENTAL header of %d bytes: %v", ErrDamaged, n, err)
	}
	le := binary.LittleEndian
	if m := le.Uint32(head[0:]); m != incrementalMagic {
		return nil, fmt.Errorf("%w: INCREMENTAL magic 0x%x, expected 0x%x", ErrDamaged, m, incrementalMagic)
	}
	n, trunc := le.Uint32(head[4:]), le.Uint32(head[8:])
	if n > relseg || trunc > relseg {
		return nil, fmt.Errorf("%w: INCREMENTAL header: %d blocks, truncation_block_length %d, relseg_size %d", ErrDamaged, n, trunc, relseg)
	}
	h := &incrementalHeader{truncation: trunc, blocks: make([]uint32, n)}
	if n > 0 {
		nums := make([]byte, 4*int(n))
		if k, err := r.ReadAt(nums, 12); k < len(nums) {
			return nil, fmt.Errorf("%w: INCREMENTAL block numbers cut at %d bytes: %v", ErrDamaged, 12+k, err)
		}
		for i := range h.blocks {
			h.blocks[i] = le.Uint32(nums[4*i:])
			if h.blocks[i] >= relseg {
				return nil, fmt.Errorf("%w: INCREMENTAL block number %d beyond relseg_size %d", ErrDamaged, h.blocks[i], relseg)
			}
		}
	}
	h.dataOff = 12 + 4*int64(n)
	if n > 0 && h.dataOff%int64(blcksz) != 0 {
		h.dataOff += int64(blcksz) - h.dataOff%int64(blcksz)
	}
	if want := h.dataOff + int64(n)*int64(blcksz); size != want {
		return nil, fmt.Errorf("%w: INCREMENTAL file of %d bytes, its header says %d", ErrDamaged, size, want)
	}
	return h, nil
}

// incrementalPrefix marks an incremental file's name.
const incrementalPrefix = "INCREMENTAL."

func incrementalName(name string) string {
	dir, base := path.Split(name)
	return dir + incrementalPrefix + base
}

// blockSource is where one block of a reconstructed file is read.
type blockSource struct {
	f   file
	off int64
}

// combinedFile is a file reconstructed from a chain: its blocks read from
// the files of several backups; a block no backup has reads as zeros.
type combinedFile struct {
	blcksz  int64
	sources []blockSource // f == nil: zeros
}

func (c *combinedFile) Size() int64 { return int64(len(c.sources)) * c.blcksz }

func (c *combinedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	total := 0
	for len(p) > 0 {
		if off >= c.Size() {
			return total, io.EOF
		}
		blk, in := off/c.blcksz, off%c.blcksz
		n := min(int64(len(p)), c.blcksz-in)
		s := c.sources[blk]
		if s.f == nil {
			clear(p[:n])
		} else if k, err := s.f.ReadAt(p[:n], s.off+in); int64(k) < n {
			return total + k, fmt.Errorf("%w: reading a block of a combined file: %v", ErrDamaged, unexpected(err))
		}
		total += int(n)
		p, off = p[n:], off+n
	}
	return total, nil
}

// chainStore is an incremental chain: stores[0] the full backup, the last
// the newest.
type chainStore struct {
	stores  []store
	names   []string // each backup's path, for errors
	blcksz  uint32
	relseg  uint32
	combine map[string]*combinedFile
}

func (c *chainStore) open(name string) (file, error) {
	last := len(c.stores) - 1
	if f, err := c.stores[last].open(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	if cf, ok := c.combine[name]; ok {
		return cf, nil
	}
	inc := incrementalName(name)
	lf, err := c.stores[last].open(inc)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notExist(name)
		}
		return nil, err
	}
	cf, err := c.reconstruct(name, lf)
	if err != nil {
		return nil, err
	}
	if len(c.combine) > 4096 {
		clear(c.combine)
	}
	c.combine[name] = cf
	return cf, nil
}

// reconstruct is reconstruct.c's reconstruct_from_incremental_file: latest
// is the newest backup's INCREMENTAL file.
func (c *chainStore) reconstruct(name string, latest file) (*combinedFile, error) {
	last := len(c.stores) - 1
	bs := int64(c.blcksz)
	h, err := parseIncrementalHeader(latest, latest.Size(), c.blcksz, c.relseg)
	if err != nil {
		return nil, &Error{Backup: c.names[last], File: incrementalName(name), Offset: -1, Err: err}
	}
	length := h.truncation
	for _, b := range h.blocks {
		length = max(length, b+1)
	}
	cf := &combinedFile{blcksz: bs, sources: make([]blockSource, length)}
	for i, b := range h.blocks {
		cf.sources[b] = blockSource{latest, h.dataOff + int64(i)*bs}
	}
	for i := last - 1; i >= 0; i-- {
		st := c.stores[i]
		if f, err := st.open(name); err == nil {
			n := uint32(f.Size() / bs)
			for b := uint32(0); b < h.truncation && b < n; b++ {
				if cf.sources[b].f == nil {
					cf.sources[b] = blockSource{f, int64(b) * bs}
				}
			}
			return cf, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		f, err := st.open(incrementalName(name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errorf(c.names[i], name, -1, ErrChain, "neither %s nor %s in this backup of the chain", path.Base(name), path.Base(incrementalName(name)))
			}
			return nil, err
		}
		oh, err := parseIncrementalHeader(f, f.Size(), c.blcksz, c.relseg)
		if err != nil {
			return nil, &Error{Backup: c.names[i], File: incrementalName(name), Offset: -1, Err: err}
		}
		for k, b := range oh.blocks {
			if b < h.truncation && cf.sources[b].f == nil {
				cf.sources[b] = blockSource{f, oh.dataOff + int64(k)*bs}
			}
		}
	}
	// the full backup is first: an INCREMENTAL file in it is caught when the
	// chain is opened
	return nil, errorf(c.names[0], name, -1, ErrChain, "no full copy of %s in the chain", name)
}

func (c *chainStore) stat(name string) (int64, error) {
	f, err := c.open(name)
	if err != nil {
		return 0, err
	}
	return f.Size(), nil
}

func (c *chainStore) list(dir string) ([]string, error) {
	names, err := c.stores[len(c.stores)-1].list(dir)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, incrementalPrefix)
	}
	return names, nil
}

func (c *chainStore) close() error { return nil } // the backups are closed by the Backup

// openChain opens backups oldest first and checks that each one is an
// incremental backup of the one before it (pg_combinebackup's
// check_backup_label_files and check_control_files).
func openChain(paths []string, cache *extractCache) (*Backup, error) {
	var chain []*Backup
	fail := func(err error) (*Backup, error) {
		for _, b := range chain {
			b.close()
		}
		cache.close()
		return nil, err
	}
	for _, p := range paths {
		b, err := openOne(p, cache)
		if err != nil {
			return fail(err)
		}
		chain = append(chain, b)
	}
	first := chain[0]
	if first.incrFromLSN != 0 {
		return fail(errorf(first.path, "backup_label", -1, ErrChain, "the first backup of a chain must be a full backup, this one is incremental from %s", first.incrFromLSN))
	}
	for i := 1; i < len(chain); i++ {
		prev, b := chain[i-1], chain[i]
		switch {
		case b.SystemID() != first.SystemID():
			return fail(errorf(b.path, "global/pg_control", -1, ErrChain, "system identifier %d, the chain's is %d", b.SystemID(), first.SystemID()))
		case b.incrFromLSN == 0:
			return fail(errorf(b.path, "backup_label", -1, ErrChain, "a full backup after the first of the chain"))
		case b.incrFromLSN != prev.label.StartLSN || b.incrFromTLI != prev.label.StartTLI:
			return fail(errorf(b.path, "backup_label", -1, ErrChain, "incremental from %s on timeline %d, but the backup before it (%s) starts at %s on timeline %d",
				b.incrFromLSN, b.incrFromTLI, prev.path, prev.label.StartLSN, prev.label.StartTLI))
		case b.blcksz != first.blcksz || b.relseg != first.relseg:
			return fail(errorf(b.path, "global/pg_control", -1, ErrChain, "block size or relseg_size differ from the chain's"))
		}
	}
	newest := chain[len(chain)-1]
	cs := &chainStore{blcksz: newest.blcksz, relseg: newest.relseg, combine: map[string]*combinedFile{}}
	for _, b := range chain {
		cs.stores = append(cs.stores, b.st)
		cs.names = append(cs.names, b.path)
	}
	out := &Backup{path: newest.path, layout: LayoutIncremental, st: cs, cache: cache, label: newest.label,
		control: newest.control, manifest: newest.manifest, major: newest.major, blcksz: newest.blcksz,
		relseg: newest.relseg, chain: chain, incrFromLSN: 0}
	return out, nil
}
