package objstore

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// IAM Identity Center (SSO) profiles
// (https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-sso.html):
//
//	[profile dev]                       [profile legacy]
//	sso_session = corp                  sso_start_url = https://corp.awsapps.com/start
//	sso_account_id = 111122223333       sso_region = eu-west-1
//	sso_role_name = ReadOnly            sso_account_id = 111122223333
//	[sso-session corp]                  sso_role_name = ReadOnly
//	sso_start_url = https://corp.awsapps.com/start
//	sso_region = eu-west-1
//
// `aws sso login` caches an access token in
// ~/.aws/sso/cache/<SHA-1 of the session's name, or of the legacy start
// URL, in hex>.json; the portal's GetRoleCredentials
// (GET https://portal.sso.<sso_region>.amazonaws.com/federation/credentials,
// the token in x-amz-sso_bearer_token) exchanges it for the role's
// credentials. An expired token of an sso-session is refreshed with the
// SSO OIDC service and written back to the cache, as the SDKs do; an
// expired legacy token, or one that cannot be refreshed, is an error that
// says to log in again.

// ssoToken is the part of a cached SSO token walscope reads (the CLI's
// cache file, botocore/utils.py SSOTokenLoader and the Go SDK's
// credentials/ssocreds token file).
type ssoToken struct {
	AccessToken string `json:"accessToken"`
	ExpiresAt   string `json:"expiresAt"`
	// For a refresh (sso-session tokens).
	RefreshToken string `json:"refreshToken"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
}

// ssoRoleCredentials is GetRoleCredentials' answer
// (https://docs.aws.amazon.com/singlesignon/latest/PortalAPIReference/API_GetRoleCredentials.html);
// expiration is in milliseconds since 1970.
type ssoRoleCredentials struct {
	RoleCredentials *struct {
		AccessKeyID     string `json:"accessKeyId"`
		SecretAccessKey string `json:"secretAccessKey"`
		SessionToken    string `json:"sessionToken"`
		Expiration      int64  `json:"expiration"`
	} `json:"roleCredentials"`
}

// ssoConfig is a profile's SSO settings, its sso-session's merged in.
type ssoConfig struct {
	session, startURL, region, accountID, roleName string
}

func ssoSettings(files *awsFiles, profile string, sec map[string]string) (ssoConfig, error) {
	c := ssoConfig{session: sec["sso_session"], startURL: sec["sso_start_url"], region: sec["sso_region"],
		accountID: sec["sso_account_id"], roleName: sec["sso_role_name"]}
	if c.session != "" {
		s, ok := files.ssoSession(c.session)
		if !ok {
			return c, profileErr(profile, "sso_session %q has no [sso-session %s] section in %s", c.session, c.session, files.configPath)
		}
		// The profile may repeat the session's values (the CLI writes
		// them), never contradict them.
		for _, kv := range []struct {
			key string
			dst *string
		}{{"sso_start_url", &c.startURL}, {"sso_region", &c.region}} {
			v := s[kv.key]
			if *kv.dst != "" && v != "" && *kv.dst != v {
				return c, profileErr(profile, "%s %q differs from sso-session %s's %q", kv.key, *kv.dst, c.session, v)
			}
			if v != "" {
				*kv.dst = v
			}
		}
	}
	var missing []string
	for _, kv := range [][2]string{{"sso_start_url", c.startURL}, {"sso_region", c.region}, {"sso_account_id", c.accountID}, {"sso_role_name", c.roleName}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return c, profileErr(profile, "SSO settings incomplete: no %s", strings.Join(missing, ", "))
	}
	return c, nil
}

// ssoCacheFile is the path of the token `aws sso login` cached.
func ssoCacheFile(c ssoConfig) string {
	key := c.startURL
	if c.session != "" {
		key = c.session
	}
	sum := sha1.Sum([]byte(key))
	home, err := os.UserHomeDir()
	if err != nil {
		home = "~"
	}
	return filepath.Join(home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json")
}

// parseSSOTime reads a cached token's expiresAt: RFC 3339, or the
// "2019-11-14T04:05:45UTC" of older CLIs.
func parseSSOTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02T15:04:05UTC", s)
}

// ssoEndpoint is the SSO portal of a region, or AWS_ENDPOINT_URL_SSO.
func ssoEndpoint(region string) string {
	if e := serviceEndpoint("SSO"); e != "" {
		return e
	}
	if strings.HasPrefix(region, "cn-") {
		return "https://portal.sso." + region + ".amazonaws.com.cn"
	}
	return "https://portal.sso." + region + ".amazonaws.com"
}

func (p *awsCredProvider) ssoCreds(ctx context.Context, files *awsFiles, profile string, sec map[string]string) (*awsCreds, error) {
	cfg, err := ssoSettings(files, profile, sec)
	if err != nil {
		return nil, err
	}
	login := "run `aws sso login --profile " + profile + "`"
	path := ssoCacheFile(cfg)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, profileErr(profile, "no SSO login cached (%s does not exist): %s", path, login)
	}
	if err != nil {
		return nil, profileErr(profile, "reading the SSO login: %v", err)
	}
	var tok ssoToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return nil, profileErr(profile, "%s is not a cached SSO token (%v): %s", path, err, login)
	}
	exp, err := parseSSOTime(tok.ExpiresAt)
	if err != nil {
		return nil, profileErr(profile, "%s: expiresAt %q is not a time: %s", path, tok.ExpiresAt, login)
	}
	if !time.Now().Before(exp) {
		// The SDKs refresh the token of an sso-session (never a legacy
		// profile's) with the refresh token `aws sso login` registered.
		if cfg.session == "" || tok.RefreshToken == "" || tok.ClientID == "" || tok.ClientSecret == "" {
			return nil, profileErr(profile, "the SSO login expired at %s: %s", exp.UTC().Format(time.RFC3339), login)
		}
		if err := p.refreshSSOToken(ctx, cfg, path, &tok); err != nil {
			return nil, &credErr{profile: profile, err: fmt.Errorf("the SSO login expired at %s and could not be refreshed (%w): %s", exp.UTC().Format(time.RFC3339), err, login)}
		}
	}
	base := ssoEndpoint(cfg.region)
	u := strings.TrimSuffix(base, "/") + "/federation/credentials?" +
		url.Values{"account_id": {cfg.accountID}, "role_name": {cfg.roleName}}.Encode()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, profileErr(profile, "SSO endpoint %q: %v", base, err)
	}
	req.Header.Set("X-Amz-Sso_bearer_token", tok.AccessToken)
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, &credErr{profile: profile, err: fmt.Errorf("SSO GetRoleCredentials: %w", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, &credErr{profile: profile, err: fmt.Errorf("SSO GetRoleCredentials: %w", err)}
	}
	if resp.StatusCode != 200 {
		kind := resp.Header.Get("X-Amzn-Errortype")
		kind, _, _ = strings.Cut(kind, ":")
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(body, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		hint := ""
		if resp.StatusCode == 401 {
			hint = ": " + login
		}
		return nil, profileErr(profile, "SSO GetRoleCredentials for role %s in account %s at %s answered %s %s %s%s",
			cfg.roleName, cfg.accountID, base, resp.Status, kind, e.Message, hint)
	}
	var out ssoRoleCredentials
	if err := json.Unmarshal(body, &out); err != nil || out.RoleCredentials == nil ||
		out.RoleCredentials.AccessKeyID == "" || out.RoleCredentials.SecretAccessKey == "" {
		return nil, profileErr(profile, "SSO GetRoleCredentials at %s: no credentials in the answer (%v)", base, err)
	}
	rc := out.RoleCredentials
	c := &awsCreds{AccessKeyID: rc.AccessKeyID, SecretAccessKey: rc.SecretAccessKey, SessionToken: rc.SessionToken,
		Source: "SSO role " + cfg.roleName + " in " + cfg.accountID + " (profile " + profile + ")"}
	if rc.Expiration > 0 {
		c.Expires = time.UnixMilli(rc.Expiration)
	}
	return c, nil
}

// refreshSSOToken exchanges an sso-session's refresh token for a new access
// token with the SSO OIDC service's CreateToken
// (https://docs.aws.amazon.com/singlesignon/latest/OIDCAPIReference/API_CreateToken.html,
// POST https://oidc.<sso_region>.amazonaws.com/token, or
// AWS_ENDPOINT_URL_SSO_OIDC), and writes it into the cache file as the
// SDKs do (the other fields kept; a new file renamed over the old one). A
// cache that cannot be written does not fail the run: the token is valid.
func (p *awsCredProvider) refreshSSOToken(ctx context.Context, cfg ssoConfig, path string, tok *ssoToken) error {
	base := serviceEndpoint("SSO_OIDC")
	if base == "" {
		base = "https://oidc." + cfg.region + ".amazonaws.com"
		if strings.HasPrefix(cfg.region, "cn-") {
			base += ".cn"
		}
	}
	body, _ := json.Marshal(map[string]string{"clientId": tok.ClientID, "clientSecret": tok.ClientSecret,
		"grantType": "refresh_token", "refreshToken": tok.RefreshToken})
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimSuffix(base, "/")+"/token", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var out struct {
		AccessToken  string `json:"accessToken"`
		ExpiresIn    int64  `json:"expiresIn"`
		RefreshToken string `json:"refreshToken"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	json.Unmarshal(data, &out)
	if resp.StatusCode != 200 || out.AccessToken == "" || out.ExpiresIn <= 0 {
		return fmt.Errorf("CreateToken at %s answered %s %s %s", base, resp.Status, out.Error, out.Description)
	}
	tok.AccessToken = out.AccessToken
	tok.ExpiresAt = time.Now().Add(time.Duration(out.ExpiresIn) * time.Second).UTC().Format(time.RFC3339)
	if out.RefreshToken != "" {
		tok.RefreshToken = out.RefreshToken
	}
	writeSSOCache(path, tok)
	return nil
}

// writeSSOCache writes a refreshed token over the cache file, keeping the
// fields walscope does not read.
func writeSSOCache(path string, tok *ssoToken) {
	old, err := os.ReadFile(path)
	if err != nil {
		return
	}
	fields := map[string]json.RawMessage{}
	if json.Unmarshal(old, &fields) != nil {
		return
	}
	for k, v := range map[string]string{"accessToken": tok.AccessToken, "expiresAt": tok.ExpiresAt, "refreshToken": tok.RefreshToken} {
		fields[k], _ = json.Marshal(v)
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, data, mode); err != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}
