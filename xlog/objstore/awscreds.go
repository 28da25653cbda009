package objstore

import (
	"context"
	"encoding/json"
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
//     (AWS_CONFIG_FILE), of any kind below;
//  4. the container endpoint (ECS task roles, EKS Pod Identity):
//     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI, with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
//  5. the EC2 instance metadata service (IMDSv2), unless
//     AWS_EC2_METADATA_DISABLED=true.
//
// A profile of the shared files gives static keys, an assumed role (from
// another profile, the environment, the container or the instance), SSO
// role credentials or a credential_process's: awsprofile.go.

type awsCreds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time // zero: static
	Source                                     string
}

// awsCredProvider caches credentials and renews expiring ones.
type awsCredProvider struct {
	mu      sync.Mutex
	cur     *awsCreds
	fetched time.Time // when cur was found
	region  string
	hc      *http.Client
}

// get returns the credentials, found again 5 minutes before they expire
// (half their lifetime before, for shorter ones, so that credentials issued
// for less than 5 minutes are not asked for again at every request).
func (p *awsCredProvider) get(ctx context.Context) (*awsCreds, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if c := p.cur; c != nil && (c.Expires.IsZero() || c.Expires.Sub(now) > min(5*time.Minute, c.Expires.Sub(p.fetched)/2)) {
		return c, nil
	}
	c, err := p.find(ctx)
	if err != nil {
		return nil, err
	}
	p.cur, p.fetched = c, now
	return c, nil
}

// errNoCreds is the chain's answer when no source has credentials.
var errNoCreds = &credErr{err: errors.New("no AWS credentials found (environment, web identity, ~/.aws files, container or instance role)")}

func (p *awsCredProvider) find(ctx context.Context) (*awsCreds, error) {
	if id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		return &awsCreds{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"), Source: "environment"}, nil
	}
	if tokenFile, role := os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE"), os.Getenv("AWS_ROLE_ARN"); tokenFile != "" && role != "" {
		return p.webIdentity(ctx, tokenFile, role, os.Getenv("AWS_ROLE_SESSION_NAME"))
	}
	if c, err := p.sharedFileCreds(ctx); c != nil || err != nil {
		return c, err
	}
	if u, ok := containerURL(); ok {
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

// containerURL is the container credentials endpoint, if the environment
// names one.
func containerURL() (string, bool) {
	if rel := os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		return "http://169.254.170.2" + rel, true
	}
	full := os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	return full, full != ""
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

// configSection is the AWS_PROFILE profile's section of the config file
// (nil if it has none).
func configSection() map[string]string {
	cfg, err := parseAWSFile(homeFile("AWS_CONFIG_FILE", ".aws", "config"))
	if err != nil {
		return nil
	}
	return (&awsFiles{config: cfg}).configProfile(profile())
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

// webIdentity exchanges a web identity token (EKS IRSA, any OIDC
// federation) for a role's credentials with STS AssumeRoleWithWebIdentity.
func (p *awsCredProvider) webIdentity(ctx context.Context, tokenFile, role, session string) (*awsCreds, error) {
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, &credErr{err: fmt.Errorf("web identity: %w", err)}
	}
	form := url.Values{"Action": {"AssumeRoleWithWebIdentity"}, "Version": {"2011-06-15"}, "RoleArn": {role},
		"RoleSessionName": {sessionName(session)}, "WebIdentityToken": {strings.TrimSpace(string(token))}}
	c, err := p.stsCall(ctx, form, "AssumeRoleWithWebIdentityResult", nil)
	if err != nil {
		return nil, &credErr{err: fmt.Errorf("web identity: %w", err)}
	}
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
