package backup

// pgBackRest repositories in object stores: the repository the scenario's
// pgBackRest wrote locally, uploaded as it is into each real store server of
// internal/objstoretest (versitygw for S3, fake-gcs-server, Azurite, and
// MinIO for S3 too), read through xlog/objstore's Tree and compared with
// pgbackrest restore's output as the local repository is. A server that is
// not installed skips its subtest (WALSCOPE_REQUIRE_OBJSTORE=1 makes the
// three of .ci/run fail instead).

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/objstoretest"
	"github.com/walscope/walscope/xlog/objstore"
)

func TestPgBackRestObjectStore(t *testing.T) {
	w := scenario(t)
	labels := strings.Fields(facts["pgbr_labels"])
	// the gz set (full and incr; the diff between them uploaded too, the incr
	// refers to it) and the lz4 bundled set (full, incr)
	picked := []int{0, 2, 3, 4}
	repo := filepath.Join(t.TempDir(), "repo")
	stanza := filepath.Join(repo, "backup", "demo")
	if out, err := exec.Command("mkdir", "-p", stanza).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, i := range append([]int{1}, picked...) {
		if out, err := exec.Command("cp", "-a", filepath.Join(w, "pgbr", "backup", "demo", labels[i]), stanza).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	// pgBackRest links pg_data/pg_tblspc/OID to the backup's pg_tblspc/OID
	// on a posix repository; an object store has no links
	if out, err := exec.Command("find", repo, "-type", "l", "-delete").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for name, start := range map[string]func(testing.TB) *objstoretest.Store{
		"s3": objstoretest.S3, "gcs": objstoretest.GCS, "azure": objstoretest.Azure, "minio": objstoretest.MinIO,
	} {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			for _, kv := range s.Env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			ctx := context.Background()
			dst := s.Bucket + "/pgbr"
			if err := objstore.Upload(ctx, repo, dst, objstore.UploadOptions{}); err != nil {
				t.Fatalf("uploading to %s: %v", dst, err)
			}
			tree, err := objstore.Open(ctx, dst, objstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range picked {
				url := dst + "/backup/demo/" + labels[i]
				b, err := OpenTree(tree, url, Options{})
				if err != nil {
					t.Fatalf("OpenTree(%s): %v", url, err)
				}
				c := compareTree(t, b, filepath.Join(w, "pgbr-restore-"+strconv.Itoa(i+1)), func(name string) bool {
					return name == "postgresql.auto.conf" || name == "recovery.signal" || name == "tablespace_map"
				})
				t.Logf("%s %s: %d files, %d relation forks, %d blocks identical to pgbackrest restore's", name, labels[i], c.files, c.relations, c.blocks)
				b.Close()
			}
			_, err = OpenTree(tree, dst+"/backup/nostanza", Options{})
			wantErr(t, "OpenTree of nothing", err, ErrNotBackup, "nostanza")
		})
	}
}
