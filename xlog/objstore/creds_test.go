package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clearAWS empties the variables the AWS chain reads.
func clearAWS(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_ROLE_ARN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SSO", "AWS_ENDPOINT_URL_SSO_OIDC",
		"AWS_STS_REGIONAL_ENDPOINTS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_ROLE_SESSION_NAME"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", dir) // ~/.aws/sso/cache
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAWSCredentialChain: each source of the chain, in the SDKs' order.
func TestAWSCredentialChain(t *testing.T) {
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("Action") != "AssumeRoleWithWebIdentity" || r.Form.Get("WebIdentityToken") != "jwt" {
			http.Error(w, "<Error><Code>InvalidIdentityToken</Code></Error>", 400)
			return
		}
		fmt.Fprint(w, `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>
<AccessKeyId>ASIAWEB</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>tok</SessionToken>
<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`)
	}))
	defer sts.Close()
	ecs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "secret-token" {
			http.Error(w, "no", 401)
			return
		}
		fmt.Fprint(w, `{"AccessKeyId":"ASIAECS","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}`)
	}))
	defer ecs.Close()

	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantKey string
		wantErr string
	}{
		{"environment", func(t *testing.T, dir string) {
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
		}, "AKIAENV", ""},
		{"web identity", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "token"), "jwt\n")
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", filepath.Join(dir, "token"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r")
			t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
		}, "ASIAWEB", ""},
		{"credentials file, named profile", func(t *testing.T, dir string) {
			write(t, os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), "[default]\naws_access_key_id = AKIADEF\naws_secret_access_key = s\n[prod]\naws_access_key_id=AKIAPROD\naws_secret_access_key=s\n")
			t.Setenv("AWS_PROFILE", "prod")
		}, "AKIAPROD", ""},
		{"config file", func(t *testing.T, dir string) {
			write(t, os.Getenv("AWS_CONFIG_FILE"), "[profile other]\naws_access_key_id=X\n[default]\naws_access_key_id = AKIACFG\naws_secret_access_key = s\nregion = eu-west-3\n")
		}, "AKIACFG", ""},
		{"sso_session without its section", func(t *testing.T, dir string) {
			write(t, os.Getenv("AWS_CONFIG_FILE"), "[default]\nsso_session = corp\n")
		}, "", `sso_session "corp" has no [sso-session corp] section`},
		{"container", func(t *testing.T, dir string) {
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ecs.URL+"/creds")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token")
		}, "ASIAECS", ""},
		{"nothing", func(t *testing.T, dir string) {}, "", "no AWS credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearAWS(t)
			tc.setup(t, t.TempDir())
			p := &awsCredProvider{region: "us-east-1", hc: http.DefaultClient}
			c, err := p.get(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", c, err, tc.wantErr)
				}
				return
			}
			if err != nil || c.AccessKeyID != tc.wantKey {
				t.Fatalf("got %+v, %v; want key %s", c, err, tc.wantKey)
			}
		})
	}
	clearAWS(t)
	write(t, os.Getenv("AWS_CONFIG_FILE"), "[default]\nregion = eu-west-3\n")
	if r := awsRegion(); r != "eu-west-3" {
		t.Errorf("region from the config file: %q", r)
	}
	t.Setenv("AWS_REGION", "ap-south-1")
	if r := awsRegion(); r != "ap-south-1" {
		t.Errorf("AWS_REGION: %q", r)
	}
}

// TestAzureConnectionString: the parts of a connection string, the key's
// base64 padding kept.
func TestAzureConnectionString(t *testing.T) {
	b := &azureBackend{scheme: "https"}
	err := b.fromConnectionString("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5a2V5a2U=;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;")
	if err != nil || b.account != "devstoreaccount1" || string(b.key) != "keykeyke" || b.host != "127.0.0.1:10000" || b.base != "/devstoreaccount1" || b.scheme != "http" {
		t.Errorf("got %+v, %v", b, err)
	}
	b = &azureBackend{scheme: "https"}
	err = b.fromConnectionString("BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2021&sig=abc%3D")
	if err != nil || b.sas != "sv=2021&sig=abc%3D" || b.host != "acct.blob.core.windows.net" {
		t.Errorf("SAS: got %+v, %v", b, err)
	}
	if err := (&azureBackend{}).fromConnectionString("AccountName=x"); err == nil {
		t.Error("a connection string without key or SAS was accepted")
	}
}

// TestEntraToken: a service principal's secret is exchanged at the
// authority for a token for Azure Storage.
func TestEntraToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/tenant/oauth2/v2.0/token" || r.Form.Get("client_secret") != "pw" || r.Form.Get("scope") != storageScope {
			http.Error(w, "bad request", 400)
			return
		}
		fmt.Fprint(w, `{"access_token":"tok","expires_in":3600}`)
	}))
	defer srv.Close()
	t.Setenv("AZURE_AUTHORITY_HOST", srv.URL)
	t.Setenv("AZURE_TENANT_ID", "tenant")
	t.Setenv("AZURE_CLIENT_ID", "app")
	t.Setenv("AZURE_CLIENT_SECRET", "pw")
	tok, err := (&entraToken{hc: http.DefaultClient}).get(context.Background())
	if err != nil || tok != "tok" {
		t.Errorf("got %q, %v", tok, err)
	}
}

// TestURLs: the URLs users write, and the tree's paths.
func TestURLs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
		ok   bool
	}{
		{"s3://bucket/a/b/", Location{"s3", "bucket", "a/b"}, true},
		{"gs://b", Location{"gs", "b", ""}, true},
		{"azblob://container/wal_005", Location{"azblob", "container", "wal_005"}, true},
		{"s3:///nobucket", Location{}, false},
		{"s3://b/k?versionId=1", Location{}, false},
		{"/local/path", Location{}, false},
		{"http://host/x", Location{}, false},
	} {
		got, err := ParseURL(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrURL) {
			t.Errorf("ParseURL(%q): %v is not ErrURL", tc.in, err)
		}
	}
	tr := &Tree{loc: Location{Scheme: "s3", Bucket: "b"}}
	for _, tc := range [][]string{
		{"s3://b/archive/main", "s3://b/archive", "main"},
		{"s3://b/wal_005", "s3://b", "wal_005"},
		{"s3://b/x/00000002.history", "s3://b/x/", "00000002.history"},
	} {
		if got := tr.Join(tc[1], tc[2]); got != tc[0] {
			t.Errorf("Join(%q, %q) = %q, want %q", tc[1], tc[2], got, tc[0])
		}
	}
	if _, err := tr.key("gs://b/x"); err == nil {
		t.Error("a path of another store was accepted")
	}
	if !errors.Is(&Error{Class: ClassNotFound}, fs.ErrNotExist) || errors.Is(&Error{Class: ClassNetwork, Err: errors.New("x")}, fs.ErrNotExist) {
		t.Error("Error does not match fs.ErrNotExist exactly when not found")
	}
}
