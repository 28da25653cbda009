package names

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/walscope/walscope/decode"
)

// Catalog maps relfilenodes to relation names, from a CSV export of pg_class
// made in each database with:
//
//	psql -d DB -c "\copy (select d.oid as database, d.datname, c.reltablespace, c.relfilenode, n.nspname, c.relname
//	  from pg_class c join pg_namespace n on n.oid = c.relnamespace
//	  join pg_database d on d.datname = current_database() where c.relfilenode <> 0) to 'catalog.csv' csv header"
//
// Columns are found by name; only relfilenode and relname are required.
// Relations mapped by pg_filenode.map (relfilenode 0 in pg_class) are not in
// it. With database and datname columns it names the databases too (kept
// under relfilenode 0, which no relation has in it).
type Catalog map[catalogKey]string

type catalogKey struct{ db, rel uint32 }

// databaseKey is where a Catalog keeps database db's name.
func databaseKey(db uint32) catalogKey { return catalogKey{db, 0} }

// maxCatalogLine bounds one line of a catalog: a row is a few numbers and
// names of at most NAMEDATALEN-1 bytes, so a longer line means the file is
// not a catalog export (a device such as /dev/zero has no line end at all,
// and reading it whole never ended).
const maxCatalogLine = 64 << 10

// ReadCatalog reads a catalog CSV, a row at a time (memory grows with the
// relations named, not the file).
func ReadCatalog(r io.Reader) (Catalog, error) {
	cr := csv.NewReader(&lineBound{r: r, max: maxCatalogLine})
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("empty catalog")
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, c := range header {
		col[strings.ToLower(strings.TrimSpace(c))] = i
	}
	fn, ok1 := col["relfilenode"]
	name, ok2 := col["relname"]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("catalog needs relfilenode and relname columns, has %v", header)
	}
	db, hasDB := col["database"]
	ns, hasNS := col["nspname"]
	dn, hasDatname := col["datname"]
	cat := Catalog{}
	for {
		r, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(r) <= max(fn, name) {
			continue
		}
		rel, err := strconv.ParseUint(r[fn], 10, 32)
		if err != nil {
			continue
		}
		var d uint64
		if hasDB && db < len(r) {
			d, _ = strconv.ParseUint(r[db], 10, 32)
		}
		n := r[name]
		if hasNS && ns < len(r) && r[ns] != "" {
			n = r[ns] + "." + n
		}
		if rel == 0 {
			continue // mapped: not named by relfilenode (and key 0 is a database's)
		}
		cat[catalogKey{uint32(d), uint32(rel)}] = strings.Clone(n) // r is reused
		if hasDB && hasDatname && dn < len(r) && d != 0 && r[dn] != "" {
			cat[databaseKey(uint32(d))] = strings.Clone(r[dn])
		}
	}
	return cat, nil
}

// Name returns the relation's name, or "".
func (c Catalog) Name(r decode.RelFileLocator) string {
	if c == nil || r.RelNumber == 0 {
		return ""
	}
	if n, ok := c[catalogKey{r.DBOID, r.RelNumber}]; ok {
		return n
	}
	return c[catalogKey{0, r.RelNumber}]
}

// DatabaseName returns the name of database oid (the catalog's datname
// column), or "".
func (c Catalog) DatabaseName(oid uint32) string {
	if c == nil || oid == 0 {
		return ""
	}
	return c[databaseKey(oid)]
}

// lineBound reads r, failing once a line runs longer than max bytes.
type lineBound struct {
	r    io.Reader
	max  int
	line int // bytes since the last line end
}

func (l *lineBound) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for chunk := p[:n]; len(chunk) > 0; {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			l.line += len(chunk)
			break
		}
		if l.line+i > l.max {
			l.line += i
			break
		}
		l.line, chunk = 0, chunk[i+1:]
	}
	if l.line > l.max {
		return 0, fmt.Errorf("a line longer than %d bytes: not a CSV export of pg_class", l.max)
	}
	return n, err
}
