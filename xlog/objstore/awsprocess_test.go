package objstore

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shellSplitCases are command lines with the words Python's shlex.split
// (the AWS CLI's splitting of credential_process) gives for them; nil
// words: shlex raises ValueError. TestShellSplit asks python3 again where
// it is installed.
var shellSplitCases = []struct {
	in    string
	words []string
}{
	{`/usr/bin/get-creds --profile prod`, []string{"/usr/bin/get-creds", "--profile", "prod"}},
	{`  a   b	c  `, []string{"a", "b", "c"}},
	{`"/opt/my tools/creds" 'two words' "dq \"x\"" back\ slash`, []string{"/opt/my tools/creds", "two words", `dq "x"`, "back slash"}},
	{`a"b c"d 'e'"f"`, []string{"ab cd", "ef"}},
	{`"" ''`, []string{"", ""}},
	{`"a\b" 'c\d' e\\f`, []string{`a\b`, `c\d`, `e\f`}},
	{`"\\" "\$HOME" $HOME`, []string{`\`, `\$HOME`, "$HOME"}},
	{`a #b`, []string{"a", "#b"}},
	{`'unclosed`, nil},
	{`"unclosed`, nil},
	{`trailing\`, nil},
	{``, []string{}},
}

func TestShellSplit(t *testing.T) {
	for _, tc := range shellSplitCases {
		got, err := shellSplit(tc.in)
		if tc.words == nil {
			if err == nil || !errors.Is(err, errShellSplit) {
				t.Errorf("shellSplit(%q) = %q, %v; want an error", tc.in, got, err)
			}
		} else if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.words) {
			t.Errorf("shellSplit(%q) = %q, %v; want %q", tc.in, got, err, tc.words)
		}
	}
	python := "/usr/bin/python3" // Debian's: a version manager's shim on PATH can take seconds to start
	if !isExecutable(python) {
		python, _ = exec.LookPath("python3")
	}
	if python == "" {
		t.Skip("python3 not installed: the table alone was checked")
	}
	var inputs []string
	for _, tc := range shellSplitCases {
		inputs = append(inputs, tc.in)
	}
	in, _ := json.Marshal(inputs)
	cmd := exec.Command(python, "-c", `import json,shlex,sys
out = []
for s in json.load(sys.stdin):
    try: out.append(shlex.split(s))
    except ValueError: out.append(None)
print(json.dumps(out))`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want [][]string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(shellSplitCases) {
		t.Fatalf("python3 printed %s: %v", out, err)
	}
	for i, tc := range shellSplitCases {
		if (want[i] == nil) != (tc.words == nil) || want[i] != nil && fmt.Sprintf("%q", want[i]) != fmt.Sprintf("%q", tc.words) {
			t.Errorf("%q: shlex.split gives %q, the table %q", tc.in, want[i], tc.words)
		}
	}
}

// FuzzShellSplit: splitting never panics, fails only with errShellSplit,
// and words quoted back (single quotes) split into the same words.
func FuzzShellSplit(f *testing.F) {
	for _, tc := range shellSplitCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := shellSplit(s)
		if err != nil {
			if !errors.Is(err, errShellSplit) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := shellSplit(strings.Join(quoted, " "))
		if err != nil || fmt.Sprintf("%q", again) != fmt.Sprintf("%q", words) {
			t.Fatalf("%q: words %q quoted back split into %q, %v", s, words, again, err)
		}
	})
}

// FuzzParseAWSConfig: any text parses without panic into sections whose
// names and keys are trimmed, keys lower case.
func FuzzParseAWSConfig(f *testing.F) {
	f.Add("[default]\nregion = eu-west-1\n[profile x]\nrole_arn=arn\ns3 =\n  addressing_style = path\n[sso-session corp]\nsso_region = us-east-1\n")
	f.Add("[ profile  y ]\n# comment\n; comment\nkey\n=value\n[broken\nk=v\n")
	f.Fuzz(func(t *testing.T, text string) {
		secs, err := parseAWSConfig(strings.NewReader(text))
		if err != nil {
			return // a line over 1 MiB
		}
		for name, sec := range secs {
			if name != strings.Join(strings.Fields(name), " ") || strings.Contains(name, "]") {
				t.Fatalf("section name %q", name)
			}
			for k, v := range sec {
				if k != strings.ToLower(k) || k != strings.TrimSpace(k) || v != strings.TrimSpace(v) || strings.Contains(k, "\n") {
					t.Fatalf("section %q: key %q value %q", name, k, v)
				}
			}
		}
	})
}

// TestParseAWSConfig: sections of both kinds, nested settings, comments.
func TestParseAWSConfig(t *testing.T) {
	secs, err := parseAWSConfig(strings.NewReader("# top\n[default]\nregion = eu-west-1\ns3 =\n  addressing_style = path\n  max_concurrent_requests = 20\nOutput=json\n[ profile   prod ]\nrole_arn = arn:aws:iam::1:role/r ; not a comment\n[sso-session corp]\nsso_region=us-east-1\n[broken\nlost = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"default":          {"region": "eu-west-1", "s3": "", "s3.addressing_style": "path", "s3.max_concurrent_requests": "20", "output": "json"},
		"profile prod":     {"role_arn": "arn:aws:iam::1:role/r ; not a comment"},
		"sso-session corp": {"sso_region": "us-east-1"},
	}
	if fmt.Sprint(secs) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", secs, want)
	}
}

// processScript writes an executable script into a directory whose name
// has a space (the command line must quote it).
func processScript(t *testing.T, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "my tools")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "creds.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCredentialProcess runs real scripts as credential_process.
func TestCredentialProcess(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	argsFile := filepath.Join(t.TempDir(), "args")
	good := processScript(t, `printf '%s\n' "$@" > "`+argsFile+`"
printf '{"Version": 1, "AccessKeyId": "ASIAPROC", "SecretAccessKey": "proc-secret", "SessionToken": "proc-token", "Expiration": "2099-05-06T07:08:09Z"}'
`)
	for _, tc := range []struct {
		name, script, args string
		timeout            time.Duration
		wantKey, wantErr   string
	}{
		{"quoted arguments", good, ` --account "111 222" 'it''s' a\ b`, 0, "ASIAPROC", ""},
		{"static, no expiry", processScript(t, `echo '{"Version":1,"AccessKeyId":"AKIAPROC","SecretAccessKey":"s"}'`), "", 0, "AKIAPROC", ""},
		{"failing", processScript(t, "echo 'token expired: run corp-login' >&2\nexit 3\n"), "", 0, "", "failed (exit status 3): token expired: run corp-login"},
		{"version 2", processScript(t, `echo '{"Version":2,"AccessKeyId":"A","SecretAccessKey":"s"}'`), "", 0, "", "Version 2; the only version is 1"},
		{"no secret", processScript(t, `echo '{"Version":1,"AccessKeyId":"A"}'`), "", 0, "", "no AccessKeyId or no SecretAccessKey"},
		{"not JSON", processScript(t, "echo 'Enter MFA code:'\necho 'needs a terminal' >&2\n"), "", 0, "", "printed no JSON credentials"},
		{"bad expiration", processScript(t, `echo '{"Version":1,"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"tomorrow"}'`), "", 0, "", `Expiration "tomorrow"`},
		{"too slow", processScript(t, "echo 'waiting for the browser' >&2\nsleep 30\n"), "", 300 * time.Millisecond, "", "did not finish in 300ms: waiting for the browser"},
		{"missing program", "/nonexistent/creds", "", 0, "", "credential_process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearAWS(t)
			if tc.timeout != 0 {
				old := processTimeout
				processTimeout = tc.timeout
				defer func() { processTimeout = old }()
			}
			cmdline := `"` + tc.script + `"` + tc.args
			write(t, os.Getenv("AWS_CONFIG_FILE"), "[profile proc]\ncredential_process = "+cmdline+"\n")
			t.Setenv("AWS_PROFILE", "proc")
			p := &awsCredProvider{region: "us-east-1", hc: http.DefaultClient}
			start := time.Now()
			c, err := p.get(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrAWSCredentials) || !strings.Contains(err.Error(), "AWS profile proc") {
					t.Fatalf("got %+v, %v; want an error of profile proc containing %q", c, err, tc.wantErr)
				}
				if time.Since(start) > 10*time.Second {
					t.Errorf("the failure took %v", time.Since(start))
				}
				return
			}
			if err != nil || c.AccessKeyID != tc.wantKey {
				t.Fatalf("got %+v, %v", c, err)
			}
			if tc.name == "quoted arguments" {
				args, _ := os.ReadFile(argsFile)
				if want := "--account\n111 222\nits\na b\n"; string(args) != want {
					t.Errorf("the script got arguments %q, want %q", args, want)
				}
				if c.SessionToken != "proc-token" || !c.Expires.Equal(time.Date(2099, 5, 6, 7, 8, 9, 0, time.UTC)) {
					t.Errorf("got %+v", c)
				}
			} else if !c.Expires.IsZero() {
				t.Errorf("no Expiration printed, but expires %v", c.Expires)
			}
		})
	}
}

// TestSSOCacheFile: the cache file's name is the SHA-1 of the start URL
// (legacy) or of the session's name. The legacy value is the one
// aws-sdk-go-v2's own test expects (credentials/ssocreds,
// TestStandardSSOCacheTokenFilepath).
func TestSSOCacheFile(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	if got := ssoCacheFile(ssoConfig{startURL: "https://example.awsapps.com/start"}); got != "/home/u/.aws/sso/cache/e8be5486177c5b5392bd9aa76563515b29358e6e.json" {
		t.Errorf("legacy: %s", got)
	}
	sum := sha1.Sum([]byte("corp"))
	if got := ssoCacheFile(ssoConfig{session: "corp", startURL: "https://example.awsapps.com/start"}); got != "/home/u/.aws/sso/cache/"+hex.EncodeToString(sum[:])+".json" {
		t.Errorf("session: %s", got)
	}
}

// TestSSOProfiles: SSO profiles, new and legacy, against a portal replaying
// the documented GetRoleCredentials answer.
func TestSSOProfiles(t *testing.T) {
	portal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" { // SSO OIDC CreateToken (API Reference's request and answer)
			var in map[string]string
			json.NewDecoder(r.Body).Decode(&in)
			if r.Method != "POST" || in["grantType"] != "refresh_token" || in["clientId"] != "c" || in["clientSecret"] != "s" || in["refreshToken"] != "refresh-1" {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":"invalid_grant","error_description":"Invalid refresh token provided"}`)
				return
			}
			fmt.Fprint(w, `{"accessToken":"valid-token","expiresIn":3600,"refreshToken":"refresh-2","tokenType":"Bearer"}`)
			return
		}
		q := r.URL.Query()
		if r.Method != "GET" || r.URL.Path != "/federation/credentials" || q.Get("account_id") != "111122223333" {
			w.Header().Set("X-Amzn-Errortype", "InvalidRequestException:http://internal.amazon.com/coral/com.amazonaws.switchboard.portal/")
			w.WriteHeader(400)
			fmt.Fprint(w, `{"message":"bad request"}`)
			return
		}
		if r.Header.Get("X-Amz-Sso_bearer_token") != "valid-token" {
			w.Header().Set("X-Amzn-Errortype", "UnauthorizedException:http://internal.amazon.com/coral/com.amazonaws.switchboard.portal/")
			w.WriteHeader(401)
			fmt.Fprint(w, `{"message":"Session token not found or invalid"}`)
			return
		}
		if q.Get("role_name") != "ReadOnly" {
			w.Header().Set("X-Amzn-Errortype", "ForbiddenException:http://internal.amazon.com/coral/com.amazonaws.switchboard.portal/")
			w.WriteHeader(403)
			fmt.Fprint(w, `{"message":"No access"}`)
			return
		}
		fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":"ASIASSO","secretAccessKey":"sso-secret","sessionToken":"sso-token","expiration":%d}}`, int64(4102444800000))
	}))
	defer portal.Close()
	session := "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = ReadOnly\nregion = eu-west-3\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\nsso_registration_scopes = sso:account:access\n"
	legacy := "[profile dev]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\nsso_account_id = 111122223333\nsso_role_name = ReadOnly\n"
	tokenRefresh := func(tok string, exp time.Time, refresh string) string {
		return fmt.Sprintf(`{"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1", "accessToken": %q, "expiresAt": %q, "clientId": "c", "clientSecret": "s", "refreshToken": %q, "registrationExpiresAt": "2099-01-01T00:00:00Z"}`, tok, exp.UTC().Format(time.RFC3339), refresh)
	}
	token := func(tok string, exp time.Time) string { return tokenRefresh(tok, exp, "refresh-1") }
	earlier := time.Now().Add(-time.Minute)
	later := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name, config, cacheKey, cache string
		wantKey, wantErr              string
	}{
		{"sso_session", session, "corp", token("valid-token", later), "ASIASSO", ""},
		{"legacy", legacy, "https://corp.awsapps.com/start", token("valid-token", later), "ASIASSO", ""},
		{"older CLI's expiry format", legacy, "https://corp.awsapps.com/start", `{"accessToken":"valid-token","expiresAt":"` + later.UTC().Format("2006-01-02T15:04:05UTC") + `"}`, "ASIASSO", ""},
		{"expired, refreshed", session, "corp", token("old-token", earlier), "ASIASSO", ""},
		{"expired, refresh refused", session, "corp", tokenRefresh("old-token", earlier, "revoked"), "", "could not be refreshed (CreateToken at http"},
		{"expired legacy (never refreshed)", legacy, "https://corp.awsapps.com/start", token("old-token", earlier), "", "the SSO login expired at"},
		{"not logged in", session, "", "", "", "no SSO login cached"},
		{"token revoked", session, "corp", token("revoked", later), "", "401 Unauthorized UnauthorizedException Session token not found or invalid: run `aws sso login --profile dev`"},
		{"role not granted", strings.Replace(session, "ReadOnly", "Admin", 1), "corp", token("valid-token", later), "", "403 Forbidden ForbiddenException No access"},
		{"session section missing", "[profile dev]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n", "", "", "", `sso_session "corp" has no [sso-session corp] section`},
		{"contradicting region", strings.Replace(session, "region = eu-west-3", "sso_region = us-east-1", 1), "corp", "", "", `sso_region "us-east-1" differs from sso-session corp's "eu-west-1"`},
		{"incomplete", "[profile dev]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n", "", "", "", "SSO settings incomplete: no sso_account_id, sso_role_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearAWS(t)
			t.Setenv("AWS_ENDPOINT_URL_SSO", portal.URL)
			t.Setenv("AWS_ENDPOINT_URL_SSO_OIDC", portal.URL)
			t.Setenv("AWS_PROFILE", "dev")
			write(t, os.Getenv("AWS_CONFIG_FILE"), tc.config)
			var cacheFile string
			if tc.cacheKey != "" {
				sum := sha1.Sum([]byte(tc.cacheKey))
				dir := filepath.Join(os.Getenv("HOME"), ".aws", "sso", "cache")
				os.MkdirAll(dir, 0o700)
				cacheFile = filepath.Join(dir, hex.EncodeToString(sum[:])+".json")
				write(t, cacheFile, tc.cache)
			}
			p := &awsCredProvider{region: "eu-west-3", hc: http.DefaultClient}
			c, err := p.get(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrAWSCredentials) {
					t.Fatalf("got %+v, %v; want an error containing %q", c, err, tc.wantErr)
				}
				if strings.Contains(tc.name, "expired") || strings.Contains(tc.name, "logged") || strings.Contains(tc.name, "revoked") {
					if !strings.Contains(err.Error(), "run `aws sso login --profile dev`") {
						t.Errorf("%v does not say how to log in", err)
					}
				}
				return
			}
			if err != nil || c.AccessKeyID != tc.wantKey || c.SessionToken != "sso-token" || !c.Expires.Equal(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("got %+v, %v", c, err)
			}
			if tc.name == "expired, refreshed" {
				// The refreshed token is cached for the CLI and the next run.
				var cached map[string]string
				data, _ := os.ReadFile(cacheFile)
				json.Unmarshal(data, &cached)
				exp, err := time.Parse(time.RFC3339, cached["expiresAt"])
				if cached["accessToken"] != "valid-token" || cached["refreshToken"] != "refresh-2" || cached["startUrl"] != "https://corp.awsapps.com/start" ||
					cached["registrationExpiresAt"] != "2099-01-01T00:00:00Z" || err != nil || time.Until(exp) < 50*time.Minute {
					t.Errorf("cache after the refresh: %s", data)
				}
				if st, err := os.Stat(cacheFile); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("cache file mode: %v %v", st.Mode(), err)
				}
			}
		})
	}
	t.Setenv("AWS_ENDPOINT_URL_SSO", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	if e := ssoEndpoint("eu-west-1"); e != "https://portal.sso.eu-west-1.amazonaws.com" {
		t.Errorf("portal endpoint %s", e)
	}
	if e := ssoEndpoint("cn-north-1"); e != "https://portal.sso.cn-north-1.amazonaws.com.cn" {
		t.Errorf("portal endpoint %s", e)
	}
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
