package backup

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
)

// relFile matches a relation fork's first segment under base/, global/ or
// a tablespace, and gives its parts.
var relFile = regexp.MustCompile(`^(?:base/(\d+)|global|pg_tblspc/(\d+)/PG_\d+_\d+/(\d+))/(\d+)(_fsm|_vm|_init)?$`)

// locOf is the RelFileLocator and fork of a relation file's path.
func locOf(name string) (decode.RelFileLocator, decode.ForkNumber, bool) {
	m := relFile.FindStringSubmatch(name)
	if m == nil {
		return decode.RelFileLocator{}, 0, false
	}
	num := func(s string) uint32 { n, _ := strconv.ParseUint(s, 10, 32); return uint32(n) }
	var loc decode.RelFileLocator
	switch {
	case m[1] != "":
		loc = decode.RelFileLocator{SpcOID: defaultTablespaceOID, DBOID: num(m[1]), RelNumber: num(m[4])}
	case m[2] != "":
		loc = decode.RelFileLocator{SpcOID: num(m[2]), DBOID: num(m[3]), RelNumber: num(m[4])}
	default:
		loc = decode.RelFileLocator{SpcOID: globalTablespaceOID, RelNumber: num(m[4])}
	}
	fork := decode.ForkMain
	switch m[5] {
	case "_fsm":
		fork = decode.ForkFSM
	case "_vm":
		fork = decode.ForkVisibilityMap
	case "_init":
		fork = decode.ForkInit
	}
	return loc, fork, true
}

// treeCounts is what compareTree compared.
type treeCounts struct{ files, relations, blocks int }

// compareTree checks a backup against a directory the real tool made of it
// (oracle): every file of the oracle (but skip's) read with ReadFile is
// byte for byte the same, every relation fork's NBlocks is the oracle's
// size in blocks and each block read with ReadBlock is the oracle's; the
// block after the last gives ErrNoBlock; every file the backup lists is in
// the oracle.
func compareTree(t *testing.T, b *Backup, oracle string, skip func(name string) bool) treeCounts {
	t.Helper()
	var c treeCounts
	buf := make([]byte, b.BlockSize())
	oracleFiles := map[string]bool{}
	err := filepath.WalkDir(oracle, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oracle, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// pg_tblspc/OID: walk what it points to under its own name
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			return filepath.WalkDir(target, func(q string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				sub, _ := filepath.Rel(target, q)
				return compareFile(t, b, rel+"/"+filepath.ToSlash(sub), q, buf, &c, oracleFiles)
			})
		}
		if d.IsDir() {
			return nil
		}
		return compareFile(t, b, rel, p, buf, &c, oracleFiles)
	})
	if err != nil {
		t.Fatal(err)
	}
	// the other way: every file the backup lists is in the oracle
	var walk func(dir string)
	walk = func(dir string) {
		names, err := b.ReadDir(dir)
		if err != nil {
			t.Errorf("ReadDir(%q): %v", dir, err)
			return
		}
		for _, n := range names {
			name := n
			if dir != "." {
				name = dir + "/" + n
			}
			if skip(name) {
				continue
			}
			if _, err := b.ReadDir(name); err == nil {
				walk(name)
				continue
			}
			if !oracleFiles[name] {
				t.Errorf("%s: listed by the backup, not in %s", name, oracle)
			}
		}
	}
	walk(".")
	if c.blocks == 0 || c.relations < 100 {
		t.Fatalf("compared %d relation forks, %d blocks: the oracle %s is not a data directory?", c.relations, c.blocks, oracle)
	}
	return c
}

func compareFile(t *testing.T, b *Backup, name, osPath string, buf []byte, c *treeCounts, seen map[string]bool) error {
	want, err := os.ReadFile(osPath)
	if err != nil {
		return err
	}
	seen[name] = true
	c.files++
	got, err := b.ReadFile(name)
	if err != nil {
		t.Errorf("ReadFile(%s): %v", name, err)
		return nil
	}
	if !bytes.Equal(got, want) {
		t.Errorf("ReadFile(%s): %d bytes differ from %s's %d", name, len(got), osPath, len(want))
		return nil
	}
	loc, fork, ok := locOf(name)
	if !ok {
		return nil
	}
	c.relations++
	if p := b.RelPath(loc, fork); p != name {
		t.Errorf("RelPath(%+v, %d) = %s, want %s", loc, fork, p, name)
	}
	n, err := b.NBlocks(loc, fork)
	if err != nil {
		t.Errorf("NBlocks(%s): %v", name, err)
		return nil
	}
	if int(n) != len(want)/len(buf) {
		t.Errorf("NBlocks(%s) = %d, the file has %d bytes", name, n, len(want))
	}
	for blk := uint32(0); blk < n; blk++ {
		if err := b.ReadBlock(loc, fork, blk, buf); err != nil {
			t.Errorf("ReadBlock(%s, %d): %v", name, blk, err)
			return nil
		}
		if !bytes.Equal(buf, want[int(blk)*len(buf):int(blk+1)*len(buf)]) {
			t.Errorf("ReadBlock(%s, %d) differs from the file", name, blk)
		}
		c.blocks++
	}
	if err := b.ReadBlock(loc, fork, n, buf); !errors.Is(err, ErrNoBlock) {
		t.Errorf("ReadBlock(%s, %d) past the end: %v, want ErrNoBlock", name, n, err)
	}
	return nil
}

func openT(t *testing.T, paths ...string) *Backup {
	t.Helper()
	b, err := Open(paths...)
	if err != nil {
		t.Fatalf("Open(%s): %v", strings.Join(paths, ", "), err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestPlain: pg_basebackup -Fp (its tablespace mapped elsewhere by -T,
// reached through the pg_tblspc symlink) against its own files, and
// Control/Label against pg_controldata and backup_label.
func TestPlain(t *testing.T) {
	w := scenario(t)
	b := openT(t, filepath.Join(w, "plain"))
	if b.Layout() != LayoutPlain {
		t.Errorf("Layout %s", b.Layout())
	}
	c := compareTree(t, b, filepath.Join(w, "plain"), func(string) bool { return false })
	t.Logf("plain: %d files, %d relation forks, %d blocks identical", c.files, c.relations, c.blocks)
	checkControl(t, b, controldata(t, filepath.Join(w, "plain")))
	checkLabelFile(t, b, filepath.Join(w, "plain", "backup_label"))

	// a copy whose tablespace is named by tablespace_map, not a symlink
	// (what a backup taken with pg_backup_start/stop and copied by hand has)
	dir := copyDir(t, filepath.Join(w, "plain"))
	oid := facts["tblspc_oid"]
	if err := os.Remove(filepath.Join(dir, "pg_tblspc", oid)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tablespace_map"), []byte(oid+" "+filepath.Join(w, "plain-ts1")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bm := openT(t, dir)
	c = compareTree(t, bm, filepath.Join(w, "plain"), func(name string) bool { return name == "tablespace_map" })
	t.Logf("plain with tablespace_map: %d files, %d relation forks, %d blocks identical", c.files, c.relations, c.blocks)
}

// TestStoppedCluster: the scenario's own data directory, shut down
// cleanly, is a backup without backup_label: its start and consistent point
// are its last checkpoint's (pg_controldata).
func TestStoppedCluster(t *testing.T) {
	w := scenario(t)
	dir := filepath.Join(w, "data")
	b := openT(t, dir)
	cd := controldata(t, dir)
	checkControl(t, b, cd)
	l := b.Label()
	if l.Method != "pg_control" || l.StartLSN.String() != cd["Latest checkpoint's REDO location"] ||
		l.CheckpointLSN.String() != cd["Latest checkpoint location"] || b.ConsistentLSN().String() != cd["Latest checkpoint location"] {
		t.Errorf("label %+v, consistent at %s; pg_controldata %v", l, b.ConsistentLSN(), cd)
	}
}

// TestTar: pg_basebackup -Ft, uncompressed and compressed by the client and
// by the server with gzip, LZ4 and zstd, against what tar extracts.
func TestTar(t *testing.T) {
	w := scenario(t)
	for _, kind := range []string{"none", "client-gzip", "client-lz4", "client-zstd", "server-gzip", "server-lz4", "server-zstd"} {
		t.Run(kind, func(t *testing.T) {
			b := openT(t, filepath.Join(w, "tar-"+kind))
			if b.Layout() != LayoutTar {
				t.Errorf("Layout %s", b.Layout())
			}
			c := compareTree(t, b, filepath.Join(w, "tar-"+kind+".x"), func(name string) bool {
				// the manifest lies beside the tars, pg_wal in pg_wal.tar
				return name == "backup_manifest" || strings.HasPrefix(name, "pg_wal/")
			})
			t.Logf("tar %s: %d files, %d relation forks, %d blocks identical", kind, c.files, c.relations, c.blocks)
			checkLabelFile(t, b, filepath.Join(w, "tar-"+kind+".x", "backup_label"))
			checkManifestEnd(t, b, filepath.Join(w, "tar-"+kind, "backup_manifest"))
			// the base.tar file itself opens the same backup
			base, _, err := findTars(filepath.Join(w, "tar-"+kind))
			if err != nil {
				t.Fatal(err)
			}
			b2 := openT(t, filepath.Join(w, "tar-"+kind, base))
			l1, l2 := *b.Label(), *b2.Label()
			l1.Path, l2.Path = "", ""
			if b2.SystemID() != b.SystemID() || l1 != l2 {
				t.Errorf("opened by %s: another backup", base)
			}
		})
	}
}

// TestPgBackRest: every backup of the pgBackRest repository (full, diff and
// incr; gz, lz4 bundled, zst, bz2, none) against pgbackrest restore of it.
func TestPgBackRest(t *testing.T) {
	w := scenario(t)
	labels := strings.Fields(facts["pgbr_labels"])
	if len(labels) != 10 {
		t.Fatalf("pgbr_labels %q", facts["pgbr_labels"])
	}
	for i, label := range labels {
		t.Run(label, func(t *testing.T) {
			dir := filepath.Join(w, "pgbr", "backup", "demo", label)
			b := openT(t, dir)
			if b.Layout() != LayoutPgBackRest {
				t.Errorf("Layout %s", b.Layout())
			}
			restored := filepath.Join(w, "pgbr-restore-"+strconv.Itoa(i+1))
			c := compareTree(t, b, restored, func(name string) bool {
				// what restore writes for recovery; tablespace_map is
				// made into pg_tblspc symlinks
				return name == "postgresql.auto.conf" || name == "recovery.signal" || name == "tablespace_map"
			})
			t.Logf("pgBackRest %s: %d files, %d relation forks, %d blocks identical", label, c.files, c.relations, c.blocks)
			checkLabelFile(t, b, filepath.Join(restored, "backup_label"))
			ini, err := readPgBackRestINI(filepath.Join(dir, "backup.manifest"))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := b.ConsistentLSN().String(), jsonStr(ini["backup"]["backup-lsn-stop"]); got != want {
				t.Errorf("ConsistentLSN %s, backup-lsn-stop %s", got, want)
			}
			if got, want := strconv.FormatUint(b.SystemID(), 10), ini["backup:db"]["db-system-id"]; got != want {
				t.Errorf("SystemID %s, db-system-id %s", got, want)
			}
		})
	}
	// block incremental (pgBackRest 2.45's BETA) is refused, by the backup's
	// directory and by the stanza's (its newest backup)
	block := facts["pgbr_block_label"]
	for _, p := range []string{filepath.Join(w, "pgbr", "backup", "demo", block), filepath.Join(w, "pgbr", "backup", "demo")} {
		_, err := Open(p)
		wantErr(t, "Open of a block incremental backup", err, ErrUnsupported, block)
	}
}

// TestBarman: the Barman backup (its data/ and the tablespace beside it)
// against barman recover of it.
func TestBarman(t *testing.T) {
	w := scenario(t)
	dir := filepath.Join(w, "barman", "pg", "base", facts["barman_id"])
	b := openT(t, dir)
	if b.Layout() != LayoutBarman {
		t.Errorf("Layout %s", b.Layout())
	}
	barmanSkip := func(name string) bool {
		// what barman recover adds or rewrites, and the WAL it copies
		return name == ".barman-recover.info" || name == "postgresql.conf" || name == "postgresql.auto.conf" ||
			strings.HasSuffix(name, ".origin") || strings.HasPrefix(name, "backup_manifest") || name == "pg_wal" ||
			strings.HasPrefix(name, "pg_wal/") || name == "tablespace_map"
	}
	c := compareTree(t, b, filepath.Join(w, "barman-restore"), barmanSkip)
	t.Logf("Barman: %d files, %d relation forks, %d blocks identical", c.files, c.relations, c.blocks)
	checkLabelFile(t, b, filepath.Join(w, "barman-restore", "backup_label"))
	checkManifestEnd(t, b, filepath.Join(dir, "data", "backup_manifest"))
	if b.Label().StopUpperBound {
		t.Errorf("the stop LSN is only an upper bound: the .backup history file was not read")
	}
	// backup_compression = gzip: the tars in data/
	dirz := filepath.Join(w, "barman", "pgz", "base", facts["barman_gz_id"])
	bz := openT(t, dirz)
	if bz.Layout() != LayoutBarman {
		t.Errorf("Layout %s", bz.Layout())
	}
	c = compareTree(t, bz, filepath.Join(w, "barman-restore-gz"), barmanSkip)
	t.Logf("Barman, gzip: %d files, %d relation forks, %d blocks identical", c.files, c.relations, c.blocks)
	checkLabelFile(t, bz, filepath.Join(w, "barman-restore-gz", "backup_label"))
	checkManifestEnd(t, bz, filepath.Join(dirz, "data", "backup_manifest"))

	// a server directory opens its newest backup
	b2 := openT(t, filepath.Join(w, "barman", "pg"))
	if b2.Layout() != LayoutBarman || b2.Label().StartLSN != b.Label().StartLSN {
		t.Errorf("the server directory opened %s %s", b2.Layout(), b2.Label().StartLSN)
	}
}

// checkLabelFile compares Label with a backup_label file the real tool wrote.
func checkLabelFile(t *testing.T, b *Backup, path string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseBackupLabel(string(text))
	if err != nil {
		t.Fatal(err)
	}
	got := b.Label()
	if got.StartLSN != want.StartLSN || got.CheckpointLSN != want.CheckpointLSN || got.StartTLI != want.StartTLI {
		t.Errorf("Label start %s checkpoint %s TLI %d; backup_label %s %s %d", got.StartLSN, got.CheckpointLSN, got.StartTLI,
			want.StartLSN, want.CheckpointLSN, want.StartTLI)
	}
	if got.Tool == "" && (got.Label != want.Label || got.StartTime != want.StartTime) {
		t.Errorf("Label %q at %q; backup_label %q at %q", got.Label, got.StartTime, want.Label, want.StartTime)
	}
	// the label's start is where the checkpoint copied in pg_control redoes from
	c, _ := b.Control()
	if c.CheckPointCopy.Redo != got.StartLSN || c.Checkpoint != got.CheckpointLSN {
		t.Errorf("pg_control checkpoint %s redo %s; label %s %s", c.Checkpoint, c.CheckPointCopy.Redo, got.CheckpointLSN, got.StartLSN)
	}
}

// checkManifestEnd: ConsistentLSN is the manifest's last WAL range's end.
func checkManifestEnd(t *testing.T, b *Backup, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"End-LSN": "([0-9A-F]+/[0-9A-F]+)"`).FindAllSubmatch(raw, -1)
	if len(m) == 0 {
		t.Fatalf("%s: no End-LSN", path)
	}
	if got, want := b.ConsistentLSN().String(), string(m[len(m)-1][1]); got != want {
		t.Errorf("ConsistentLSN %s, backup_manifest's End-LSN %s", got, want)
	}
}

// checkControl compares Control with pg_controldata's output.
func checkControl(t *testing.T, b *Backup, cd map[string]string) {
	t.Helper()
	c, err := b.Control()
	if err != nil {
		t.Fatal(err)
	}
	yn := func(v bool, yes, no string) string {
		if v {
			return yes
		}
		return no
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int32) string { return strconv.Itoa(int(v)) }
	k := c.CheckPointCopy
	got := map[string]string{
		"pg_control version number":             u(uint64(c.ControlVersion)),
		"Catalog version number":                u(uint64(c.CatalogVersion)),
		"Database system identifier":            u(c.SystemID),
		"Database cluster state":                c.State.String(),
		"Latest checkpoint location":            c.Checkpoint.String(),
		"Latest checkpoint's REDO location":     k.Redo.String(),
		"Latest checkpoint's TimeLineID":        u(uint64(k.ThisTimeLineID)),
		"Latest checkpoint's PrevTimeLineID":    u(uint64(k.PrevTimeLineID)),
		"Latest checkpoint's full_page_writes":  yn(k.FullPageWrites, "on", "off"),
		"Latest checkpoint's NextXID":           u(k.NextXID>>32) + ":" + u(k.NextXID&0xFFFFFFFF),
		"Latest checkpoint's NextOID":           u(uint64(k.NextOID)),
		"Latest checkpoint's NextMultiXactId":   u(uint64(k.NextMulti)),
		"Latest checkpoint's NextMultiOffset":   u(uint64(k.NextMultiOffset)),
		"Latest checkpoint's oldestXID":         u(uint64(k.OldestXID)),
		"Latest checkpoint's oldestXID's DB":    u(uint64(k.OldestXIDDB)),
		"Latest checkpoint's oldestActiveXID":   u(uint64(k.OldestActiveXID)),
		"Latest checkpoint's oldestMultiXid":    u(uint64(k.OldestMulti)),
		"Latest checkpoint's oldestMulti's DB":  u(uint64(k.OldestMultiDB)),
		"Latest checkpoint's oldestCommitTsXid": u(uint64(k.OldestCommitTsXID)),
		"Latest checkpoint's newestCommitTsXid": u(uint64(k.NewestCommitTsXID)),
		"Fake LSN counter for unlogged rels":    c.UnloggedLSN.String(),
		"Minimum recovery ending location":      c.MinRecoveryPoint.String(),
		"Min recovery ending loc's timeline":    u(uint64(c.MinRecoveryPointTLI)),
		"Backup start location":                 c.BackupStartPoint.String(),
		"Backup end location":                   c.BackupEndPoint.String(),
		"End-of-backup record required":         yn(c.BackupEndRequired, "yes", "no"),
		"wal_level setting":                     c.WALLevel.String(),
		"wal_log_hints setting":                 yn(c.WALLogHints, "on", "off"),
		"max_connections setting":               i(c.MaxConnections),
		"max_worker_processes setting":          i(c.MaxWorkerProcesses),
		"max_wal_senders setting":               i(c.MaxWALSenders),
		"max_prepared_xacts setting":            i(c.MaxPreparedXacts),
		"max_locks_per_xact setting":            i(c.MaxLocksPerXact),
		"track_commit_timestamp setting":        yn(c.TrackCommitTimestamp, "on", "off"),
		"Maximum data alignment":                u(uint64(c.MaxAlign)),
		"Database block size":                   u(uint64(c.BlockSize)),
		"Blocks per segment of large relation":  u(uint64(c.RelSegSize)),
		"WAL block size":                        u(uint64(c.XLogBlockSize)),
		"Bytes per WAL segment":                 u(uint64(c.XLogSegSize)),
		"Maximum length of identifiers":         u(uint64(c.NameDataLen)),
		"Maximum columns in an index":           u(uint64(c.IndexMaxKeys)),
		"Maximum size of a TOAST chunk":         u(uint64(c.ToastMaxChunkSize)),
		"Size of a large-object chunk":          u(uint64(c.LOBlockSize)),
		"Float8 argument passing":               yn(c.Float8ByVal, "by value", "by reference"),
		"Data page checksum version":            u(uint64(c.DataChecksumVersion)),
		"Mock authentication nonce":             hexString(c.MockAuthNonce[:]),
	}
	n := 0
	var keys []string
	for key := range got {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		want, ok := cd[key]
		if !ok || got[key] == "" {
			continue
		}
		n++
		if got[key] != want {
			t.Errorf("%s: %q, pg_controldata %q", key, got[key], want)
		}
	}
	if n < 40 {
		t.Errorf("compared %d fields with pg_controldata", n)
	}
	if c.FloatFormat != 1234567.0 {
		t.Errorf("floatFormat %v", c.FloatFormat)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
