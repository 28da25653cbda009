// Package objstoretest starts real object store servers for the tests of
// walscope's object store support (xlog/objstore): versitygw, an S3 gateway
// run in production, for S3; fake-gcs-server for Google Cloud Storage;
// Microsoft's Azurite for Azure Blob Storage. Each runs as its own process
// on a free loopback port, with its data in a test's temporary directory,
// and is stopped when the test ends.
//
// A server that is not installed skips the test, unless
// WALSCOPE_REQUIRE_OBJSTORE=1 (set by .ci/run, which installs them) makes it
// fail. Where the servers are found: versitygw and fake-gcs-server on PATH
// or in $(go env GOPATH)/bin (go install), azurite-blob on PATH or under
// $WALSCOPE_AZURITE_DIR (an npm prefix; .ci/run uses
// /opt/walscope-tools/azurite).
package objstoretest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Store is a running server: the environment a client needs (the
// standard variables of each cloud's SDK) and a bucket made for the test.
type Store struct {
	Name   string   // s3, gcs, azure
	Env    []string // KEY=VALUE for the walscope process
	Bucket string   // URL of the bucket: s3://walscope, gs://walscope, azblob://walscope
}

// Required reports whether CI requires the servers.
func Required() bool { return os.Getenv("WALSCOPE_REQUIRE_OBJSTORE") == "1" }

func missing(tb testing.TB, what string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s is not installed, and WALSCOPE_REQUIRE_OBJSTORE=1 (.ci/run installs it)", what)
	}
	tb.Skipf("%s is not installed (.ci/run installs it)", what)
}

// find looks for a program on PATH, then in the given directories.
func find(name string, dirs ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, name); isExec(p) {
			return p
		}
	}
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func goBin() string {
	if gb := os.Getenv("GOBIN"); gb != "" {
		return gb
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	return filepath.Join(strings.TrimSpace(string(out)), "bin")
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a server until the test ends, and waits until ready answers.
func start(tb testing.TB, name string, cmd *exec.Cmd, ready func() bool) {
	tb.Helper()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// Azurite (node) takes long to start on a loaded 2-core machine.
	deadline := time.Now().Add(180 * time.Second)
	for !ready() {
		select {
		case <-exited:
			tb.Fatalf("%s exited: %s\n%s", name, cmd.ProcessState, log.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not start in 180 s:\n%s", name, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func answers(url string) func() bool {
	return func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}
}

// S3 starts versitygw (posix backend) with a bucket "walscope".
func S3(tb testing.TB) *Store {
	tb.Helper()
	bin := find("versitygw", goBin())
	if bin == "" {
		missing(tb, "versitygw (go install github.com/versity/versitygw/cmd/versitygw)")
	}
	root := tb.TempDir()
	if err := os.Mkdir(filepath.Join(root, "walscope"), 0o755); err != nil { // a bucket is a directory
		tb.Fatal(err)
	}
	port := freePort(tb)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--access", "walscope", "--secret", "walscope-secret", "--port", addr, "posix", root)
	start(tb, "versitygw", cmd, answers("http://"+addr+"/"))
	return &Store{Name: "s3", Bucket: "s3://walscope", Env: []string{
		"AWS_ENDPOINT_URL=http://" + addr, "AWS_ACCESS_KEY_ID=walscope", "AWS_SECRET_ACCESS_KEY=walscope-secret",
		"AWS_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
	}}
}

// GCS starts fake-gcs-server (in memory) with a bucket "walscope".
func GCS(tb testing.TB) *Store {
	tb.Helper()
	bin := find("fake-gcs-server", goBin())
	if bin == "" {
		missing(tb, "fake-gcs-server (go install github.com/fsouza/fake-gcs-server)")
	}
	data := tb.TempDir()
	if err := os.Mkdir(filepath.Join(data, "walscope"), 0o755); err != nil { // -data: a directory per bucket
		tb.Fatal(err)
	}
	port := freePort(tb)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port),
		"-backend", "memory", "-data", data, "-public-host", addr, "-external-url", "http://"+addr, "-log-level", "error")
	start(tb, "fake-gcs-server", cmd, answers("http://"+addr+"/storage/v1/b"))
	return &Store{Name: "gcs", Bucket: "gs://walscope", Env: []string{"STORAGE_EMULATOR_HOST=" + addr}}
}

// azuriteKey is Azurite's well-known development account key (public, in
// Microsoft's documentation).
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// Azure starts Azurite's blob service with a container "walscope".
func Azure(tb testing.TB) *Store {
	tb.Helper()
	dir := os.Getenv("WALSCOPE_AZURITE_DIR")
	if dir == "" {
		dir = "/opt/walscope-tools/azurite"
	}
	bin := find("azurite-blob", filepath.Join(dir, "node_modules", ".bin"))
	if bin == "" {
		missing(tb, "azurite-blob (npm install azurite)")
	}
	port := freePort(tb)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port), "--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry")
	start(tb, "azurite", cmd, answers("http://"+addr+"/devstoreaccount1?comp=list"))
	conn := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azuriteKey +
		";BlobEndpoint=http://" + addr + "/devstoreaccount1;"
	s := &Store{Name: "azure", Bucket: "azblob://walscope", Env: []string{"AZURE_STORAGE_CONNECTION_STRING=" + conn}}
	if err := createContainer(addr, "walscope"); err != nil {
		tb.Fatalf("creating the container: %v", err)
	}
	return s
}

// All starts the three servers.
func All(tb testing.TB) []*Store {
	return []*Store{S3(tb), GCS(tb), Azure(tb)}
}
