package objstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog/objstore"
)

// TestAppendLease: one append at a time to an object-store dataset, on each
// real server (versitygw, MinIO, fake-gcs-server, Azurite). A lease held by
// a live process of this host, or a fresh one of another host, refuses the
// append (exit 4, naming the holder, nothing appended); --break-lock takes
// it over; a lease of a process that is gone, or older than --lock-ttl, is
// taken over, said on standard error; a finished append leaves no lease.
// Two appends of the same night started together: exactly one commits the
// batch, the other exits 4 (at the lease or at the commit), and the dataset
// is the one a single append makes.
func TestAppendLease(t *testing.T) {
	ns := tlNights(t)
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, mk := range []func(testing.TB) *Store{S3, MinIO, GCS, Azure} {
		s := mk(t)
		t.Run(s.Name, func(t *testing.T) {
			for _, kv := range s.Env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			out := s.Bucket + "/lease/wal"
			tree, err := objstore.Open(context.Background(), out, objstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			leaseName := tree.Join(out, export.LeaseName)
			hold := func(h export.LeaseInfo) {
				t.Helper()
				b, _ := json.Marshal(h)
				if err := tree.Create(leaseName, b); err != nil {
					t.Fatal(err)
				}
			}
			batches := func() int {
				t.Helper()
				m, err := export.ReadManifest(fsOf{tree, out})
				if err != nil {
					t.Fatal(err)
				}
				if m == nil {
					return 0
				}
				return len(m.Batches)
			}
			noLease := func(when string) {
				t.Helper()
				if _, err := tree.Get(leaseName); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: the lease is still there (%v)", when, err)
				}
			}
			now := time.Now().UTC()

			// held by a live process here (this test's): refused
			hold(export.LeaseInfo{Host: host, PID: os.Getpid(), Nonce: "live", Acquired: now, Walscope: "test"})
			r := run(t, s.Env, "export", "--append", out, ns[0])
			if r.code != 4 || !strings.Contains(r.stderr, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(r.stderr, "--break-lock") {
				t.Fatalf("append under a live lease: exit %d: %s", r.code, r.stderr)
			}
			if n := batches(); n != 0 {
				t.Fatalf("%d batches appended under another's lease", n)
			}
			// --break-lock
			if r := run(t, s.Env, "export", "--break-lock", "--append", out, ns[0]); r.code != 0 || !strings.Contains(r.stderr, "--break-lock") {
				t.Fatalf("--break-lock: exit %d: %s", r.code, r.stderr)
			}
			noLease("after --break-lock")
			// another host's fresh lease: refused; its stale one: taken over
			hold(export.LeaseInfo{Host: "elsewhere.example", PID: 1, Nonce: "other", Acquired: now, Walscope: "test"})
			if r := run(t, s.Env, "export", "--append", out, ns[1]); r.code != 4 || !strings.Contains(r.stderr, "elsewhere.example") {
				t.Fatalf("another host's lease: exit %d: %s", r.code, r.stderr)
			}
			if r := run(t, s.Env, "export", "--lock-ttl", "1h", "--append", out, ns[1]); r.code != 4 {
				t.Fatalf("another host's lease within --lock-ttl: exit %d: %s", r.code, r.stderr)
			}
			tree.Remove(leaseName)
			hold(export.LeaseInfo{Host: "elsewhere.example", PID: 1, Nonce: "old", Acquired: now.Add(-2 * time.Hour), Walscope: "test"})
			if r := run(t, s.Env, "export", "--lock-ttl", "1h", "--append", out, ns[1]); r.code != 0 || !strings.Contains(r.stderr, "older than 1h0m0s") {
				t.Fatalf("a lease older than --lock-ttl: exit %d: %s", r.code, r.stderr)
			}
			noLease("after taking over an old lease")
			// a dead process's lease on this host: taken over
			hold(export.LeaseInfo{Host: host, PID: dead.Process.Pid, Nonce: "dead", Acquired: now, Walscope: "test"})
			if r := run(t, s.Env, "export", "--append", out, ns[2]); r.code != 0 || !strings.Contains(r.stderr, "its process is gone") {
				t.Fatalf("a dead process's lease: exit %d: %s", r.code, r.stderr)
			}
			noLease("after taking over a dead process's lease")
			if n := batches(); n != 3 {
				t.Errorf("%d batches, want 3", n)
			}

			// two appends of one night at once, into a new dataset
			race := s.Bucket + "/lease/race"
			var wg sync.WaitGroup
			res := make([]result, 2)
			for i := range res {
				wg.Add(1)
				go func() { defer wg.Done(); res[i] = run(t, s.Env, "export", "--append", race, ns[0]) }()
			}
			wg.Wait()
			codes := []int{res[0].code, res[1].code}
			if !(codes[0] == 0 && codes[1] == 4 || codes[0] == 4 && codes[1] == 0) {
				t.Fatalf("racing appends: exits %v: %s / %s", codes, res[0].stderr, res[1].stderr)
			}
			for _, r := range res {
				if r.code == 4 {
					t.Logf("the racing append that lost: %s", strings.TrimSpace(r.stderr))
				}
			}
			rt, err := objstore.Open(context.Background(), race, objstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := export.ReadManifest(fsOf{rt, race})
			if err != nil || m == nil || len(m.Batches) != 1 {
				t.Fatalf("after the race: %v, %v", m, err)
			}
		})
	}
}

// fsOf is a store prefix as an fs.FS, as export --append reads it.
type fsOf struct {
	t    *objstore.Tree
	root string
}

func (f fsOf) Open(name string) (fs.File, error) { return f.t.Open(f.t.Join(f.root, name)) }

func (f fsOf) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := f.t.ReadDir(f.t.Join(f.root, name))
	var se *objstore.Error
	if errors.As(err, &se) && se.Class == objstore.ClassNotFound {
		return nil, fs.ErrNotExist
	}
	return ents, err
}
