package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/walscope/walscope/xlog"
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
			SHA256: strings.Repeat("ab", 32)})
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
	cases := map[string]fstest.MapFS{
		"a gap":            manifestFS(testBatch(1, 1), testBatch(3, 1)),
		"a name not its":   wrongName,
		"a file elsewhere": manifestFS(outside),
		"an LSN":           manifestFS(badLSN),
		"cut short":        {ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: testBatch(1, 1).Encode()[:50]}},
		"version":          {ManifestDir + "/" + BatchFileName(1): &fstest.MapFile{Data: []byte(`{"manifest_version":2,"batch":1}`)}},
	}
	for name, fsys := range cases {
		if _, err := ReadManifest(fsys); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v, want ErrManifest", name, err)
		} else if !strings.Contains(err.Error(), ManifestDir) {
			t.Errorf("%s: %v does not name the manifest", name, err)
		}
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
