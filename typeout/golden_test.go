package typeout_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/typeout"
)

const goldenFile = "testdata/golden.txt.zst"

func writeGolden(t *testing.T, b []byte) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenFile, enc.EncodeAll(b, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes of text)", goldenFile, len(b))
}

// TestGolden needs no server: testdata/golden.txt.zst holds, for the first
// rows of every built-in type of TestAgainstPostgreSQL15 under each of its
// combinations of settings, the stored datum (read from PostgreSQL 15's
// pages) and the line COPY TO STDOUT printed for it (go test -run
// TestAgainstPostgreSQL15 -update rewrites it).
func TestGolden(t *testing.T) {
	z, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	text, err := dec.DecodeAll(z, nil)
	if err != nil {
		t.Fatal(err)
	}
	formatters := make([]*typeout.Formatter, len(settingCombos))
	for i, c := range settingCombos {
		formatters[i] = &typeout.Formatter{Settings: c.settings(t, ""), Major: 15}
	}
	n, types := 0, map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 4)
		if len(f) != 4 {
			t.Fatalf("bad golden line %q", sc.Text())
		}
		ci, _ := strconv.Atoi(f[0])
		oid, _ := strconv.ParseUint(f[1], 10, 32)
		datum, err := hex.DecodeString(f[2])
		if err != nil || ci >= len(formatters) {
			t.Fatalf("bad golden line %q", sc.Text())
		}
		out, err := formatters[ci].Append(nil, uint32(oid), datum)
		if err != nil {
			t.Errorf("type %d datum %s: %v", oid, f[2], err)
			continue
		}
		if got := string(typeout.AppendCopyText(nil, out, '\t')); got != f[3] {
			t.Errorf("type %d datum %s settings %+v:\n server  %q\n typeout %q", oid, f[2], settingCombos[ci], f[3], got)
		}
		n++
		types[f[1]] = true
	}
	if n == 0 {
		t.Fatal("empty golden file")
	}
	t.Logf("%d values of %d built-in types identical to PostgreSQL 15's", n, len(types))
}
