package objstore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// azureBackend is Azure Blob Storage through its REST API
// (https://learn.microsoft.com/rest/api/storageservices/blob-service-rest-api)
// over net/http: List Blobs, Get Blob, Put Blob, Put Block and Put Block
// List, Delete Blob. Not the azblob SDK: with azidentity it added 16 MB to
// walscope's binary (see the README's Dependencies).
//
// The account and its authorisation, as the Azure tools take them:
// AZURE_STORAGE_CONNECTION_STRING (AccountName/AccountKey, or
// SharedAccessSignature, and BlobEndpoint: Azurite's too), or
// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (Shared Key),
// AZURE_STORAGE_SAS_TOKEN, or else a Microsoft Entra token for
// https://storage.azure.com/ from, in azidentity's DefaultAzureCredential
// order: a service principal's secret (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_CLIENT_SECRET), workload identity (AZURE_FEDERATED_TOKEN_FILE), a
// managed identity (App Service's IDENTITY_ENDPOINT, or the VM's instance
// metadata service), the Azure CLI's login.
type azureBackend struct {
	hc        *http.Client
	scheme    string
	host      string
	base      string // path before the container: "/devstoreaccount1" for Azurite, else ""
	account   string
	key       []byte // Shared Key
	sas       string // a SAS token's query
	token     *entraToken
	container string
}

// azureVersion is the REST API version requested (x-ms-version).
const azureVersion = "2021-08-06"

func newAzure(ctx context.Context, container string) (backend, error) {
	b := &azureBackend{hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, container: container, scheme: "https"}
	b.hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 32
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		return b, b.fromConnectionString(cs)
	}
	b.account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	if b.account == "" {
		return nil, errors.New("no Azure storage account: set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING)")
	}
	b.host = b.account + ".blob.core.windows.net"
	switch {
	case os.Getenv("AZURE_STORAGE_KEY") != "":
		k, err := base64.StdEncoding.DecodeString(os.Getenv("AZURE_STORAGE_KEY"))
		if err != nil {
			return nil, fmt.Errorf("AZURE_STORAGE_KEY is not base64: %v", err)
		}
		b.key = k
	case os.Getenv("AZURE_STORAGE_SAS_TOKEN") != "":
		b.sas = strings.TrimPrefix(os.Getenv("AZURE_STORAGE_SAS_TOKEN"), "?")
	default:
		b.token = &entraToken{hc: b.hc}
	}
	return b, nil
}

func (b *azureBackend) fromConnectionString(cs string) error {
	kv := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(part, "="); ok {
			kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	b.account = kv["accountname"]
	if p := kv["defaultendpointsprotocol"]; p != "" {
		b.scheme = p
	}
	if ep := kv["blobendpoint"]; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return fmt.Errorf("BlobEndpoint %q is not a URL", ep)
		}
		b.scheme, b.host, b.base = u.Scheme, u.Host, strings.TrimSuffix(u.Path, "/")
	} else {
		suffix := kv["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		b.host = b.account + ".blob." + suffix
	}
	switch {
	case kv["accountkey"] != "":
		// The key holds "=" padding: take it from the original text.
		i := strings.Index(strings.ToLower(cs), "accountkey=")
		key := cs[i+len("accountkey="):]
		key, _, _ = strings.Cut(key, ";")
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
		if err != nil {
			return fmt.Errorf("AccountKey is not base64: %v", err)
		}
		b.key = k
	case kv["sharedaccesssignature"] != "":
		i := strings.Index(strings.ToLower(cs), "sharedaccesssignature=")
		sas := cs[i+len("sharedaccesssignature="):]
		sas, _, _ = strings.Cut(sas, ";")
		b.sas = strings.TrimPrefix(strings.TrimSpace(sas), "?")
	default:
		return errors.New("the connection string has neither AccountKey nor SharedAccessSignature")
	}
	if b.account == "" && b.key != nil {
		return errors.New("the connection string names no AccountName")
	}
	return nil
}

// azError is an error answer of the Blob service.
type azError struct {
	Status  int
	Code    string
	Message string
}

func (e *azError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, strings.SplitN(e.Message, "\n", 2)[0])
}

// request sends a request for blob (or the container, blob ""), authorised
// by Shared Key, SAS or a bearer token.
func (b *azureBackend) request(ctx context.Context, method, blob string, q url.Values, body io.ReaderAt, size int64, hdr http.Header) (*http.Response, error) {
	path := b.base + "/" + b.container
	if blob != "" {
		path += "/" + blob
	}
	rawPath := uriEncode(path, true)
	query := q.Encode()
	if b.sas != "" {
		query = strings.TrimPrefix(query+"&"+b.sas, "&")
	}
	var rd io.Reader
	if body != nil {
		rd = io.NewSectionReader(body, 0, size)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.scheme+"://"+b.host+rawPath, rd)
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
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	req.Header.Set("x-ms-version", azureVersion)
	switch {
	case b.key != nil:
		req.Header.Set("Authorization", "SharedKey "+b.account+":"+b.sharedKey(req, rawPath, q, size))
	case b.token != nil:
		tok, err := b.token.get(ctx)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := &azError{Status: resp.StatusCode, Code: resp.Header.Get("x-ms-error-code")}
		var x struct{ Code, Message string }
		if xml.Unmarshal(data, &x) == nil {
			if e.Code == "" {
				e.Code = x.Code
			}
			e.Message = x.Message
		}
		return nil, e
	}
	return resp, nil
}

// sharedKey signs a request (Shared Key for the Blob service,
// https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key).
func (b *azureBackend) sharedKey(req *http.Request, rawPath string, q url.Values, size int64) string {
	length := ""
	if size > 0 {
		length = strconv.FormatInt(size, 10)
	}
	h := req.Header
	var ms []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			ms = append(ms, lk)
		}
	}
	sort.Strings(ms)
	var canon strings.Builder
	for _, k := range ms {
		canon.WriteString(k + ":" + strings.TrimSpace(h.Get(k)) + "\n")
	}
	canon.WriteString("/" + b.account + rawPath)
	var qk []string
	for k := range q {
		qk = append(qk, k)
	}
	sort.Strings(qk)
	for _, k := range qk {
		v := append([]string(nil), q[k]...)
		sort.Strings(v)
		canon.WriteString("\n" + strings.ToLower(k) + ":" + strings.Join(v, ","))
	}
	toSign := strings.Join([]string{req.Method, h.Get("Content-Encoding"), h.Get("Content-Language"), length,
		h.Get("Content-MD5"), h.Get("Content-Type"), "", h.Get("If-Modified-Since"), h.Get("If-Match"),
		h.Get("If-None-Match"), h.Get("If-Unmodified-Since"), h.Get("Range")}, "\n") + "\n" + canon.String()
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte(toSign))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (b *azureBackend) list(ctx context.Context, prefix string, fn func(object)) error {
	marker := ""
	for {
		q := url.Values{"restype": {"container"}, "comp": {"list"}, "prefix": {prefix}, "delimiter": {"/"}, "maxresults": {"5000"}}
		if marker != "" {
			q.Set("marker", marker)
		}
		resp, err := b.request(ctx, "GET", "", q, nil, 0, nil)
		if err != nil {
			return err
		}
		var page struct {
			Blobs struct {
				Blob []struct {
					Name       string
					Properties struct {
						Length   int64  `xml:"Content-Length"`
						Modified string `xml:"Last-Modified"`
					}
				}
				BlobPrefix []struct{ Name string }
			}
			NextMarker string
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("listing: %w", err)
		}
		for _, p := range page.Blobs.BlobPrefix {
			if name := strings.TrimSuffix(strings.TrimPrefix(p.Name, prefix), "/"); name != "" {
				fn(object{name: name, dir: true})
			}
		}
		for _, it := range page.Blobs.Blob {
			name := strings.TrimPrefix(it.Name, prefix)
			if name == "" || strings.HasSuffix(name, "/") {
				continue
			}
			mod, _ := http.ParseTime(it.Properties.Modified)
			fn(object{name: name, size: it.Properties.Length, mod: mod})
		}
		if page.NextMarker == "" {
			return nil
		}
		marker = page.NextMarker
	}
}

func (b *azureBackend) get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	var hdr http.Header
	if r := byteRange(off, length); r != "" {
		hdr = http.Header{"X-Ms-Range": {r}}
	}
	resp, err := b.request(ctx, "GET", key, nil, nil, 0, hdr)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// put uploads in one Put Blob up to partSize, beyond in blocks committed by
// one Put Block List: the blob exists, whole, only once committed.
func (b *azureBackend) put(ctx context.Context, key string, f *os.File, size int64) error {
	if size <= partSize {
		return drained(b.request(ctx, "PUT", key, nil, f, size, http.Header{"X-Ms-Blob-Type": {"BlockBlob"}}))
	}
	var list bytes.Buffer
	list.WriteString(`<?xml version="1.0" encoding="utf-8"?><BlockList>`)
	for n, off := 0, int64(0); off < size; n, off = n+1, off+partSize {
		l := min(partSize, size-off)
		id := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("walscope-block-%08d", n)))
		if err := drained(b.request(ctx, "PUT", key, url.Values{"comp": {"block"}, "blockid": {id}}, io.NewSectionReader(f, off, l), l, nil)); err != nil {
			return err
		}
		list.WriteString("<Latest>" + id + "</Latest>")
	}
	list.WriteString("</BlockList>")
	doc := list.Bytes()
	return drained(b.request(ctx, "PUT", key, url.Values{"comp": {"blocklist"}}, bytes.NewReader(doc), int64(len(doc)), nil))
}

func (b *azureBackend) del(ctx context.Context, key string) error {
	resp, err := b.request(ctx, "DELETE", key, nil, nil, 0, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (b *azureBackend) classify(err error) Class {
	var ae *azError
	if errors.As(err, &ae) {
		switch {
		case ae.Status == http.StatusNotFound:
			return ClassNotFound
		case conditionFailed(ae.Status):
			return ClassExists // BlobAlreadyExists, ConditionNotMet (Create)
		case ae.Status == http.StatusForbidden || ae.Status == http.StatusUnauthorized:
			return ClassAccessDenied
		}
		return ClassServer
	}
	if errors.Is(err, errNoEntraToken) {
		return ClassAccessDenied
	}
	return netClass(err)
}

// entraToken gets and renews a Microsoft Entra (Azure AD) access token for
// Azure Storage.
type entraToken struct {
	hc      *http.Client
	mu      sync.Mutex
	tok     string
	expires time.Time
}

var errNoEntraToken = errors.New("no Azure credentials found (service principal, workload identity, managed identity, Azure CLI)")

const storageScope = "https://storage.azure.com/.default"

func (t *entraToken) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != "" && time.Until(t.expires) > 5*time.Minute {
		return t.tok, nil
	}
	tok, exp, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.tok, t.expires = tok, exp
	return tok, nil
}

type tokenAnswer struct {
	AccessToken string          `json:"access_token"`
	ExpiresIn   json.RawMessage `json:"expires_in"` // a number, or a string (managed identity)
	ExpiresOn   json.RawMessage `json:"expires_on"`
}

func (a tokenAnswer) expiry() time.Time {
	if s := strings.Trim(string(a.ExpiresIn), `"`); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	if s := strings.Trim(string(a.ExpiresOn), `"`); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0)
		}
	}
	return time.Now().Add(30 * time.Minute)
}

func (t *entraToken) fetch(ctx context.Context) (string, time.Time, error) {
	tenant, client := os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID")
	authority := strings.TrimSuffix(os.Getenv("AZURE_AUTHORITY_HOST"), "/")
	if authority == "" {
		authority = "https://login.microsoftonline.com"
	}
	tokenURL := authority + "/" + tenant + "/oauth2/v2.0/token"
	if secret := os.Getenv("AZURE_CLIENT_SECRET"); tenant != "" && client != "" && secret != "" {
		return t.post(ctx, tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {client},
			"client_secret": {secret}, "scope": {storageScope}})
	}
	if file := os.Getenv("AZURE_FEDERATED_TOKEN_FILE"); tenant != "" && client != "" && file != "" {
		assertion, err := os.ReadFile(file)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("workload identity: %w", err)
		}
		return t.post(ctx, tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {client},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion":      {strings.TrimSpace(string(assertion))}, "scope": {storageScope}})
	}
	if ep, hdr := os.Getenv("IDENTITY_ENDPOINT"), os.Getenv("IDENTITY_HEADER"); ep != "" && hdr != "" {
		q := url.Values{"api-version": {"2019-08-01"}, "resource": {"https://storage.azure.com/"}}
		if client != "" {
			q.Set("client_id", client)
		}
		return t.getToken(ctx, ep+"?"+q.Encode(), http.Header{"X-Identity-Header": {hdr}})
	}
	q := url.Values{"api-version": {"2018-02-01"}, "resource": {"https://storage.azure.com/"}}
	if client != "" {
		q.Set("client_id", client)
	}
	imdsCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	tok, exp, err := t.getToken(imdsCtx, "http://169.254.169.254/metadata/identity/oauth2/token?"+q.Encode(), http.Header{"Metadata": {"true"}})
	cancel()
	if err == nil {
		return tok, exp, nil
	}
	if out, err := exec.CommandContext(ctx, "az", "account", "get-access-token", "--resource", "https://storage.azure.com/", "--output", "json").Output(); err == nil {
		var a struct {
			AccessToken string `json:"accessToken"`
			ExpiresOn   int64  `json:"expires_on"`
		}
		if json.Unmarshal(out, &a) == nil && a.AccessToken != "" {
			exp := time.Unix(a.ExpiresOn, 0)
			if a.ExpiresOn == 0 {
				exp = time.Now().Add(30 * time.Minute)
			}
			return a.AccessToken, exp, nil
		}
	}
	return "", time.Time{}, errNoEntraToken
}

func (t *entraToken) post(ctx context.Context, u string, form url.Values) (string, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return t.answer(req)
}

func (t *entraToken) getToken(ctx context.Context, u string, hdr http.Header) (string, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header = hdr
	return t.answer(req)
}

func (t *entraToken) answer(req *http.Request) (string, time.Time, error) {
	resp, err := t.hc.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return "", time.Time{}, fmt.Errorf("token from %s: %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	var a tokenAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("token from %s: no access_token in the answer", req.URL.Host)
	}
	return a.AccessToken, a.expiry(), nil
}
