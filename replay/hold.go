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
	readMap := func(name string) (*catalog.RelMap, error) {
		raw, err := b.ReadFile(name)
		if err != nil {
			return nil, err
		}
		return catalog.ParseRelMap(raw)
	}
	shared, err := readMap("global/pg_filenode.map")
	if err != nil {
		return nil, fmt.Errorf("global/pg_filenode.map: %w", err)
	}
	dec := catalog.NewDecoder(v)
	scan := func(loc decode.RelFileLocator, each func(tup []byte)) error {
		n, err := b.NBlocks(loc, decode.ForkMain)
		if err != nil {
			return err
		}
		page := make([]byte, b.BlockSize())
		var items []tuple.Item
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
		return nil, fmt.Errorf("the shared relation map has no pg_database")
	}
	var dbs []catalog.Database
	if err := scan(decode.RelFileLocator{SpcOID: globalTablespace, RelNumber: dbFile}, func(tup []byte) {
		if d, err := dec.Database(tup); err == nil {
			dbs = append(dbs, d)
		}
	}); err != nil {
		return nil, err
	}
	var out []decode.RelFileLocator
	seen := map[decode.RelFileLocator]bool{}
	for _, d := range dbs {
		local, err := readMap(fmt.Sprintf("base/%d/pg_filenode.map", d.OID))
		if errors.Is(err, fs.ErrNotExist) {
			continue // in another tablespace, or dropped: the WAL says
		}
		if err != nil {
			return nil, err
		}
		spc := d.Tablespace
		if spc == 0 {
			spc = defaultTablespace
		}
		classFile, ok := local.FileNode(classRelationID)
		if !ok {
			continue
		}
		byOID := map[uint32][]catalog.Class{}
		var named []catalog.Class
		if err := scan(decode.RelFileLocator{SpcOID: spc, DBOID: d.OID, RelNumber: classFile}, func(tup []byte) {
			c, err := dec.Class(tup)
			if err != nil {
				return
			}
			byOID[c.OID] = append(byOID[c.OID], c)
			if c.Name == relname {
				named = append(named, c)
			}
		}); err != nil {
			return nil, err
		}
		add := func(c catalog.Class) {
			if c.RelFileNode == 0 {
				return // mapped: a catalog, held anyway
			}
			s := c.Tablespace
			if s == 0 {
				s = spc
			}
			loc := decode.RelFileLocator{SpcOID: s, DBOID: d.OID, RelNumber: c.RelFileNode}
			if c.IsShared {
				loc.DBOID = 0
			}
			if !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
		for _, c := range named {
			add(c)
			for _, t := range byOID[c.ToastRelid] {
				add(t)
			}
		}
	}
	return out, nil
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
