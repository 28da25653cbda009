package objstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog/objstore"
)

// fixtureSet is a small real archive with two timelines and a history file.
const fixtureSet = "fixtures/pg15-replica-pglz-k-tl"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// walscope builds the command once for the package's tests.
func walscope(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "walscope-objstoretest-*")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "walscope")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/walscope/walscope/cmd/walscope")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building walscope: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	testwal.Cleanup()
	os.Exit(code)
}

// result is what one run printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(walscope(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("walscope %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// archives builds, from the fixture's real segments, the layouts to read in
// place: plain, wal-g (lz4 and more), pgBackRest, Barman, and a compressed
// tar in a flat directory. It returns the local root and the layouts' paths
// under it.
func archives(t *testing.T) (string, []string) {
	t.Helper()
	var src string
	for _, s := range testwal.Sets(t) {
		if s.Name == fixtureSet {
			src = filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	if src == "" {
		t.Fatalf("fixture %s not found", fixtureSet)
	}
	root := t.TempDir()
	archivetest.Plain(t, src, filepath.Join(root, "plain"))
	archivetest.WALG(t, src, filepath.Join(root, "walg"))
	archivetest.PgBackRest(t, src, filepath.Join(root, "pgbackrest"), "main", "15")
	archivetest.Barman(t, src, filepath.Join(root, "barman"))
	if err := os.Mkdir(filepath.Join(root, "tars"), 0o755); err != nil {
		t.Fatal(err)
	}
	archivetest.Tar(t, src, filepath.Join(root, "tars", "pg_wal.tar.gz"), true, "gzip")
	return root, []string{"plain", "walg", "pgbackrest", "barman", "tars"}
}

// upload puts the local tree under prefix in the store, through the library
// function export uses.
func upload(t *testing.T, s *Store, local, prefix string) string {
	t.Helper()
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dst := s.Bucket + "/" + prefix
	if err := objstore.Upload(context.Background(), local, dst, objstore.UploadOptions{}); err != nil {
		t.Fatalf("uploading to %s: %v", dst, err)
	}
	return dst
}

// TestReadInPlace reads every layout from disk and from each store: ls,
// ls --quick, stats, verify and dump print the same bytes (the store's URL in place of
// the local path) and exit alike.
func TestReadInPlace(t *testing.T) {
	root, layouts := archives(t)
	commands := [][]string{
		{"ls"},
		{"ls", "--quick", "--format", "json"},
		{"stats"},
		{"verify"},
		{"dump", "-n", "2000"},
	}
	// The local runs, once for the three stores.
	locals := map[string]result{}
	for _, l := range layouts {
		for _, args := range commands {
			locals[l+" "+strings.Join(args, " ")] = run(t, nil, append(args, filepath.Join(root, l))...)
		}
	}
	for _, s := range []func(testing.TB) *Store{S3, GCS, Azure} {
		s := s(t)
		t.Run(s.Name, func(t *testing.T) {
			remote := upload(t, s, root, "archives")
			for _, l := range layouts {
				for _, args := range commands {
					local := locals[l+" "+strings.Join(args, " ")]
					got := run(t, s.Env, append(args, remote+"/"+l)...)
					if local.code != 0 && args[0] != "verify" {
						t.Errorf("%s %v (local): exit %d: %s", l, args, local.code, local.stderr)
					}
					norm := func(s string) string { return strings.ReplaceAll(s, remote, root) }
					if got.code != local.code || norm(got.stdout) != local.stdout || norm(got.stderr) != local.stderr {
						t.Errorf("%s %v: the store's run differs from the local one:\nexit %d, want %d\nstderr: %s\nwant: %s\nstdout (first difference): %s",
							l, args, got.code, local.code, got.stderr, local.stderr, firstDiff(norm(got.stdout), local.stdout))
					}
					if len(local.stdout) < 100 {
						t.Errorf("%s %v printed almost nothing: %q", l, args, local.stdout)
					}
				}
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "got  " + al[i] + "\nwant " + bl[i]
		}
	}
	if len(al) != len(bl) {
		return "different line counts"
	}
	return "(none)"
}

// TestStoreErrors: a missing prefix and refused credentials end the run
// with exit 2 and the failure's class, never an empty report.
func TestStoreErrors(t *testing.T) {
	s := S3(t)
	r := run(t, s.Env, "stats", s.Bucket+"/nothing-here")
	if r.code != 2 || !strings.Contains(r.stderr, "could not") {
		t.Errorf("missing prefix: exit %d, stderr %q; want exit 2, could not ...", r.code, r.stderr)
	}
	env := append(append([]string(nil), s.Env...), "AWS_SECRET_ACCESS_KEY=wrong")
	r = run(t, env, "ls", s.Bucket+"/anything")
	if r.code != 2 || !strings.Contains(r.stderr, "access-denied") {
		t.Errorf("wrong credentials: exit %d, stderr %q; want exit 2 and access-denied", r.code, r.stderr)
	}
}

// download returns every object under url, by path relative to it.
func download(t *testing.T, url string) map[string][]byte {
	t.Helper()
	tree, err := objstore.Open(context.Background(), url, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		ents, err := tree.ReadDir(dir)
		if err != nil {
			t.Fatalf("listing %s: %v", dir, err)
		}
		for _, e := range ents {
			p := tree.Join(dir, e.Name())
			if e.IsDir() {
				walk(p, rel+e.Name()+"/")
				continue
			}
			f, err := tree.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[rel+e.Name()] = b
		}
	}
	walk(url, "")
	return out
}

func readLocal(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil // the exporter's lock: local state, not uploaded
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string][]byte) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// TestExportToStore exports to each store and compares the objects, byte
// for byte, with the same export written locally; then runs the export as
// shards, which together hold every record once.
func TestExportToStore(t *testing.T) {
	root, _ := archives(t)
	in := filepath.Join(root, "walg")
	args := []string{"export", "--format", "jsonl", "--tables", "records,transactions,checkpoints", "--partition-by", "segment-range"}
	localOut := filepath.Join(t.TempDir(), "ds")
	if r := run(t, nil, append(args, "--out", localOut, in)...); r.code != 0 {
		t.Fatalf("local export: exit %d: %s", r.code, r.stderr)
	}
	want := readLocal(t, localOut)
	if len(want) == 0 {
		t.Fatal("the local export wrote nothing")
	}
	for _, s := range []func(testing.TB) *Store{S3, GCS, Azure} {
		s := s(t)
		t.Run(s.Name, func(t *testing.T) {
			remoteIn := upload(t, s, in, "walg")
			out := s.Bucket + "/datasets/one"
			if r := run(t, s.Env, append(args, "--out", out, remoteIn)...); r.code != 0 {
				t.Fatalf("export to %s: exit %d: %s", out, r.code, r.stderr)
			}
			got := download(t, out)
			if !equalKeys(keys(got), keys(want)) {
				t.Fatalf("objects %v, want the local files %v", keys(got), keys(want))
			}
			for k, b := range want {
				if strings.HasSuffix(k, export.MarkerName) {
					// The completion time differs; the rest is the same.
					if m1, m2 := marker(t, got[k]), marker(t, b); !reflect.DeepEqual(m1, m2) {
						t.Errorf("%s: %+v, want %+v", k, m1, m2)
					}
					continue
				}
				if !bytes.Equal(got[k], b) {
					t.Errorf("%s differs from the local export's", k)
				}
			}
			// A second run into the same place refuses, as locally.
			if r := run(t, s.Env, append(args, "--out", out, remoteIn)...); r.code != 1 || !strings.Contains(r.stderr, "--overwrite") {
				t.Errorf("second export: exit %d, stderr %q; want exit 1 naming --overwrite", r.code, r.stderr)
			}
			// Shards: two jobs, one dataset, every record once.
			sharded := s.Bucket + "/datasets/sharded"
			for i := range 2 {
				if r := run(t, s.Env, "export", "--format", "jsonl", "--tables", "records", "--shard", []string{"0/2", "1/2"}[i], "--out", sharded, remoteIn); r.code != 0 {
					t.Fatalf("shard %d: exit %d: %s", i, r.code, r.stderr)
				}
			}
			parts := download(t, sharded)
			ranges := map[string]bool{}
			var lines int
			for k, b := range parts {
				if strings.HasPrefix(k, "records/") && strings.HasSuffix(k, ".jsonl") {
					lines += bytes.Count(b, []byte("\n"))
					ranges[strings.Split(k, "/")[1]] = true
				}
			}
			var wantLines int
			for k, b := range want {
				if strings.HasPrefix(k, "records/") && strings.HasSuffix(k, ".jsonl") {
					wantLines += bytes.Count(b, []byte("\n"))
				}
			}
			if lines != wantLines || len(ranges) != 2 {
				t.Errorf("shards wrote %d records in %d segment ranges %v; want %d records in 2", lines, len(ranges), ranges, wantLines)
			}
		})
	}
}

func marker(t *testing.T, b []byte) export.Marker {
	t.Helper()
	var m export.Marker
	if err := json.Unmarshal(b, &m); err != nil || m.Rows == 0 && len(m.Files) == 0 && m.Table == "" {
		t.Fatalf("not a completion marker: %v: %s", err, b)
	}
	m.Completed = time.Time{}
	return m
}

func equalKeys(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLargeObject: a file larger than a single request's part (S3's
// multipart upload, completed at the end) uploads whole, and reads back
// through ranged requests (objects over objstore.WholeMax).
func TestLargeObject(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, objstore.WholeMax+5<<20+123)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []func(testing.TB) *Store{S3, GCS, Azure} {
		s := s(t)
		t.Run(s.Name, func(t *testing.T) {
			url := upload(t, s, dir, "large")
			tree, err := objstore.Open(context.Background(), url, objstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f, err := tree.Open(url + "/big.bin")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes (%v), want the %d uploaded", len(got), err, len(data))
			}
			ra := f.(io.ReaderAt)
			b := make([]byte, 1000)
			if n, err := ra.ReadAt(b, int64(len(data))-600); n != 600 || err != io.EOF || !bytes.Equal(b[:600], data[len(data)-600:]) {
				t.Errorf("ReadAt at the end: %d, %v", n, err)
			}
		})
	}
}
