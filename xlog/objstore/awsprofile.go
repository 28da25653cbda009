package objstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Profiles of the AWS shared files as the AWS CLI and SDKs resolve them
// (https://docs.aws.amazon.com/sdkref/latest/guide/file-format.html and
// the SDKs' "assume role", "process" and "SSO" credential providers): a
// profile gives credentials by exactly one of
//
//   - static keys: aws_access_key_id, aws_secret_access_key (and
//     aws_session_token);
//   - role_arn, with the credentials to call STS AssumeRole from
//     source_profile (another profile, resolved the same way, so chains
//     work; a cycle is an error, a profile naming itself uses its own
//     static keys), from credential_source (Environment,
//     Ec2InstanceMetadata, EcsContainer) or, with web_identity_token_file,
//     AssumeRoleWithWebIdentity; role_session_name, external_id and
//     duration_seconds are sent; mfa_serial needs a code typed at a
//     terminal and is refused;
//   - sso_session (an [sso-session NAME] section) or the legacy
//     sso_start_url and sso_region, with sso_account_id and sso_role_name:
//     the token `aws sso login` cached is exchanged for role credentials;
//   - credential_process: a command that prints the credentials as JSON.
//
// The profile's settings come from the config file's [profile NAME]
// section ([default] for the default profile) and the credentials file's
// [NAME] section; the credentials file wins where both set a key, as in the
// SDKs. Static keys are taken as a pair from one file.

// ErrAWSCredentials is wrapped by every error of the AWS credential chain:
// no credentials found, a profile that cannot be used (a missing source
// profile, a cycle, an expired SSO login, a failing credential_process),
// or STS or the SSO portal refusing. Callers can errors.Is it.
var ErrAWSCredentials = errors.New("AWS credentials")

// credErr is an error of the credential chain, naming the profile.
type credErr struct {
	profile string // "" outside the shared files
	err     error
}

func (e *credErr) Error() string {
	if e.profile == "" {
		return e.err.Error()
	}
	return "AWS profile " + e.profile + ": " + e.err.Error()
}

func (e *credErr) Unwrap() []error { return []error{ErrAWSCredentials, e.err} }

func profileErr(profile string, format string, a ...any) error {
	return &credErr{profile: profile, err: fmt.Errorf(format, a...)}
}

// awsFiles is the shared config and credentials files, each parsed into
// its sections.
type awsFiles struct {
	configPath, credsPath string
	config, creds         map[string]map[string]string
}

func loadAWSFiles() (*awsFiles, error) {
	f := &awsFiles{
		configPath: homeFile("AWS_CONFIG_FILE", ".aws", "config"),
		credsPath:  homeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws", "credentials"),
	}
	var err error
	if f.config, err = parseAWSFile(f.configPath); err != nil {
		return nil, err
	}
	if f.creds, err = parseAWSFile(f.credsPath); err != nil {
		return nil, err
	}
	return f, nil
}

// parseAWSFile reads an AWS shared file into its sections: the section's
// name as written between the brackets (spaces around it and around
// "profile" trimmed), keys lower-cased. Nested settings (an indented
// "key = value" under a key with no value, as in "s3 =\n  addressing_style
// = path") are kept as "parent.key". A missing file is empty.
func parseAWSFile(path string) (map[string]map[string]string, error) {
	if path == "" {
		return map[string]map[string]string{}, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, &credErr{err: fmt.Errorf("reading %s: %w", path, err)}
	}
	defer f.Close()
	out, err := parseAWSConfig(f)
	if err != nil {
		return nil, &credErr{err: fmt.Errorf("reading %s: %w", path, err)}
	}
	return out, nil
}

// parseAWSConfig parses the text of an AWS shared file (parseAWSFile).
func parseAWSConfig(r io.Reader) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	var sec map[string]string
	parent := "" // the key with an empty value that indented lines belong to
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				sec, parent = nil, ""
				continue // not a section: the SDKs reject the file; its keys are skipped
			}
			name := strings.Join(strings.Fields(line[1:end]), " ")
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			sec, parent = out[name], ""
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || sec == nil {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if indented := raw[0] == ' ' || raw[0] == '\t'; indented && parent != "" {
			sec[parent+"."+k] = v
			continue
		}
		parent = ""
		if v == "" {
			parent = k
		}
		sec[k] = v
	}
	return out, sc.Err()
}

// profile returns a profile's keys, the credentials file's over the config
// file's, and whether either file has it.
func (f *awsFiles) profile(name string) (map[string]string, bool) {
	merged := map[string]string{}
	found := false
	for _, sec := range []map[string]string{f.configProfile(name), f.creds[name]} {
		if sec == nil {
			continue
		}
		found = true
		for k, v := range sec {
			merged[k] = v
		}
	}
	return merged, found
}

// configProfile is a profile's section of the config file: [profile NAME],
// and [default] for the default profile (nil if neither).
func (f *awsFiles) configProfile(name string) map[string]string {
	sec := f.config["profile "+name]
	if name != "default" || f.config["default"] == nil {
		return sec
	}
	merged := map[string]string{}
	for _, s := range []map[string]string{f.config["default"], sec} {
		for k, v := range s {
			merged[k] = v
		}
	}
	return merged
}

// ssoSession returns an [sso-session NAME] section of the config file.
func (f *awsFiles) ssoSession(name string) (map[string]string, bool) {
	s, ok := f.config["sso-session "+name]
	return s, ok
}

// staticKeys returns a profile's static keys: both from the credentials
// file, or else both from the config file. One key without the other in a
// file is an error, as in the AWS CLI and the SDKs ("partial credentials");
// so is splitting them over the two files.
func (f *awsFiles) staticKeys(name string) (*awsCreds, error) {
	for _, file := range []struct {
		sec  map[string]string
		path string
	}{{f.creds[name], f.credsPath}, {f.configProfile(name), f.configPath}} {
		id, secret := file.sec["aws_access_key_id"], file.sec["aws_secret_access_key"]
		if id != "" && secret != "" {
			return &awsCreds{AccessKeyID: id, SecretAccessKey: secret, SessionToken: file.sec["aws_session_token"], Source: "profile " + name}, nil
		}
		if id != "" || secret != "" {
			return nil, profileErr(name, "partial credentials in %s: aws_access_key_id and aws_secret_access_key must be set together in one file", file.path)
		}
	}
	return nil, nil
}

// sharedFileCreds resolves the AWS_PROFILE profile: (nil, nil) when the
// files have no such profile or it has no credentials (the chain goes on),
// an error when AWS_PROFILE names a profile neither file has.
func (p *awsCredProvider) sharedFileCreds(ctx context.Context) (*awsCreds, error) {
	files, err := loadAWSFiles()
	if err != nil {
		return nil, err
	}
	name := profile()
	if _, ok := files.profile(name); !ok {
		if name != "default" {
			return nil, profileErr(name, "not found in %s or %s", files.configPath, files.credsPath)
		}
		return nil, nil
	}
	return p.fromProfile(ctx, files, name, nil)
}

// fromProfile resolves one profile; chain holds the profiles that led to it
// through source_profile, to report cycles.
func (p *awsCredProvider) fromProfile(ctx context.Context, files *awsFiles, name string, chain []string) (*awsCreds, error) {
	sec, ok := files.profile(name)
	if !ok {
		if len(chain) == 0 {
			return nil, profileErr(name, "not found in %s or %s", files.configPath, files.credsPath)
		}
		return nil, profileErr(chain[len(chain)-1], "source_profile %q is not in %s or %s", name, files.configPath, files.credsPath)
	}
	chain = append(chain, name)
	if role := sec["role_arn"]; role != "" {
		return p.roleProfile(ctx, files, name, sec, chain)
	}
	if c, err := files.staticKeys(name); c != nil || err != nil {
		return c, err
	}
	if sec["sso_session"] != "" || sec["sso_start_url"] != "" {
		return p.ssoCreds(ctx, files, name, sec)
	}
	if cmd := sec["credential_process"]; cmd != "" {
		return processCreds(ctx, name, cmd)
	}
	if len(chain) > 1 {
		return nil, profileErr(chain[len(chain)-2], "source_profile %q has no credentials (static keys, role_arn, sso_session or credential_process)", name)
	}
	return nil, nil
}

// roleProfile assumes a profile's role_arn with the credentials of its
// source.
func (p *awsCredProvider) roleProfile(ctx context.Context, files *awsFiles, name string, sec map[string]string, chain []string) (*awsCreds, error) {
	role := sec["role_arn"]
	src, credSource, tokenFile := sec["source_profile"], sec["credential_source"], sec["web_identity_token_file"]
	if sec["mfa_serial"] != "" {
		return nil, profileErr(name, "role %s needs an MFA code (mfa_serial %s), which walscope cannot ask for: run `aws configure export-credentials --profile %s --format env` in a terminal and use the variables it prints", role, sec["mfa_serial"], name)
	}
	spec := roleSpec{
		arn:        role,
		session:    sec["role_session_name"],
		externalID: sec["external_id"],
		profile:    name,
	}
	if d := sec["duration_seconds"]; d != "" {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err != nil || n < 900 || n > 43200 || fmt.Sprint(n) != d {
			return nil, profileErr(name, "duration_seconds %q is not a number of seconds from 900 to 43200", d)
		}
		spec.durationSeconds = n
	}
	var base *awsCreds
	var err error
	switch {
	case src != "" && credSource != "":
		return nil, profileErr(name, "role_arn has both source_profile and credential_source; the SDKs accept one")
	case tokenFile != "" && src == "" && credSource == "":
		return p.webIdentity(ctx, tokenFile, role, spec.session)
	case src == name:
		// A profile naming itself: its own keys call AssumeRole.
		if base, err = files.staticKeys(name); err != nil {
			return nil, err
		}
		if base == nil {
			return nil, profileErr(name, "source_profile is the profile itself, which has no static keys")
		}
	case src != "":
		for _, prev := range chain {
			if prev == src {
				return nil, profileErr(name, "source_profile cycle: %s -> %s", strings.Join(chain, " -> "), src)
			}
		}
		if base, err = p.fromProfile(ctx, files, src, chain); err != nil {
			return nil, err
		}
		if base == nil {
			return nil, profileErr(name, "source_profile %q has no credentials", src)
		}
	case credSource != "":
		if base, err = p.credentialSource(ctx, name, credSource); err != nil {
			return nil, err
		}
	default:
		return nil, profileErr(name, "role_arn needs source_profile, credential_source or web_identity_token_file")
	}
	return p.assumeRole(ctx, base, spec)
}

// credentialSource is a role profile's credential_source: where the
// credentials that assume the role come from outside the files.
func (p *awsCredProvider) credentialSource(ctx context.Context, profile, source string) (*awsCreds, error) {
	switch source {
	case "Environment":
		id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if id == "" || secret == "" {
			return nil, profileErr(profile, "credential_source Environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")
		}
		return &awsCreds{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN"), Source: "environment"}, nil
	case "Ec2InstanceMetadata":
		if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
			return nil, profileErr(profile, "credential_source Ec2InstanceMetadata, but AWS_EC2_METADATA_DISABLED=true")
		}
		c, err := p.imds(ctx)
		if err != nil {
			return nil, &credErr{profile: profile, err: fmt.Errorf("credential_source Ec2InstanceMetadata: %w", err)}
		}
		return c, nil
	case "EcsContainer":
		u, ok := containerURL()
		if !ok {
			return nil, profileErr(profile, "credential_source EcsContainer: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set")
		}
		c, err := p.container(ctx, u)
		if err != nil {
			return nil, &credErr{profile: profile, err: fmt.Errorf("credential_source EcsContainer: %w", err)}
		}
		return c, nil
	}
	return nil, profileErr(profile, "credential_source %q is not one of Environment, Ec2InstanceMetadata, EcsContainer", source)
}
