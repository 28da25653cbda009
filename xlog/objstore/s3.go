package objstore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// s3Backend is Amazon S3 or an S3-compatible server, through S3's REST API
// (https://docs.aws.amazon.com/AmazonS3/latest/API/) over net/http, with
// requests signed by Signature Version 4: the five calls walscope makes
// (ListObjectsV2, GetObject, PutObject, the multipart upload calls,
// DeleteObject). Not aws-sdk-go-v2: linked into walscope it added 15 MB to
// the binary (see the README's Dependencies). Credentials and region come
// from the AWS SDKs' standard sources (awscreds.go); AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL, the SDKs' endpoint settings, point it at an
// S3-compatible server, with path-style addressing.
type s3Backend struct {
	hc        *http.Client
	creds     *awsCredProvider
	bucket    string
	scheme    string
	host      string // endpoint host, or the bucket's virtual host on AWS
	base      string // path prefix: "/bucket" in path style, else ""
	pathStyle bool

	mu     sync.Mutex
	region string
}

// partSize is the multipart upload part size (S3 allows 10,000 parts).
const partSize = 64 << 20

func newS3(ctx context.Context, bucket string) (backend, error) {
	hc := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}}
	region := awsRegion()
	b := &s3Backend{hc: hc, bucket: bucket, region: region, creds: &awsCredProvider{region: region, hc: hc}}
	ep := os.Getenv("AWS_ENDPOINT_URL_S3")
	if ep == "" {
		ep = os.Getenv("AWS_ENDPOINT_URL")
	}
	if ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("AWS_ENDPOINT_URL %q is not a URL", ep)
		}
		b.scheme, b.host, b.pathStyle = u.Scheme, u.Host, true
		b.base = strings.TrimSuffix(u.Path, "/") + "/" + bucket
		return b, nil
	}
	b.scheme = "https"
	b.setRegion(region)
	return b, nil
}

// setRegion points the client at the bucket's region on AWS: its
// virtual host, or path style for names with dots (TLS certificates do
// not cover them as hosts).
func (b *s3Backend) setRegion(region string) {
	b.region = region
	if strings.Contains(b.bucket, ".") {
		b.host, b.base, b.pathStyle = "s3."+region+".amazonaws.com", "/"+b.bucket, true
	} else {
		b.host, b.base = b.bucket+".s3."+region+".amazonaws.com", ""
	}
}

// s3Error is an S3 error answer.
type s3Error struct {
	Status  int
	Code    string
	Message string
	Region  string // x-amz-bucket-region, on a wrong-region answer
}

func (e *s3Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

func s3ErrorText(body []byte) string {
	var e struct{ Code, Message string }
	if xml.Unmarshal(body, &e) == nil && e.Code != "" {
		return e.Code + ": " + e.Message
	}
	return strings.TrimSpace(string(body))
}

// uriEncode is SigV4's URI encoding: everything but unreserved characters
// percent-encoded (and "/" too, unless path).
func uriEncode(s string, path bool) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			sb.WriteByte(c)
		case c == '/' && path:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

// request makes a signed request for key (or the bucket, key "") and
// returns the response, or an *s3Error for answers outside 2xx. body, if
// not nil, is sent with its length; it must be re-readable from the start
// (a retry, a region redirect).
func (b *s3Backend) request(ctx context.Context, method, key string, q url.Values, body io.ReaderAt, size int64, hdr http.Header) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := b.send(ctx, method, key, q, body, size, hdr)
		var se *s3Error
		if attempt == 0 && errors.As(err, &se) && se.Region != "" && !b.pathStyleEndpoint() {
			b.mu.Lock()
			changed := se.Region != b.region
			if changed {
				b.setRegion(se.Region)
			}
			b.mu.Unlock()
			if changed {
				continue // the bucket lives in another region
			}
		}
		return resp, err
	}
}

func (b *s3Backend) pathStyleEndpoint() bool {
	return os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
}

func (b *s3Backend) send(ctx context.Context, method, key string, q url.Values, body io.ReaderAt, size int64, hdr http.Header) (*http.Response, error) {
	creds, err := b.creds.get(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	host, base, region := b.host, b.base, b.region
	b.mu.Unlock()
	path := base + "/" + key
	rawPath := uriEncode(path, true)
	// The canonical query: keys sorted, keys and values encoded; sent as is.
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var qs []string
	for _, k := range keys {
		for _, v := range q[k] {
			qs = append(qs, uriEncode(k, false)+"="+uriEncode(v, false))
		}
	}
	query := strings.Join(qs, "&")
	var rd io.Reader
	if body != nil {
		rd = io.NewSectionReader(body, 0, size)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.scheme+"://"+host+rawPath, rd)
	if err != nil {
		return nil, err
	}
	req.URL.RawPath, req.URL.Path, req.URL.RawQuery = rawPath, path, query
	if body != nil {
		req.ContentLength = size
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(body, 0, size)), nil }
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	now := time.Now().UTC()
	amzDate := now.Format("20060102T150405Z")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	signed := []string{"host", "x-amz-content-sha256", "x-amz-date"}
	canonHeaders := "host:" + host + "\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:" + amzDate + "\n"
	if creds.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", creds.SessionToken)
		signed = append(signed, "x-amz-security-token")
		canonHeaders += "x-amz-security-token:" + creds.SessionToken + "\n"
	}
	signedHeaders := strings.Join(signed, ";")
	canonical := method + "\n" + rawPath + "\n" + query + "\n" + canonHeaders + "\n" + signedHeaders + "\nUNSIGNED-PAYLOAD"
	scope, signature := sigV4Signature(creds.SecretAccessKey, amzDate, region, "s3", canonical)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+creds.AccessKeyID+"/"+scope+
		", SignedHeaders="+signedHeaders+", Signature="+signature)
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := &s3Error{Status: resp.StatusCode, Region: resp.Header.Get("X-Amz-Bucket-Region")}
		var x struct{ Code, Message, Region string }
		if xml.Unmarshal(data, &x) == nil {
			e.Code, e.Message = x.Code, x.Message
			if e.Region == "" {
				e.Region = x.Region
			}
		}
		if e.Code == "" && method == "HEAD" || e.Code == "" && resp.StatusCode == 404 {
			e.Code = "NotFound"
		}
		return nil, e
	}
	return resp, nil
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func (b *s3Backend) list(ctx context.Context, prefix string, fn func(object)) error {
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}, "delimiter": {"/"}, "max-keys": {"1000"}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := b.request(ctx, "GET", "", q, nil, 0, nil)
		if err != nil {
			return err
		}
		var page struct {
			Contents []struct {
				Key          string
				Size         int64
				LastModified time.Time
			}
			CommonPrefixes []struct{ Prefix string }
			IsTruncated    bool
			NextToken      string `xml:"NextContinuationToken"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("listing: %w", err)
		}
		for _, cp := range page.CommonPrefixes {
			if name := strings.TrimSuffix(strings.TrimPrefix(cp.Prefix, prefix), "/"); name != "" {
				fn(object{name: name, dir: true})
			}
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(o.Key, prefix)
			if name == "" || strings.HasSuffix(name, "/") {
				continue // a "directory" marker
			}
			fn(object{name: name, size: o.Size, mod: o.LastModified})
		}
		if !page.IsTruncated || page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
}

func (b *s3Backend) get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	var hdr http.Header
	if r := byteRange(off, length); r != "" {
		hdr = http.Header{"Range": {r}}
	}
	resp, err := b.request(ctx, "GET", key, nil, nil, 0, hdr)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (b *s3Backend) put(ctx context.Context, key string, f *os.File, size int64) error {
	if size <= partSize {
		return drained(b.request(ctx, "PUT", key, nil, f, size, nil))
	}
	// Multipart: the object appears only when the upload is completed.
	resp, err := b.request(ctx, "POST", key, url.Values{"uploads": {""}}, nil, 0, nil)
	if err != nil {
		return err
	}
	var mp struct {
		UploadID string `xml:"UploadId"`
	}
	err = xml.NewDecoder(resp.Body).Decode(&mp)
	resp.Body.Close()
	if err != nil || mp.UploadID == "" {
		return fmt.Errorf("starting a multipart upload: %v", err)
	}
	abort := func(err error) error {
		if r, e := b.request(context.WithoutCancel(ctx), "DELETE", key, url.Values{"uploadId": {mp.UploadID}}, nil, 0, nil); e == nil {
			r.Body.Close()
		}
		return err
	}
	type part struct {
		PartNumber int
		ETag       string
	}
	var parts []part
	for n, off := 1, int64(0); off < size; n, off = n+1, off+partSize {
		l := min(partSize, size-off)
		resp, err := b.request(ctx, "PUT", key, url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {mp.UploadID}},
			io.NewSectionReader(f, off, l), l, nil)
		if err != nil {
			return abort(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		parts = append(parts, part{n, resp.Header.Get("ETag")})
	}
	doc, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"CompleteMultipartUpload"`
		Parts   []part   `xml:"Part"`
	}{Parts: parts})
	resp, err = b.request(ctx, "POST", key, url.Values{"uploadId": {mp.UploadID}}, bytes.NewReader(doc), int64(len(doc)), nil)
	if err != nil {
		return abort(err)
	}
	defer resp.Body.Close()
	// CompleteMultipartUpload may answer 200 with an error in the body.
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if bytes.Contains(data, []byte("<Error>")) {
		return abort(&s3Error{Status: 200, Code: "CompleteMultipartUpload", Message: s3ErrorText(data)})
	}
	return nil
}

func (b *s3Backend) del(ctx context.Context, key string) error {
	resp, err := b.request(ctx, "DELETE", key, nil, nil, 0, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (b *s3Backend) classify(err error) Class {
	var se *s3Error
	if errors.As(err, &se) {
		switch se.Code {
		case "NoSuchKey", "NoSuchBucket", "NotFound":
			return ClassNotFound
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled":
			return ClassAccessDenied
		}
		switch se.Status {
		case 404:
			return ClassNotFound
		case 409, 412:
			return ClassExists // PreconditionFailed, ConditionalRequestConflict (Create)
		case 401, 403:
			return ClassAccessDenied
		}
		return ClassServer
	}
	if c := netClass(err); c == ClassNetwork || !errors.Is(err, ErrAWSCredentials) {
		return c
	}
	return ClassAccessDenied // no credentials, or a profile's refused
}

// netClass classifies errors below the API: connections, DNS, timeouts, and
// credentials that could not be found at all.
func netClass(err error) Class {
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return ClassNetwork
	}
	if s := err.Error(); strings.Contains(s, "credential") || strings.Contains(s, "web identity") {
		return ClassAccessDenied
	}
	return ClassServer
}
