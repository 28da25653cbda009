package objstore

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// AWS credentials, found as the AWS SDKs find them (the "default credential
// provider chain", https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html),
// in this order:
//
//  1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
//  2. web identity (EKS IRSA, any OIDC federation): AWS_WEB_IDENTITY_TOKEN_FILE
//     and AWS_ROLE_ARN, exchanged with STS AssumeRoleWithWebIdentity;
//  3. the shared files: the AWS_PROFILE (default "default") profile of
//     ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE) and ~/.aws/config
//     (AWS_CONFIG_FILE), static keys;
//  4. the container endpoint (ECS task roles, EKS Pod Identity):
//     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI, with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
//  5. the EC2 instance metadata service (IMDSv2), unless
//     AWS_EC2_METADATA_DISABLED=true.
//
// Not supported (the SDKs' less common sources): SSO sessions,
// credential_process, and role_arn/source_profile chains in the config
// file; a profile that uses them is reported, not ignored.

type awsCreds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time // zero: static
	Source                                     string
}

// awsCredProvider caches credentials and renews expiring ones.
type awsCredProvider struct {
	mu     sync.Mutex
	cur    *awsCreds
	region string
	hc     *http.Client
}

func (p *awsCredProvider) get(ctx context.Context) (*awsCreds, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && (p.cur.Expires.IsZero() || time.Until(p.cur.Expires) > 5*time.Minute) {
		return p.cur, nil
	}
	c, err := p.find(ctx)
	if err != nil {
		return nil, err
	}
	p.cur = c
	return c, nil
}

// errNoCreds is the chain's answer when no source has credentials.
var errNoCreds = errors.New("no AWS credentials found (environment, web identity, ~/.aws files, container or instance role)")

func (p *awsCredProvider) find(ctx context.Context) (*awsCreds, error) {
	if id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		return &awsCreds{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"), Source: "environment"}, nil
	}
	if tokenFile, role := os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE"), os.Getenv("AWS_ROLE_ARN"); tokenFile != "" && role != "" {
		return p.webIdentity(ctx, tokenFile, role)
	}
	if c, err := sharedFileCreds(); c != nil || err != nil {
		return c, err
	}
	if rel, full := os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"); rel != "" || full != "" {
		u := full
		if rel != "" {
			u = "http://169.254.170.2" + rel
		}
		return p.container(ctx, u)
	}
	if !strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		c, err := p.imds(ctx)
		if err == nil {
			return c, nil
		}
	}
	return nil, errNoCreds
}

// profile is the profile the shared files are read for.
func profile() string {
	if p := os.Getenv("AWS_PROFILE"); p != "" {
		return p
	}
	if p := os.Getenv("AWS_DEFAULT_PROFILE"); p != "" {
		return p
	}
	return "default"
}

func homeFile(env string, rel ...string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(append([]string{home}, rel...)...)
}

// readINI reads one section of an AWS shared file ("[name]" in the
// credentials file, "[profile name]" or "[default]" in the config file).
func readINI(path string, sections ...string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out map[string]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			name := strings.TrimSpace(line[1 : len(line)-1])
			in = false
			for _, s := range sections {
				in = in || name == s
			}
			if in && out == nil {
				out = map[string]string{}
			}
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && in {
			out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	return out
}

func configSection() map[string]string {
	p := profile()
	return readINI(homeFile("AWS_CONFIG_FILE", ".aws", "config"), "profile "+p, p)
}

func sharedFileCreds() (*awsCreds, error) {
	p := profile()
	for _, sec := range []map[string]string{
		readINI(homeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws", "credentials"), p),
		configSection(),
	} {
		if sec == nil {
			continue
		}
		if id, secret := sec["aws_access_key_id"], sec["aws_secret_access_key"]; id != "" && secret != "" {
			return &awsCreds{AccessKeyID: id, SecretAccessKey: secret, SessionToken: sec["aws_session_token"], Source: "profile " + p}, nil
		}
		for _, k := range []string{"sso_session", "sso_start_url", "credential_process", "role_arn"} {
			if sec[k] != "" {
				return nil, fmt.Errorf("AWS profile %q uses %s, which walscope does not support: export its credentials (aws configure export-credentials --format env)", p, k)
			}
		}
	}
	return nil, nil
}

// awsRegion is the region: AWS_REGION, AWS_DEFAULT_REGION, the profile's,
// or us-east-1.
func awsRegion() string {
	for _, e := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if r := os.Getenv(e); r != "" {
			return r
		}
	}
	if r := configSection()["region"]; r != "" {
		return r
	}
	return "us-east-1"
}

func (p *awsCredProvider) webIdentity(ctx context.Context, tokenFile, role string) (*awsCreds, error) {
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("web identity: %w", err)
	}
	session := os.Getenv("AWS_ROLE_SESSION_NAME")
	if session == "" {
		session = fmt.Sprintf("walscope-%d", time.Now().UnixNano())
	}
	form := url.Values{"Action": {"AssumeRoleWithWebIdentity"}, "Version": {"2011-06-15"}, "RoleArn": {role},
		"RoleSessionName": {session}, "WebIdentityToken": {strings.TrimSpace(string(token))}}
	endpoint := "https://sts." + p.region + ".amazonaws.com/"
	if e := os.Getenv("AWS_ENDPOINT_URL_STS"); e != "" {
		endpoint = e
	}
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("web identity: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("web identity: STS answered %s: %s", resp.Status, s3ErrorText(body))
	}
	var out struct {
		Result struct {
			Credentials struct {
				AccessKeyID     string    `xml:"AccessKeyId"`
				SecretAccessKey string    `xml:"SecretAccessKey"`
				SessionToken    string    `xml:"SessionToken"`
				Expiration      time.Time `xml:"Expiration"`
			}
		} `xml:"AssumeRoleWithWebIdentityResult"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("web identity: %w", err)
	}
	c := out.Result.Credentials
	return &awsCreds{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken, Expires: c.Expiration, Source: "web identity"}, nil
}

// jsonCreds is the container endpoint's and IMDS's answer.
type jsonCreds struct {
	AccessKeyID     string    `json:"AccessKeyId"`
	SecretAccessKey string    `json:"SecretAccessKey"`
	Token           string    `json:"Token"`
	Expiration      time.Time `json:"Expiration"`
}

func (p *awsCredProvider) getJSON(ctx context.Context, u string, hdr map[string]string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	for k, x := range hdr {
		req.Header.Set(k, x)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	if s, ok := v.(*string); ok {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		*s = strings.TrimSpace(string(b))
		return err
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (p *awsCredProvider) container(ctx context.Context, u string) (*awsCreds, error) {
	hdr := map[string]string{}
	tok := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
	if f := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok != "" {
		hdr["Authorization"] = tok
	}
	var c jsonCreds
	if err := p.getJSON(ctx, u, hdr, &c); err != nil {
		return nil, fmt.Errorf("container credentials: %w", err)
	}
	return &awsCreds{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.Token, Expires: c.Expiration, Source: "container"}, nil
}

func (p *awsCredProvider) imds(ctx context.Context) (*awsCreds, error) {
	base := "http://169.254.169.254"
	if e := os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT"); e != "" {
		base = strings.TrimSuffix(e, "/")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", base+"/latest/api/token", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	tb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("IMDS token: %s", resp.Status)
	}
	hdr := map[string]string{"X-aws-ec2-metadata-token": string(tb)}
	var role string
	if err := p.getJSON(ctx, base+"/latest/meta-data/iam/security-credentials/", hdr, &role); err != nil {
		return nil, err
	}
	role, _, _ = strings.Cut(role, "\n")
	var c jsonCreds
	if err := p.getJSON(ctx, base+"/latest/meta-data/iam/security-credentials/"+role, hdr, &c); err != nil {
		return nil, err
	}
	return &awsCreds{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.Token, Expires: c.Expiration, Source: "instance role"}, nil
}
