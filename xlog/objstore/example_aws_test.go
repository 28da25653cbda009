package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/walscope/walscope/xlog/objstore"
)

// A profile of ~/.aws/config is resolved as the AWS CLI resolves it; one
// that cannot give credentials (here a role whose source_profile is in
// neither file) fails the first request with an error that wraps
// ErrAWSCredentials and is of class access-denied, before anything is sent.
func ExampleErrAWSCredentials() {
	dir, _ := os.MkdirTemp("", "aws")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config")
	os.WriteFile(config, []byte("[profile nightly]\nrole_arn = arn:aws:iam::123456789012:role/wal-reader\nsource_profile = ci\n"), 0o600)
	for k, v := range map[string]string{"AWS_CONFIG_FILE": config, "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "nightly", "AWS_ACCESS_KEY_ID": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_REGION": "eu-west-1"} {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	tree, err := objstore.Open(context.Background(), "s3://wal-archive/main", objstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = tree.ReadDir("s3://wal-archive/main")
	var e *objstore.Error
	fmt.Println(errors.Is(err, objstore.ErrAWSCredentials), errors.As(err, &e) && e.Class == objstore.ClassAccessDenied)
	msg := err.Error()
	fmt.Println(msg[strings.Index(msg, "AWS profile"):strings.Index(msg, " is not in")])
	// Output:
	// true true
	// AWS profile nightly: source_profile "ci"
}
