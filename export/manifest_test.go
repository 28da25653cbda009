package export

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// testBatch is a valid manifest of batch id with segs segments.
func testBatch(id, segs int) *Batch {
	start, end := xlog.LSN(uint64(id)<<24).String(), xlog.LSN(uint64(id+1)<<24).String()
	b := &Batch{ID: id, Walscope: "test", SchemaVersion: SchemaVersion, Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Start: start, End: end, EndTimeline: 1,
		Timelines: []TimelineRange{{Timeline: 1, Start: start, End: end}},
		Days:      []string{"2026-12-01"},
		Tables: map[string]BatchTable{TableRecords: {Rows: 10, Files: []MarkerFile{
			{Path: BatchDir(TableRecords, id) + "/day=2026-12-01/part-0000000001000028.parquet", Rows: 10}}}},
		LastCycle: &CycleCarry{Redo: "0/1000028", Checkpoint: "0/1000060", Online: true, WalLevel: "replica", Cause: "time"},
	}
	for i := range segs {
		b.Segments = append(b.Segments, SegmentEntry{Name: fmt.Sprintf("00000001%08X%08X", (id*segs+i)>>8, (id*segs+i)&0xFF), Size: 16 << 20,
			CRC32C: "0badcafe"})
	}
	return b
}

func manifestFS(batches ...*Batch) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, b := range batches {
		fsys[ManifestDir+"/"+BatchFileName(b.ID)] = &fstest.MapFile{Data: b.Encode()}
	}
	return fsys
}

func TestReadManifest(t *testing.T) {
	m, err := ReadManifest(manifestFS(testBatch(1, 3), testBatch(2, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Batches) != 2 || m.NextID() != 3 || m.Segments() != 6 || m.Last().ID != 2 {
		t.Errorf("batches %d, next %d, segments %d", len(m.Batches), m.NextID(), m.Segments())
	}
	if f := m.Files(TableRecords); len(f) != 2 || !strings.HasPrefix(f[1], "records/batch=2/day=2026-12-01/") {
		t.Errorf("files %v", f)
	}
	c, err := m.Last().LastCycle.Cycle()
	if err != nil || c.Redo != 0x1000028 || c.Checkpoint != 0x1000060 || c.Cause.String() != "time" || c.WalLevel.String() != "replica" {
		t.Errorf("carried cycle %+v %v", c, err)
	}
	// No manifest: nil, no error.
	if m, err := ReadManifest(fstest.MapFS{"records/x.parquet": &fstest.MapFile{}}); m != nil || err != nil {
		t.Errorf("no manifest: %v %v", m, err)
	}
	// A batch being committed (a temporary dot file) is not read.
	fsys := manifestFS(testBatch(1, 1))
	fsys[ManifestDir+"/._batch-000002.json.7.tmp"] = &fstest.MapFile{Data: []byte("{")}
	if m, err := ReadManifest(fsys); err != nil || len(m.Batches) != 1 {
		t.Errorf("with a temporary file: %v %v", m, err)
	}
}

func TestReadManifestDamaged(t *testing.T) {
	wrongName := manifestFS(testBatch(1, 1))
	wrongName[ManifestDir+"/"+BatchFileName(2)] = &fstest.MapFile{Data: testBatch(3, 1).Encode()}
	outside := testBatch(1, 1)
	outside.Tables[TableRecords].Files[0].Path = "records/batch=2/x.parquet"
	badLSN := testBatch(1, 1)
	badLSN.End = "zz"
	noSum := testBatch(1, 1)
	noSum.Segments[0].CRC32C = ""
	shortSum := testBatch(1, 1)
	shortSum.Segments[0].CRC32C = "0badcaf"
	cases := map[string]fstest.MapFS{
		"a gap":            manifestFS(testBatch(1, 1), testBatch(3, 1)),
		"a name not its":   wrongName,
		"a file elsewhere": manifestFS(outside),
		"an LSN":           manifestFS(badLSN),
		"cut short":        {ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: testBatch(1, 1).Encode()[:50]}},
		"version":          {ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: []byte(`{"manifest_version":3,"batch":1}`)}},
		"version 0":        {ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: []byte(`{"batch":1}`)}},
		"no checksum":      manifestFS(noSum),
		"a short checksum": manifestFS(shortSum),
	}
	for name, fsys := range cases {
		if _, err := ReadManifest(fsys); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v, want ErrManifest", name, err)
		} else if !strings.Contains(err.Error(), ManifestDir) {
			t.Errorf("%s: %v does not name the manifest", name, err)
		}
	}
}

// TestManifestVersions: a manifest of a later version than this walscope
// writes is refused naming the walscope that wrote it; one of version 1
// (fixtures/append-v1, written by a walscope of version 1: segments with
// their SHA-256) is read, its checksums as it recorded them, beside a
// batch of version 2 (CRC-32C).
func TestManifestVersions(t *testing.T) {
	later := testBatch(1, 1)
	data := later.Encode()
	data = bytes.Replace(data, []byte(fmt.Sprintf(`"manifest_version": %d`, ManifestVersion)), []byte(fmt.Sprintf(`"manifest_version": %d`, ManifestVersion+1)), 1)
	_, err := ParseBatch(data)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), fmt.Sprintf("manifest version %d, written by walscope test", ManifestVersion+1)) ||
		!strings.Contains(err.Error(), "read it with that walscope or a later one") {
		t.Errorf("a manifest of version %d: %v", ManifestVersion+1, err)
	}

	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(testwal.Root(t), "fixtures", "append-v1", "dataset.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile(filepath.Join(dir, "dataset", ManifestDir, BatchFileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	b2 := testBatch(2, 2)
	fsys := fstest.MapFS{ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: v1}, ManifestDir + "/" + BatchFileName(2): &fstest.MapFile{Data: b2.Encode()}}
	m, err := ReadManifest(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if m.Batches[0].ManifestVersion != 1 || m.Batches[1].ManifestVersion != ManifestVersion || m.Segments() != 7 {
		t.Fatalf("versions %d and %d, %d segments", m.Batches[0].ManifestVersion, m.Batches[1].ManifestVersion, m.Segments())
	}
	alg, sum := m.Batches[0].Segments[0].Checksum()
	if alg != archive.SHA256 || len(sum) != 64 || m.Batches[0].Segments[0].CRC32C != "" {
		t.Errorf("version 1's segment: %s %q", alg, sum)
	}
	if alg, sum := b2.Segments[0].Checksum(); alg != archive.CRC32C || sum != "0badcafe" {
		t.Errorf("version 2's segment: %s %q", alg, sum)
	}
	// Encoded again (as version 2), a batch of version 1 keeps its SHA-256.
	again, err := ParseBatch(m.Batches[0].Encode())
	if err != nil || again.ManifestVersion != ManifestVersion || again.Segments[0].SHA256 != m.Batches[0].Segments[0].SHA256 {
		t.Errorf("version 1 encoded again: %v %+v", err, again)
	}
}

func TestWriteBatch(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBatch(dir, testBatch(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := WriteBatch(dir, testBatch(1, 2)); !errors.Is(err, ErrExists) {
		t.Errorf("second write of batch 1: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ManifestDir))
	if len(ents) != 1 || ents[0].Name() != "_batch-000001.json" {
		t.Errorf("manifest directory: %v", ents)
	}
	m, err := ReadManifest(os.DirFS(dir))
	if err != nil || m.Segments() != 2 {
		t.Errorf("read back: %v %v", m, err)
	}
}

// FuzzParseBatch: any bytes give a batch that passes its checks or an
// error wrapping ErrManifest, never a panic; a batch it accepts encodes to
// a file it accepts again.
func FuzzParseBatch(f *testing.F) {
	f.Add(testBatch(1, 2).Encode())
	f.Add([]byte(`{"manifest_version":1,"batch":1,"start_lsn":"0/1","end_lsn":"0/2","end_timeline":1,"last_cycle":{"redo_lsn":"x"}}`))
	f.Add([]byte(`{"manifest_version":1,"batch":1,"start_lsn":"0/1","end_lsn":"0/2","end_timeline":1,"tables":{"records":{"files":[{"path":"records/batch=1/../../x"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBatch(data)
		if err != nil {
			if !errors.Is(err, ErrManifest) {
				t.Fatalf("error %v does not wrap ErrManifest", err)
			}
			return
		}
		for tb, bt := range b.Tables {
			for _, file := range bt.Files {
				if !strings.HasPrefix(file.Path, BatchDir(tb, b.ID)+"/") || strings.Contains(file.Path, "..") {
					t.Fatalf("accepted a file outside its batch: %q", file.Path)
				}
			}
		}
		if _, err := ParseBatch(b.Encode()); err != nil {
			t.Fatalf("re-encoded batch refused: %v", err)
		}
	})
}

// BenchmarkReadManifest reads the manifest of a dataset of 10^5 segments
// (1,000 nightly batches of 100 segments, 1.6 TB of 16 MB segments) from
// disk. Issue 29: under 1 s.
func BenchmarkReadManifest(b *testing.B) {
	dir := b.TempDir()
	for id := 1; id <= 1000; id++ {
		if err := WriteBatch(dir, testBatch(id, 100)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		m, err := ReadManifest(os.DirFS(dir))
		if err != nil || m.Segments() != 100000 {
			b.Fatalf("%v: %d segments", err, m.Segments())
		}
	}
}

// ExampleReadManifest lists the files a reader of an incremental dataset
// reads: those of the committed batches, as their manifests list them.
func ExampleReadManifest() {
	dir, _ := os.MkdirTemp("", "walscope-example-")
	defer os.RemoveAll(dir)
	b := &Batch{ID: 1, Start: "0/1000028", End: "0/3000000", EndTimeline: 1,
		Tables: map[string]BatchTable{TableRecords: {Rows: 2, Files: []MarkerFile{
			{Path: "records/batch=1/day=2026-12-01/part-0000000001000028.parquet", Rows: 2}}}}}
	if err := WriteBatch(dir, b); err != nil {
		fmt.Println(err)
		return
	}
	m, err := ReadManifest(os.DirFS(dir))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("next batch:", m.NextID(), "from", m.Last().End)
	fmt.Println(m.Files(TableRecords))
	// Output:
	// next batch: 2 from 0/3000000
	// [records/batch=1/day=2026-12-01/part-0000000001000028.parquet]
}
