package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// TestTwoTarFiles: two tar files (a base backup and its pg_wal.tar.gz) are
// read as one archive, not as pg_waldump's STARTSEG ENDSEG; the same
// segments given as two files still are.
func TestTwoTarFiles(t *testing.T) {
	root := testwal.Root(t)
	sample := filepath.Join(root, "fixtures", "sample")
	dir := t.TempDir()
	for i, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		src := filepath.Join(dir, "src"+n)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(sample, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		archivetest.Tar(t, src, filepath.Join(dir, []string{"base.tar.gz", "pg_wal.tar.gz"}[i]), i == 1, "gzip")
	}
	tars, stderr, code := walscope(t, dir, "stats", "base.tar.gz", "pg_wal.tar.gz")
	if code != 0 {
		t.Fatalf("stats base.tar.gz pg_wal.tar.gz: exit %d: %s", code, stderr)
	}
	plain, stderr, code := walscope(t, "", "stats", filepath.Join(sample, "000000010000000000000006"), filepath.Join(sample, "000000010000000000000007"))
	if code != 0 {
		t.Fatalf("stats STARTSEG ENDSEG: exit %d: %s", code, stderr)
	}
	if tars != plain || !strings.Contains(tars, "Total") {
		t.Errorf("the two tars give\n%s\nthe two segments\n%s", tars, plain)
	}
}

// TestShardSpec: --shard accepts I/N with 0 <= I < N only.
func TestShardSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want shardSpec
		ok   bool
	}{
		{"0/1", shardSpec{0, 1}, true},
		{"3/4", shardSpec{3, 4}, true},
		{"4/4", shardSpec{}, false},
		{"-1/4", shardSpec{}, false},
		{"1/0", shardSpec{}, false},
		{"1", shardSpec{}, false},
		{"a/b", shardSpec{}, false},
	} {
		got, err := parseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseShard(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestShardsReadEveryRecordOnce: N shards of a local archive together hold
// the records of the whole (a record crossing a shard boundary is read by
// the shard it starts in), each in its own segment range.
func TestShardsReadEveryRecordOnce(t *testing.T) {
	src := archiveSet(t, "fixtures/pg15-replica-pglz-k-tl")
	out := t.TempDir()
	whole := filepath.Join(out, "whole")
	if _, stderr, code := walscope(t, "", "export", "--format", "csv", "--tables", "records", "--out", whole, src); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	sharded := filepath.Join(out, "sharded")
	for _, s := range []string{"0/3", "1/3", "2/3"} {
		if _, stderr, code := walscope(t, "", "export", "--format", "csv", "--tables", "records", "--shard", s, "--out", sharded, src); code != 0 {
			t.Fatalf("export --shard %s: exit %d: %s", s, code, stderr)
		}
	}
	count := func(dir string) (rows int, ranges map[string]bool) {
		ranges = map[string]bool{}
		files, _ := filepath.Glob(filepath.Join(dir, "records", "*", "*.csv"))
		more, _ := filepath.Glob(filepath.Join(dir, "records", "*.csv"))
		for _, f := range append(files, more...) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rows += strings.Count(string(b), "\n") - 1 // the header
			ranges[filepath.Base(filepath.Dir(f))] = true
		}
		return rows, ranges
	}
	want, _ := count(whole)
	got, ranges := count(sharded)
	if want == 0 || got != want || len(ranges) != 3 {
		t.Errorf("3 shards hold %d records in %d segment ranges (%v); the whole export %d", got, len(ranges), ranges, want)
	}
}

// TestVerifyBytesOfCompressedWAL: verify counts the WAL of segments whose
// compression declares no size (wal-g's zstd, lz4, brotli and lzma, as
// wal-g 3.0.5 wrote them) by their segment size, as it does for plain ones.
func TestVerifyBytesOfCompressedWAL(t *testing.T) {
	base := filepath.Join(testwal.Root(t), "..", "shared", "realtools", "walg-3.0.5")
	for _, m := range []string{"zstd", "lz4", "brotli", "lzma"} {
		out, stderr, code := walscope(t, "", "verify", filepath.Join(base, m))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, stderr)
		}
		if !strings.Contains(out, "3 files") || !strings.Contains(out, " 50331648 bytes of WAL") {
			t.Errorf("%s: %s", m, out)
		}
	}
}

// TestRepositoryEntryPoints: pointing at pgBackRest's
// archive/<stanza>/<version>-<id>, at Barman's barman_home (the directory of
// server directories) or at the parent of a wal-g storage reads the same
// WAL as the repository itself; two repositories below one directory are
// ambiguous (exit 2, naming them).
func TestRepositoryEntryPoints(t *testing.T) {
	src := archiveSet(t, "fixtures/pg15-replica-pglz-k-tl")
	root := t.TempDir()
	archivetest.PgBackRest(t, src, filepath.Join(root, "pgbackrest"), "main", "15")
	archivetest.Barman(t, src, filepath.Join(root, "barman_home", "pg"))
	archivetest.WALG(t, src, filepath.Join(root, "walg", "cluster1"))
	want, stderr, code := walscope(t, "", "stats", src)
	if code != 0 {
		t.Fatalf("stats of the plain archive: exit %d: %s", code, stderr)
	}
	for _, p := range []string{
		filepath.Join(root, "pgbackrest", "archive", "main", "15-1"),
		filepath.Join(root, "barman_home"),
		filepath.Join(root, "walg"),
	} {
		got, stderr, code := walscope(t, "", "stats", p)
		if code != 0 || got != want {
			t.Errorf("stats %s: exit %d, %s\n%s", p, code, stderr, got)
		}
	}
	archivetest.WALG(t, src, filepath.Join(root, "walg", "cluster2"))
	if _, stderr, code := walscope(t, "", "stats", filepath.Join(root, "walg")); code != 2 || !strings.Contains(stderr, "cluster1, cluster2") {
		t.Errorf("two wal-g storages: exit %d, %s", code, stderr)
	}
}

// TestStoreUnreachable: an object store that cannot be reached is one error
// line naming the URL, the operation and the class, exit 2, with no "Try
// --help" hint (it is no mistake in the arguments).
func TestStoreUnreachable(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	stdout, stderr, code := walscope(t, "", "stats", "s3://bucket/wal")
	if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "walscope: error: s3://bucket") ||
		!strings.Contains(stderr, "failed (network)") || strings.Contains(stderr, "hint") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
