package backup

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"testing"
)

// FuzzIndexTar: indexing any bytes as a tar never panics, and every member
// it keeps lies inside the input.
func FuzzIndexTar(f *testing.F) {
	f.Add(tarOf(map[string]string{"backup_label": "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n", "base/5/1259": string(make([]byte, 8192))}))
	f.Add(tarOf(map[string]string{"global/pg_control": "x"})[:700])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &countReader{r: bytes.NewReader(data)}
		err := indexTar(r, func() int64 { return r.n }, func(size int64) bool { return size < 1<<16 }, func(h *tar.Header, off int64, kept []byte, _ io.Reader) error {
			if off < 0 || off > int64(len(data)) {
				t.Fatalf("member %q at offset %d of %d bytes", h.Name, off, len(data))
			}
			if kept != nil && (int64(len(kept)) != h.Size || off+h.Size > int64(len(data)) || !bytes.Equal(kept, data[off:off+h.Size])) {
				t.Fatalf("member %q: kept %d bytes, size %d at %d", h.Name, len(kept), h.Size, off)
			}
			if _, ok := cleanName(h.Name); ok && h.Size < 0 {
				t.Fatalf("negative size")
			}
			return nil
		})
		_ = err
	})
}

// FuzzParseManifest: a manifest that parses has WAL ranges that go forward
// and a checksum that matched.
func FuzzParseManifest(f *testing.F) {
	if b, err := os.ReadFile("../fixtures/backup-pg15/backup_manifest"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"PostgreSQL-Backup-Manifest-Version": 1, "Files": [], "WAL-Ranges": [{"Timeline": 1, "Start-LSN": "0/2000028", "End-LSN": "0/2000100"}], "Manifest-Checksum": "00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if len(m.WALRanges) == 0 {
			t.Fatal("parsed with no WAL range")
		}
		for _, r := range m.WALRanges {
			if r.End < r.Start || r.Timeline == 0 {
				t.Fatalf("range %+v", r)
			}
		}
		for _, fl := range m.Files {
			if fl.Size < 0 {
				t.Fatalf("file %q of size %d", fl.Path, fl.Size)
			}
		}
	})
}

// FuzzParseControlFile: a pg_control that parses has a matching CRC and a
// usable block size; nothing panics.
func FuzzParseControlFile(f *testing.F) {
	for _, cv := range []uint32{1002, 1100, 1201, 1300, 1700, 1800} {
		b := make([]byte, 8192)
		binary.LittleEndian.PutUint32(b[8:], cv)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16 {
			// give the CRC a chance: most inputs would fail only there
			cv := binary.LittleEndian.Uint32(data[8:])
			if knownControlVersion(cv) {
				_, cpSize := cLayout(checkPointFields(cv))
				off, _ := cLayout(controlFields(cv, cpSize))
				if at := off["crc"]; len(data) >= at+4 {
					binary.LittleEndian.PutUint32(data[at:], crc32.Checksum(data[:at], crc32c))
				}
			}
		}
		c, err := ParseControlFile(data)
		if err != nil {
			return
		}
		if c.BlockSize < 1024 || c.BlockSize&(c.BlockSize-1) != 0 || c.RelSegSize == 0 {
			t.Fatalf("block size %d, relseg_size %d", c.BlockSize, c.RelSegSize)
		}
	})
}

// FuzzIncrementalHeader: a header that parses describes exactly the file.
func FuzzIncrementalHeader(f *testing.F) {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, incrementalMagic)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, 4)
	b = le.AppendUint32(b, 2)
	b = append(b, make([]byte, 8192-16+8192)...)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseIncrementalHeader(bytes.NewReader(data), int64(len(data)), 8192, 131072)
		if err != nil {
			return
		}
		if h.dataOff+int64(len(h.blocks))*8192 != int64(len(data)) || h.truncation > 131072 {
			t.Fatalf("header %+v for %d bytes", h, len(data))
		}
		for _, blk := range h.blocks {
			if blk >= 131072 {
				t.Fatalf("block %d", blk)
			}
		}
	})
}

// FuzzPgBackRestChecksum: checking any bytes as a pgBackRest INI file never
// panics, and a file that passes still passes with a blank line added.
func FuzzPgBackRestChecksum(f *testing.F) {
	f.Add([]byte("[backrest]\nbackrest-format=5\n\n[backrest]\nbackrest-checksum=\"00\"\n"))
	f.Add([]byte("[a]\nb=1\n[backrest]\nbackrest-checksum=\"e0d1d2a6d3c4f4f4\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if checkPgBackRestINI(data) == nil {
			if err := checkPgBackRestINI(append([]byte("\n"), data...)); err != nil {
				t.Fatalf("passes, but not after a blank line: %v", err)
			}
		}
	})
}
