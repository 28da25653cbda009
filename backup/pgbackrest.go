package backup

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A pgBackRest backup (pgBackRest 2.x, src/info/manifest.c): backup.manifest
// lists every file of the data directory in [target:file] as
// "pg_data/NAME" or "pg_tblspc/OID/..." = {"size", "checksum" (SHA-1 of the
// file), "reference" (the earlier backup of the set holding it, absent for
// this backup), "repo-size", and for a bundled file "bni"/"bno" (bundle
// number, offset)}; [target:file:default] gives the values left out. A file
// lies at REPO/backup/STANZA/REFERENCE/NAME plus the extension of the set's
// compress-type (one for a whole set: pgBackRest refuses to change it in a
// diff or incr backup), or inside REFERENCE/bundle/BNI at BNO, repo-size
// bytes; an empty file is not stored. An uncompressed file is read in place;
// a compressed one is decompressed into the cache on first use and its
// SHA-1 checked against the manifest.

// pgbrFile is one [target:file] entry.
type pgbrFile struct {
	size      int64
	checksum  string
	reference string // the backup holding the file ("" = this one)
	repoSize  int64
	bundle    int64 // bni, 0 if not bundled
	bundleOff int64 // bno
}

// pgbrStore is a pgBackRest backup.
type pgbrStore struct {
	backup   string
	dir      string // REPO/backup/STANZA/LABEL
	label    string
	setDir   string // REPO/backup/STANZA
	tree     Tree
	comp     compression
	ext      string
	files    map[string]*pgbrFile // by data-directory-relative name
	children map[string][]string
	cache    *extractCache
	handles  *handles
}

var pgbrCompress = map[string]struct {
	comp compression
	ext  string
}{
	"none": {compNone, ""}, "gz": {compGzip, ".gz"}, "lz4": {compLZ4, ".lz4"},
	"zst": {compZstd, ".zst"}, "bz2": {compBzip2, ".bz2"},
}

func openPgBackRest(backup, dir string, cache *extractCache) (*pgbrStore, error) {
	return openPgBackRestIn(localTree{}, backup, dir, cache)
}

// openPgBackRestIn opens the pgBackRest backup directory dir of a tree.
func openPgBackRestIn(t Tree, backup, dir string, cache *extractCache) (*pgbrStore, error) {
	mf := t.Join(dir, "backup.manifest")
	if _, err := t.Stat(mf); err != nil {
		mf += ".copy"
	}
	setDir, label := lastElem(dir)
	if b, err := readTreeFile(t, t.Join(setDir, "backup.info"), 256<<20); err == nil && strings.Contains(string(b), "cipher-pass") {
		return nil, errorf(backup, mf, -1, ErrUnsupported, "an encrypted pgBackRest repository")
	}
	raw, err := readTreeFile(t, mf, 256<<20)
	if err != nil {
		return nil, errorf(backup, mf, -1, ErrMissingFile, "%v", err)
	}
	if err := checkPgBackRestINI(raw); err != nil {
		return nil, errorf(backup, mf, -1, ErrDamaged, "%v", err)
	}
	ini, err := readPgBackRestINIIn(t, mf)
	if err != nil {
		return nil, errorf(backup, mf, -1, ErrDamaged, "%v", err)
	}
	s := &pgbrStore{backup: backup, dir: dir, label: label, setDir: setDir, tree: t,
		files: map[string]*pgbrFile{}, children: map[string][]string{}, cache: cache, handles: newTreeHandles(t, 64)}
	ct := jsonStr(ini["backup:option"]["option-compress-type"])
	if ct == "" {
		ct = "none"
		if jsonStr(ini["backup:option"]["option-compress"]) == "true" {
			ct = "gz" // before compress-type (2.27)
		}
	}
	c, ok := pgbrCompress[ct]
	if !ok {
		return nil, errorf(backup, mf, -1, ErrUnsupported, "compress-type %q", ct)
	}
	s.comp, s.ext = c.comp, c.ext
	files := ini["target:file"]
	if len(files) == 0 {
		return nil, errorf(backup, mf, -1, ErrDamaged, "no [target:file] section")
	}
	kids := map[string]map[string]bool{}
	for key, v := range files {
		var raw struct {
			Size      *int64 `json:"size"`
			Checksum  string `json:"checksum"`
			Reference string `json:"reference"`
			RepoSize  *int64 `json:"repo-size"`
			Bni       int64  `json:"bni"`
			Bno       int64  `json:"bno"`
			Bi        *int64 `json:"bi"`
			Bim       *int64 `json:"bim"`
		}
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			return nil, errorf(backup, mf, -1, ErrDamaged, "[target:file] %s: %v", key, err)
		}
		if raw.Bi != nil || raw.Bim != nil {
			return nil, errorf(backup, mf, -1, ErrUnsupported, "%s: pgBackRest block incremental (repo-block)", key)
		}
		if raw.Size == nil || *raw.Size < 0 || raw.Bni < 0 || raw.Bno < 0 {
			return nil, errorf(backup, mf, -1, ErrDamaged, "[target:file] %s: no size, or a negative one", key)
		}
		name := ""
		switch {
		case strings.HasPrefix(key, "pg_data/"):
			name = strings.TrimPrefix(key, "pg_data/")
		case strings.HasPrefix(key, "pg_tblspc/"):
			name = key
		default:
			continue
		}
		n, ok := cleanName(name)
		if !ok || n == "." || strings.ContainsAny(raw.Reference, "/\\") || raw.Reference == ".." {
			return nil, errorf(backup, mf, -1, ErrDamaged, "[target:file] %s: bad name or reference", key)
		}
		f := &pgbrFile{size: *raw.Size, checksum: raw.Checksum, reference: raw.Reference, bundle: raw.Bni, bundleOff: raw.Bno}
		if raw.RepoSize != nil {
			f.repoSize = *raw.RepoSize
		} else if s.comp == compNone {
			f.repoSize = f.size
		}
		s.files[n] = f
		for n != "." {
			dir, base := path.Dir(n), path.Base(n)
			if kids[dir] == nil {
				kids[dir] = map[string]bool{}
			}
			if kids[dir][base] {
				break
			}
			kids[dir][base] = true
			n = dir
		}
	}
	for p := range ini["target:path"] {
		name := strings.TrimPrefix(p, "pg_data/")
		if p == "pg_data" {
			continue
		}
		if n, ok := cleanName(name); ok && kids[n] == nil {
			kids[n] = map[string]bool{}
			for d := n; d != "."; d = path.Dir(d) {
				pd := path.Dir(d)
				if kids[pd] == nil {
					kids[pd] = map[string]bool{}
				}
				kids[pd][path.Base(d)] = true
			}
		}
	}
	for d, m := range kids {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		s.children[d] = names
	}
	return s, nil
}

// repoPath is where a file's stored bytes are: its own file, or its bundle.
func (s *pgbrStore) repoPath(name string, f *pgbrFile) string {
	owner := s.label
	if f.reference != "" {
		owner = f.reference
	}
	if f.bundle != 0 {
		return s.tree.Join(s.setDir, owner, "bundle", fmt.Sprint(f.bundle))
	}
	key := "pg_data/" + name
	if strings.HasPrefix(name, "pg_tblspc/") {
		key = name
	}
	return s.tree.Join(s.setDir, owner, key) + s.ext
}

func (s *pgbrStore) stat(name string) (int64, error) {
	f, ok := s.files[name]
	if !ok {
		return 0, notExist(name)
	}
	return f.size, nil
}

func (s *pgbrStore) open(name string) (file, error) {
	f, ok := s.files[name]
	if !ok {
		return nil, notExist(name)
	}
	if f.size == 0 {
		return newMemFile(nil), nil
	}
	rp := s.repoPath(name, f)
	osf, osSize, err := s.handles.get(rp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			what := "its file"
			if f.reference != "" {
				what = "the file in referenced backup " + f.reference
			}
			if f.bundle != 0 {
				what = fmt.Sprintf("bundle %d", f.bundle)
			}
			return nil, errorf(s.backup, rp, -1, ErrMissingFile, "%s: %s is missing", name, what)
		}
		return nil, err
	}
	off, stored := int64(0), osSize
	if f.bundle != 0 {
		off, stored = f.bundleOff, f.repoSize
		if off+stored > osSize {
			return nil, errorf(s.backup, rp, off, ErrDamaged, "%s: %d bytes in a bundle of %d", name, stored, osSize)
		}
	}
	if s.comp == compNone {
		if stored != f.size {
			return nil, errorf(s.backup, rp, off, ErrDamaged, "%s: %d bytes stored, the manifest says %d", name, stored, f.size)
		}
		return sectionFile{osf, off, f.size}, nil
	}
	key := rp + "\x00" + fmt.Sprint(off)
	if c := s.cache.get(key); c != nil {
		return c, nil
	}
	zr, err := decompress(s.comp, bufio.NewReader(io.NewSectionReader(osf, off, stored)))
	if err != nil {
		return nil, errorf(s.backup, rp, off, ErrDamaged, "%s: %s: %v", name, s.comp, err)
	}
	defer zr.Close()
	h := sha1.New()
	c, err := s.cache.put(key, io.TeeReader(zr, h), f.size)
	if err != nil {
		return nil, errorf(s.backup, rp, off, ErrDamaged, "%s: decompressing %s: %v", name, s.comp, err)
	}
	if err := checkSum(h, f.checksum); err != nil {
		return nil, errorf(s.backup, rp, off, ErrDamaged, "%s: %v", name, err)
	}
	return c, nil
}

// checkPgBackRestINI checks an INI file of pgBackRest against its
// [backrest] backrest-checksum: the SHA-1 of its sections and keys, in file
// order, rendered as one JSON object ({"section":{"key":value,...},...},
// the values as stored; pgBackRest's info.c), the checksum itself left out.
// A manifest cut short lacks it.
func checkPgBackRestINI(raw []byte) error {
	var want string
	var body bytes.Buffer
	body.WriteByte('{')
	section, sectionOpen, firstSection, firstKey := "", false, true, true
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			if sectionOpen {
				body.WriteByte('}')
				sectionOpen = false
			}
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("line %q is not key=value", line)
		}
		if section == "backrest" && k == "backrest-checksum" {
			want = jsonStr(v)
			continue
		}
		if !sectionOpen {
			if !firstSection {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, "%q:{", section)
			sectionOpen, firstSection, firstKey = true, false, true
		}
		if !firstKey {
			body.WriteByte(',')
		}
		firstKey = false
		fmt.Fprintf(&body, "%q:%s", k, v)
	}
	if sectionOpen {
		body.WriteByte('}')
	}
	body.WriteByte('}')
	if want == "" {
		return errors.New("no backrest-checksum (cut short?)")
	}
	if got := fmt.Sprintf("%x", sha1.Sum(body.Bytes())); got != want {
		return fmt.Errorf("backrest-checksum %s, the content's is %s", want, got)
	}
	return nil
}

func checkSum(h hash.Hash, want string) error {
	if want == "" {
		return nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("SHA-1 %s, the manifest says %s", got, want)
	}
	return nil
}

func (s *pgbrStore) list(dir string) ([]string, error) {
	kids, ok := s.children[dir]
	if !ok {
		return nil, notExist(dir)
	}
	return append([]string(nil), kids...), nil
}

func (s *pgbrStore) close() error { s.handles.closeAll(); return nil }

// openBarman opens a Barman backup directory (SERVER/base/ID): its data/ is
// a plain data directory; tablespaces are ID/OID beside it (what Barman's
// recover copies), found when data/pg_tblspc/OID does not resolve.
func openBarman(backup, dir string) (*dirStore, error) {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "global", "pg_control")); err != nil {
		return nil, errorf(backup, filepath.Join(data, "global", "pg_control"), -1, ErrMissingFile, "Barman backup without data/")
	}
	tblspc := map[string]string{}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() && isOID(e.Name()) {
				tblspc[e.Name()] = filepath.Join(dir, e.Name())
			}
		}
	}
	if m, err := os.ReadFile(filepath.Join(data, "tablespace_map")); err == nil {
		for oid, p := range readTablespaceMap(m) {
			if _, ok := tblspc[oid]; !ok {
				tblspc[oid] = p
			}
		}
	}
	return newDirStore(data, tblspc), nil
}
