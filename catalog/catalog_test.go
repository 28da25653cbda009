package catalog_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

func TestParseQualifiedName(t *testing.T) {
	// as PostgreSQL splits them (SplitIdentifierString); catalog's oracle
	// test resolves several of them against a server's ::regclass
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`t`, []string{"t"}},
		{`Public.T`, []string{"public", "t"}},
		{` public . "T" `, []string{"public", "T"}},
		{`"a.b"."c""d"`, []string{"a.b", `c"d`}},
		{`db.s.t`, []string{"db", "s", "t"}},
		{strings.Repeat("x", 70), []string{strings.Repeat("x", 63)}},
		{`"` + strings.Repeat("é", 40) + `"`, []string{strings.Repeat("é", 31)}}, // cut at a character boundary
	} {
		got, err := catalog.ParseQualifiedName(tc.in)
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `  `, `a.`, `.a`, `a..b`, `"a`, `""`, `a b`, `"a"b`} {
		if got, err := catalog.ParseQualifiedName(bad); !errors.Is(err, catalog.ErrName) {
			t.Errorf("%q: %q %v, want ErrName", bad, got, err)
		}
	}
}

// relMapFile builds a RelMapFile of a version with its CRC.
func relMapFile(maxMappings int, m []catalog.Mapping) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0x592717)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m)))
	for k := 0; k < maxMappings; k++ {
		var x catalog.Mapping
		if k < len(m) {
			x = m[k]
		}
		b = binary.LittleEndian.AppendUint32(b, x.OID)
		b = binary.LittleEndian.AppendUint32(b, x.FileNode)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	if maxMappings == 62 {
		b = append(b, 0, 0, 0, 0)
	}
	return b
}

func TestRelMapMalformed(t *testing.T) {
	good := relMapFile(64, []catalog.Mapping{{1259, 16500}})
	if m, err := catalog.ParseRelMap(good); err != nil || m.MaxMappings != 64 {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"size":  good[:520],
		"magic": func() []byte { c := append([]byte(nil), good...); c[0] ^= 1; return c }(),
		"crc":   func() []byte { c := append([]byte(nil), good...); c[12] ^= 1; return c }(),
		"count": relMapFile(62, make([]catalog.Mapping, 63)),
	} {
		if _, err := catalog.ParseRelMap(b); !errors.Is(err, catalog.ErrRelMap) {
			t.Errorf("%s: %v, want ErrRelMap", name, err)
		}
	}
	upd := binary.LittleEndian.AppendUint32(nil, 5)
	upd = binary.LittleEndian.AppendUint32(upd, 1663)
	upd = binary.LittleEndian.AppendUint32(upd, uint32(len(good)+1))
	if _, err := catalog.ParseRelMapUpdate(append(upd, good...)); !errors.Is(err, catalog.ErrRelMap) {
		t.Errorf("nbytes off by one: %v", err)
	}
}

func TestLayoutsEveryVersion(t *testing.T) {
	for v := xlog.V10; v <= xlog.V18; v++ {
		for _, c := range []string{"pg_class", "pg_namespace", "pg_attribute", "pg_type", "pg_enum", "pg_index", "pg_database", "pg_tablespace"} {
			l, err := catalog.LayoutOf(c, v)
			if err != nil {
				t.Fatal(err)
			}
			// pg_attribute and pg_index have no oid; the others keep it in
			// the header before 12 and as their first column from 12
			withOID := c != "pg_attribute" && c != "pg_index"
			if hasOID := l.Column("oid") == 0; hasOID != (withOID && v >= xlog.V12) || l.OIDInHeader != (withOID && v < xlog.V12) {
				t.Errorf("%s %v: oid column %v, in the header %v", c, v, hasOID, l.OIDInHeader)
			}
		}
	}
	if _, err := catalog.LayoutOf("pg_class", 9); !errors.Is(err, catalog.ErrVersion) {
		t.Errorf("version 9: %v", err)
	}
}

// bkiFiles returns the postgres.bki of each installed build, by major.
func bkiFiles() map[int]string {
	out := map[int]string{}
	if _, err := os.Stat("/usr/share/postgresql/15/postgres.bki"); err == nil {
		out[15] = "/usr/share/postgresql/15/postgres.bki"
	}
	for major := 10; major <= 18; major++ {
		if bin, _ := pgtest.Bin(major); bin != "" {
			p := filepath.Join(bin, "..", "share", "postgresql", "postgres.bki")
			if _, err := os.Stat(p); err == nil {
				out[major] = p
			}
		}
	}
	return out
}

// TestLayoutsMatchBKI reads each installed build's postgres.bki (made by
// genbki.pl from that version's pg_*.h) and checks every catalog's columns,
// in order, with their types' storage.
func TestLayoutsMatchBKI(t *testing.T) {
	files := bkiFiles()
	if len(files) == 0 {
		pgtest.SkipOrFail(t, "no postgres.bki of any PostgreSQL build (apt-get install postgresql-15; scripts/embedded-pg.sh)")
	}
	create := regexp.MustCompile(`^create (pg_\w+) (\d+)`)
	col := regexp.MustCompile(`^ (\w+) = (\S+)`)
	checked := 0
	for major, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		var cur *catalog.Layout
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if m := create.FindStringSubmatch(line); m != nil {
				cur, n = nil, 0
				if l, err := catalog.LayoutOf(m[1], xlog.Version(major)); err == nil {
					cur = l
					if id, _ := strconv.Atoi(m[2]); uint32(id) != l.RelID {
						t.Errorf("%d %s: oid %s, layout %d", major, m[1], m[2], l.RelID)
					}
				}
				continue
			}
			if cur == nil {
				continue
			}
			if line == " )" {
				if n != len(cur.Attrs) {
					t.Errorf("%d %s: %d columns in the bki, %d in the layout", major, cur.Catalog, n, len(cur.Attrs))
				}
				checked++
				cur = nil
				continue
			}
			m := col.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if n >= len(cur.Attrs) || cur.Attrs[n].Name != m[1] {
				t.Errorf("%d %s: column %d is %s in the bki", major, cur.Catalog, n+1, m[1])
			} else if typ := typeName(cur.Attrs[n]); typ != strings.ReplaceAll(strings.ReplaceAll(m[2], "aclitem[]", "_aclitem"), "text[]", "_text") {
				t.Errorf("%d %s.%s: type %s in the bki, layout %s", major, cur.Catalog, m[1], m[2], typ)
			}
			n++
		}
		f.Close()
	}
	if checked != 9*len(files) { // the nine catalogs of relationOIDs
		t.Errorf("%d catalogs checked in %d bki files", checked, len(files))
	}
	t.Logf("%d catalog layouts of %d versions equal their postgres.bki", checked, len(files))
}

// typeName names a column's type by its oid, as the bki does.
func typeName(a tuple.Attr) string {
	return map[uint32]string{16: "bool", 18: "char", 19: "name", 21: "int2", 22: "int2vector", 23: "int4", 24: "regproc",
		25: "text", 26: "oid", 28: "xid", 30: "oidvector", 194: "pg_node_tree", 700: "float4", 1009: "_text",
		1034: "_aclitem", 2277: "anyarray"}[a.TypeOID]
}

// TestDescUnknownRelation: a relation the catalog does not have is
// ErrNotFound, not an empty descriptor.
func TestDescUnknownRelation(t *testing.T) {
	cat := catalog.New(xlog.V15, 5)
	if desc, err := cat.Desc(16384); !errors.Is(err, catalog.ErrNotFound) || desc != nil || !strings.Contains(err.Error(), "16384") {
		t.Errorf("Desc(16384) of an empty catalog: %v, %v; want ErrNotFound naming 16384", desc, err)
	}
}
