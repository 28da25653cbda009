package objstoretest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestAWSProfilesMinIO reads an archive from MinIO with the credentials of
// ~/.aws/config profiles as people write them: a role assumed with
// another profile's keys (STS AssumeRole, signed by walscope and checked by
// MinIO; MinIO's temporary credentials then sign the S3 requests), a
// credential_process, and a refused source. Each run must print what the
// local run prints.
func TestAWSProfilesMinIO(t *testing.T) {
	s := MinIO(t)
	var src string
	for _, set := range testwal.Sets(t) {
		if set.Name == fixtureSet {
			src = filepath.Join(testwal.Extract(t, set), "archive")
		}
	}
	if src == "" {
		t.Fatalf("fixture %s not found", fixtureSet)
	}
	remote := upload(t, s, src, "plain")
	local := map[string]result{}
	commands := [][]string{{"ls"}, {"stats"}}
	for _, args := range commands {
		local[args[0]] = run(t, nil, append(args, src)...)
		if local[args[0]].code != 0 || len(local[args[0]].stdout) < 100 {
			t.Fatalf("local %v: exit %d: %s", args, local[args[0]].code, local[args[0]].stderr)
		}
	}

	home := t.TempDir()
	script := filepath.Join(home, "bin dir", "minio-creds")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n[ \"$1\" = --user ] && [ \"$2\" = \"wal reader\" ] || { echo \"bad arguments: $*\" >&2; exit 1; }\n"+
		`echo '{"Version": 1, "AccessKeyId": "walscope", "SecretAccessKey": "walscope-secret"}'`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := `[profile base]
region = us-east-1

[profile reader]
role_arn = arn:aws:iam::123456789012:role/wal-reader
source_profile = base
role_session_name = walscope-test
duration_seconds = 900

[profile forged]
role_arn = arn:aws:iam::123456789012:role/wal-reader
source_profile = forger

[profile forger]
aws_access_key_id = walscope
aws_secret_access_key = not-the-secret

[profile process]
credential_process = "` + script + `" --user "wal reader"

[profile reader2]
role_arn = arn:aws:iam::123456789012:role/wal-reader-2
source_profile = reader

[profile process-role]
role_arn = arn:aws:iam::123456789012:role/wal-reader
source_profile = process
`
	// The keys of base are in the credentials file, its region in the
	// config file: the SDKs merge the two.
	writeFile(t, filepath.Join(home, ".aws", "config"), config)
	writeFile(t, filepath.Join(home, ".aws", "credentials"), "[base]\naws_access_key_id = walscope\naws_secret_access_key = walscope-secret\n")
	env := func(profile string) []string {
		e := []string{"HOME=" + home, "AWS_PROFILE=" + profile,
			"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=",
			"AWS_CONFIG_FILE=", "AWS_SHARED_CREDENTIALS_FILE=", "AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=us-east-1"}
		for _, kv := range s.Env {
			if ep, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL="); ok {
				e = append(e, kv, "AWS_ENDPOINT_URL_STS="+ep) // STS at MinIO too
			}
		}
		return e
	}
	for _, profile := range []string{"reader", "process", "process-role"} {
		t.Run(profile, func(t *testing.T) {
			for _, args := range commands {
				got := run(t, env(profile), append(args, remote)...)
				want := local[args[0]]
				if got.code != 0 || strings.ReplaceAll(got.stdout, remote, src) != want.stdout {
					t.Errorf("%v with profile %s: exit %d, stderr %q; stdout differs from the local run: %s",
						args, profile, got.code, got.stderr, firstDiff(strings.ReplaceAll(got.stdout, remote, src), want.stdout))
				}
			}
		})
	}
	// MinIO refuses an AssumeRole signed with the wrong secret: walscope
	// reports STS's answer and ends as for any refused credentials.
	r := run(t, env("forged"), "ls", remote)
	if r.code != 2 || !strings.Contains(r.stderr, "access-denied") || !strings.Contains(r.stderr, "AssumeRole at http://") ||
		!strings.Contains(r.stderr, "signature we calculated does not match") ||
		!strings.Contains(r.stderr, "AWS profile forged") {
		t.Errorf("forged source: exit %d, stderr %q; want exit 2, access-denied, STS's refusal of the signature and the profile", r.code, r.stderr)
	}
	// A chain of two roles: the second AssumeRole is signed with the first
	// role's temporary credentials, which MinIO accepts as a signature (no
	// SignatureDoesNotMatch, no unknown key) and then refuses, as it refuses
	// role chaining; AWS allows it (the replaying STS of xlog/objstore's
	// TestRoleProfiles checks the chain to the end).
	r = run(t, env("reader2"), "ls", remote)
	if r.code != 2 || !strings.Contains(r.stderr, "assuming role arn:aws:iam::123456789012:role/wal-reader-2 with the credentials of role arn:aws:iam::123456789012:role/wal-reader (profile reader)") ||
		!strings.Contains(r.stderr, "403 AccessDenied: Access Denied.") {
		t.Errorf("chain: exit %d, stderr %q", r.code, r.stderr)
	}
	// Without the credentials file the base profile has no keys: the role
	// has no source.
	writeFile(t, filepath.Join(home, ".aws", "credentials"), "")
	r = run(t, env("reader"), "ls", remote)
	if r.code != 2 || !strings.Contains(r.stderr, `source_profile "base" has no credentials`) {
		t.Errorf("source without its secret: exit %d, stderr %q", r.code, r.stderr)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
