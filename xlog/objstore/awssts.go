package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// AWS STS (https://docs.aws.amazon.com/STS/latest/APIReference/): the
// Query API over HTTPS, a form-encoded POST answered in XML. AssumeRole is
// signed with SigV4 (service "sts") by the source credentials;
// AssumeRoleWithWebIdentity carries its token and is not signed.

// roleSpec is what a role profile asks AssumeRole for.
type roleSpec struct {
	arn, session, externalID string
	durationSeconds          int    // 0: STS's default (one hour)
	profile                  string // for errors
}

// sessionName is the RoleSessionName: the profile's role_session_name, or
// one made unique by the time, as the SDKs do.
func sessionName(s string) string {
	if s != "" {
		return s
	}
	return fmt.Sprintf("walscope-%d", time.Now().UnixNano())
}

// stsLegacyGlobal are the regions whose STS calls go to the global
// endpoint sts.amazonaws.com when sts_regional_endpoints is "legacy"
// (the SDKs' list; the default, "regional", uses each region's own).
var stsLegacyGlobal = map[string]bool{
	"ap-northeast-1": true, "ap-south-1": true, "ap-southeast-1": true, "ap-southeast-2": true,
	"aws-global": true, "ca-central-1": true, "eu-central-1": true, "eu-north-1": true,
	"eu-west-1": true, "eu-west-2": true, "eu-west-3": true, "sa-east-1": true,
	"us-east-1": true, "us-east-2": true, "us-west-1": true, "us-west-2": true,
}

// serviceEndpoint is the endpoint configured for a service the credential
// chain calls: AWS_ENDPOINT_URL_<SERVICE> (STS, SSO), unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true; "" for the service's default.
// The global AWS_ENDPOINT_URL is not used for them: aws-sdk-go-v2's
// credential providers do not use it either (measured with config
// v1.33.19: with AWS_ENDPOINT_URL alone its AssumeRole went to
// sts.<region>.amazonaws.com), and it usually names an S3-compatible
// server, which should not receive the source credentials of an AWS role.
func serviceEndpoint(envSuffix string) string {
	if strings.EqualFold(os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		return ""
	}
	return os.Getenv("AWS_ENDPOINT_URL_" + envSuffix)
}

// stsEndpoint returns STS's URL for region and the region to sign for.
func stsEndpoint(region string) (endpoint, signingRegion string) {
	if e := serviceEndpoint("STS"); e != "" {
		return e, region
	}
	mode := os.Getenv("AWS_STS_REGIONAL_ENDPOINTS")
	if mode == "" {
		mode = configSection()["sts_regional_endpoints"]
	}
	if region == "aws-global" || strings.EqualFold(mode, "legacy") && stsLegacyGlobal[region] {
		return "https://sts.amazonaws.com/", "us-east-1"
	}
	if strings.HasPrefix(region, "cn-") {
		return "https://sts." + region + ".amazonaws.com.cn/", region
	}
	return "https://sts." + region + ".amazonaws.com/", region
}

// stsCredentials is the Credentials element of AssumeRole's and
// AssumeRoleWithWebIdentity's results.
type stsCredentials struct {
	AccessKeyID     string    `xml:"AccessKeyId"`
	SecretAccessKey string    `xml:"SecretAccessKey"`
	SessionToken    string    `xml:"SessionToken"`
	Expiration      time.Time `xml:"Expiration"`
}

// stsError is STS's error answer: <ErrorResponse><Error><Code>.
type stsError struct {
	Status  int
	Code    string
	Message string
}

func (e *stsError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("STS answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("STS answered HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// stsCall posts one STS action and decodes the Credentials of its result
// (element resultName). sign, if not nil, signs the request.
func (p *awsCredProvider) stsCall(ctx context.Context, form url.Values, resultName string, sign *awsCreds) (*stsCredentials, error) {
	endpoint, signingRegion := stsEndpoint(p.region)
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("STS endpoint %q: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if sign != nil {
		sum := sha256.Sum256([]byte(body))
		signV4(req, hex.EncodeToString(sum[:]), sign, signingRegion, "sts", time.Now())
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading STS's answer from %s: %w", endpoint, err)
	}
	if resp.StatusCode != 200 {
		e := &stsError{Status: resp.StatusCode}
		var doc struct {
			Error struct{ Code, Message string }
		}
		if xml.Unmarshal(data, &doc) == nil && doc.Error.Code != "" {
			e.Code, e.Message = doc.Error.Code, doc.Error.Message
		} else {
			e.Message = s3ErrorText(data) // a server that answers as S3 does
		}
		return nil, fmt.Errorf("%s at %s: %w", form.Get("Action"), endpoint, e)
	}
	// The result element is looked for by name: <AssumeRoleResponse>
	// <AssumeRoleResult><Credentials>.
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s at %s: no %s in the answer (%v)", form.Get("Action"), endpoint, resultName, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != resultName {
			continue
		}
		var res struct {
			Credentials *stsCredentials
		}
		if err := dec.DecodeElement(&res, &se); err != nil {
			return nil, fmt.Errorf("%s at %s: %w", form.Get("Action"), endpoint, err)
		}
		c := res.Credentials
		if c != nil { // documented examples wrap long tokens
			c.AccessKeyID, c.SecretAccessKey, c.SessionToken = strings.TrimSpace(c.AccessKeyID), strings.TrimSpace(c.SecretAccessKey), strings.Join(strings.Fields(c.SessionToken), "")
		}
		if c == nil || c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, fmt.Errorf("%s at %s: the answer has no credentials", form.Get("Action"), endpoint)
		}
		return c, nil
	}
}

// assumeRole calls STS AssumeRole with base's credentials.
func (p *awsCredProvider) assumeRole(ctx context.Context, base *awsCreds, spec roleSpec) (*awsCreds, error) {
	form := url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {spec.arn}, "RoleSessionName": {sessionName(spec.session)}}
	if spec.externalID != "" {
		form.Set("ExternalId", spec.externalID)
	}
	if spec.durationSeconds != 0 {
		form.Set("DurationSeconds", strconv.Itoa(spec.durationSeconds))
	}
	c, err := p.stsCall(ctx, form, "AssumeRoleResult", base)
	if err != nil {
		return nil, &credErr{profile: spec.profile, err: fmt.Errorf("assuming role %s with the credentials of %s: %w", spec.arn, base.Source, err)}
	}
	return &awsCreds{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken, Expires: c.Expiration,
		Source: "role " + spec.arn + " (profile " + spec.profile + ")"}, nil
}
