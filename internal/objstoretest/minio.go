package objstoretest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MinIOVersion is the MinIO server the STS tests were written against
// (`go install github.com/minio/minio@` this version; MinIO publishes no
// semantic versions, so the module proxy names its commits).
const MinIOVersion = "v0.0.0-20260212201848-7aac2a2c5b7c"

// MinIORequired reports whether the STS tests must run: MinIO is a long
// build (about 8 minutes on 2 cores, a 150 MB program) that .ci/run does
// not install unless asked, so WALSCOPE_REQUIRE_MINIO=1 is separate from
// WALSCOPE_REQUIRE_OBJSTORE.
func MinIORequired() bool { return os.Getenv("WALSCOPE_REQUIRE_MINIO") == "1" }

// MinIO starts a MinIO server (one drive) with a bucket "walscope": an S3
// server that also speaks STS, answering AssumeRole at its root for its
// users' credentials, which it checks with SigV4 as AWS does (service
// "sts"), and accepting the temporary credentials it issues on S3 requests.
// Its root user is walscope / walscope-secret; Env holds these keys and
// AWS_ENDPOINT_URL, which the SDKs (and walscope) use for STS as for S3.
func MinIO(tb testing.TB) *Store {
	tb.Helper()
	bin := find("minio", goBin())
	if bin == "" {
		what := "minio (go install github.com/minio/minio@" + MinIOVersion + ")"
		if MinIORequired() {
			tb.Fatalf("%s is not installed, and WALSCOPE_REQUIRE_MINIO=1", what)
		}
		tb.Skipf("%s is not installed", what)
	}
	root := tb.TempDir()
	// A top-level directory of the drive is a bucket.
	if err := os.Mkdir(filepath.Join(root, "walscope"), 0o755); err != nil {
		tb.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(tb))
	console := fmt.Sprintf("127.0.0.1:%d", freePort(tb))
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", console, root)
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER=walscope", "MINIO_ROOT_PASSWORD=walscope-secret",
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1", "HOME="+root)
	start(tb, "minio", cmd, answers("http://"+addr+"/minio/health/live"))
	return &Store{Name: "minio", Bucket: "s3://walscope", Env: []string{
		"AWS_ENDPOINT_URL=http://" + addr, "AWS_ACCESS_KEY_ID=walscope", "AWS_SECRET_ACCESS_KEY=walscope-secret",
		"AWS_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
	}}
}
