package objstore

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AWS Signature Version 4
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
// the string to sign is the canonical request's SHA-256 under a scope of
// date, region and service, signed with a key derived from the secret by
// four HMACs. S3 (s3.go) builds its canonical request itself, with its own
// path encoding and UNSIGNED-PAYLOAD; STS and the other query APIs use
// signV4, which signs a request as the SDKs do for them.

// sigV4Signature signs a canonical request: it returns the credential scope
// ("20150830/us-east-1/sts/aws4_request") and the hex signature.
func sigV4Signature(secret, amzDate, region, service, canonical string) (scope, signature string) {
	date := amzDate[:8]
	scope = date + "/" + region + "/" + service + "/aws4_request"
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	k = hmacSHA256(k, "aws4_request")
	return scope, hex.EncodeToString(hmacSHA256(k, toSign))
}

// signV4 adds X-Amz-Date, X-Amz-Security-Token (with a session token) and
// Authorization to req, signing the host, Content-Length, Content-Type
// and every X-Amz-* header, the path and query as sent, and the payload's SHA-256 (hex).
func signV4(req *http.Request, payloadSHA256 string, c *awsCreds, region, service string, now time.Time) {
	amzDate := now.UTC().Format("20060102T150405Z")
	req.Header.Set("X-Amz-Date", amzDate)
	if c.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	headers := map[string]string{"host": host}
	if req.ContentLength > 0 {
		headers["content-length"] = strconv.FormatInt(req.ContentLength, 10) // as the SDKs sign it
	}
	for k, v := range req.Header {
		lk := strings.ToLower(k)
		if lk == "content-type" || strings.HasPrefix(lk, "x-amz-") {
			headers[lk] = strings.Join(strings.Fields(strings.Join(v, ",")), " ")
		}
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	var canon strings.Builder
	for _, k := range names {
		canon.WriteString(k + ":" + headers[k] + "\n")
	}
	signed := strings.Join(names, ";")
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	canonical := req.Method + "\n" + path + "\n" + canonicalQuery(req.URL.RawQuery) + "\n" + canon.String() + "\n" + signed + "\n" + payloadSHA256
	scope, sig := sigV4Signature(c.SecretAccessKey, amzDate, region, service, canonical)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.AccessKeyID+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
}

// canonicalQuery is a raw query's canonical form: parameters sorted by
// name, then value, each re-encoded with SigV4's encoding.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var ps []kv
	for _, part := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		ps = append(ps, kv{uriEncode(queryUnescape(k), false), uriEncode(queryUnescape(v), false)})
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].k != ps[j].k {
			return ps[i].k < ps[j].k
		}
		return ps[i].v < ps[j].v
	})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.k + "=" + p.v
	}
	return strings.Join(out, "&")
}

// queryUnescape decodes a query component; a malformed escape is kept as
// it is (the server sees the same bytes).
func queryUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '+':
			b.WriteByte(' ')
		case s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
