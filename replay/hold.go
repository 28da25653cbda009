package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// firstNormalObjectID is FirstNormalObjectId (transam.h): the files below
// it are those initdb made.
const firstNormalObjectID = 16384

// FilesNamed returns the relation files that a table named relname (its
// last name part, unquoted as catalog.ParseQualifiedName gives it) and its
// TOAST table have in the backup, in any database, read from the backup's
// own pg_class pages (every tuple, dead ones included: the backup is not
// consistent yet and the name may mean a table dropped or renamed since):
// with Config.HoldCatalogs, a Hold of these files lets one reading of the
// WAL rebuild the table as of any later target, whatever its file is
// then (a new file is held because the WAL makes it).
func FilesNamed(b Backup, v xlog.Version, relname string) ([]decode.RelFileLocator, error) {
	var out []decode.RelFileLocator
	seen := map[decode.RelFileLocator]bool{}
	err := backupClasses(b, v, func(d catalog.Database, spc uint32, classes []catalog.Class) {
		byOID := map[uint32][]catalog.Class{}
		for _, c := range classes {
			byOID[c.OID] = append(byOID[c.OID], c)
		}
		add := func(c catalog.Class) {
			if c.RelFileNode == 0 {
				return // mapped: a catalog, held anyway
			}
			loc := classFile(d.OID, spc, c)
			if !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
		for _, c := range classes {
			if c.Name != relname {
				continue
			}
			add(c)
			for _, t := range byOID[c.ToastRelid] {
				add(t)
			}
		}
	})
	return out, err
}

// classFile is where a pg_class row of database db (default tablespace
// spc) says its file is.
func classFile(db, spc uint32, c catalog.Class) decode.RelFileLocator {
	loc := decode.RelFileLocator{SpcOID: c.Tablespace, DBOID: db, RelNumber: c.RelFileNode}
	if loc.SpcOID == 0 {
		loc.SpcOID = spc
	}
	if c.IsShared {
		loc.DBOID = 0
	}
	return loc
}

// backupClasses hands each database of the backup (its pg_database rows,
// read from the backup's pages) with its default tablespace and every
// pg_class tuple of its backup pages (dead ones included: the backup is not
// consistent yet), to each. Databases whose pg_filenode.map the backup
// lacks (in another tablespace, or dropped) are skipped: the WAL says.
func backupClasses(b Backup, v xlog.Version, each func(d catalog.Database, spc uint32, classes []catalog.Class)) error {
	readMap := func(name string) (*catalog.RelMap, error) {
		raw, err := b.ReadFile(name)
		if err != nil {
			return nil, err
		}
		return catalog.ParseRelMap(raw)
	}
	shared, err := readMap("global/pg_filenode.map")
	if err != nil {
		return fmt.Errorf("global/pg_filenode.map: %w", err)
	}
	dec := catalog.NewDecoder(v)
	page := make([]byte, b.BlockSize())
	var items []tuple.Item
	scan := func(loc decode.RelFileLocator, each func(tup []byte)) error {
		n, err := b.NBlocks(loc, decode.ForkMain)
		if err != nil {
			return err
		}
		for blk := uint32(0); blk < n; blk++ {
			if err := b.ReadBlock(loc, decode.ForkMain, blk, page); err != nil {
				return err
			}
			if isZero(page) {
				continue
			}
			if items, err = tuple.PageItems(items[:0], page); err != nil {
				continue // a torn page of the backup: the WAL's image replaces it
			}
			for _, it := range items {
				each(it.Tuple)
			}
		}
		return nil
	}
	dbFile, ok := shared.FileNode(databaseRelationID)
	if !ok {
		return fmt.Errorf("the shared relation map has no pg_database")
	}
	var dbs []catalog.Database
	if err := scan(decode.RelFileLocator{SpcOID: globalTablespace, RelNumber: dbFile}, func(tup []byte) {
		if d, err := dec.Database(tup); err == nil {
			dbs = append(dbs, d)
		}
	}); err != nil {
		return err
	}
	for _, d := range dbs {
		local, err := readMap(fmt.Sprintf("base/%d/pg_filenode.map", d.OID))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		spc := d.Tablespace
		if spc == 0 {
			spc = defaultTablespace
		}
		pgClass, ok := local.FileNode(classRelationID)
		if !ok {
			continue
		}
		var classes []catalog.Class
		if err := scan(decode.RelFileLocator{SpcOID: spc, DBOID: d.OID, RelNumber: pgClass}, func(tup []byte) {
			if c, err := dec.Class(tup); err == nil {
				classes = append(classes, c)
			}
		}); err != nil {
			return err
		}
		each(d, spc, classes)
	}
	return nil
}

// Holds reports whether the replay held the blocks of relation file rel:
// a name resolved at the target to a file it did not hold (a table renamed
// since the backup to the name asked for) needs another replay holding it.
func (r *Replay) Holds(rel decode.RelFileLocator) bool { return r.holds(rel) }

// ErrChecksum: a page of the backup that fails its checksum (data
// checksums on): damaged since the server wrote it. A page written while
// the backup ran is never read from it: the WAL's image of it replaces it.
var ErrChecksum = errors.New("page of the backup fails its checksum")

// checksummed is a Backup that tells whether the cluster has data
// checksums (pg_control's data_checksum_version).
type checksummed interface{ DataChecksums() bool }

// checkPage verifies a page read from the backup when the cluster has data
// checksums.
func (r *Replay) checkPage(rel decode.RelFileLocator, fork decode.ForkNumber, blk uint32, page []byte) error {
	c, ok := r.cfg.Backup.(checksummed)
	if !ok || !c.DataChecksums() || heap.ChecksumOK(page, blk) {
		return nil
	}
	path := fmt.Sprintf("%d/%d/%d", rel.SpcOID, rel.DBOID, rel.RelNumber)
	if p, ok := r.cfg.Backup.(interface {
		RelPath(decode.RelFileLocator, decode.ForkNumber) string
	}); ok {
		path = p.RelPath(rel, fork)
	}
	return &Error{Msg: fmt.Sprintf("%s block %d: pd_checksum %d, computed %d", path, blk, binary.LittleEndian.Uint16(page[8:]), heap.Checksum(page, blk)), Err: ErrChecksum}
}
