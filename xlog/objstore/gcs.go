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
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2/google"
)

// gcsBackend is Google Cloud Storage through its JSON API over net/http
// (https://cloud.google.com/storage/docs/json_api), authenticated by
// golang.org/x/oauth2/google's standard chain
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default
// credentials, workload identity, the metadata server). The official
// cloud.google.com/go/storage client brings gRPC and protobuf for the same
// four calls (see the README's Dependencies). STORAGE_EMULATOR_HOST, the
// variable Google's clients read, points it at an emulator, unauthenticated.
type gcsBackend struct {
	hc     *http.Client
	base   string // https://storage.googleapis.com
	bucket string
}

func newGCS(ctx context.Context, bucket string) (backend, error) {
	b := &gcsBackend{base: "https://storage.googleapis.com", bucket: bucket}
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		b.base = strings.TrimSuffix(host, "/")
		b.hc = &http.Client{}
		return b, nil
	}
	hc, err := google.DefaultClient(ctx, "https://www.googleapis.com/auth/devstorage.read_write")
	if err != nil {
		return nil, err
	}
	b.hc = hc
	return b, nil
}

// gcsError is an error answer of the JSON API.
type gcsError struct {
	Status int
	Msg    string
}

func (e *gcsError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Msg) }

func (b *gcsBackend) do(req *http.Request) (*http.Response, error) {
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return nil, &gcsError{Status: resp.StatusCode, Msg: msg}
	}
	return resp, nil
}

func (b *gcsBackend) objectURL(key string) string {
	return b.base + "/storage/v1/b/" + url.PathEscape(b.bucket) + "/o/" + url.PathEscape(key)
}

func (b *gcsBackend) list(ctx context.Context, prefix string, fn func(object)) error {
	token := ""
	for {
		q := url.Values{"prefix": {prefix}, "delimiter": {"/"}, "maxResults": {"1000"},
			"fields": {"items(name,size,updated),prefixes,nextPageToken"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		req, err := http.NewRequestWithContext(ctx, "GET", b.base+"/storage/v1/b/"+url.PathEscape(b.bucket)+"/o?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		resp, err := b.do(req)
		if err != nil {
			return err
		}
		var page struct {
			Items []struct {
				Name    string    `json:"name"`
				Size    string    `json:"size"`
				Updated time.Time `json:"updated"`
			} `json:"items"`
			Prefixes      []string `json:"prefixes"`
			NextPageToken string   `json:"nextPageToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return err
		}
		for _, p := range page.Prefixes {
			if name := strings.TrimSuffix(strings.TrimPrefix(p, prefix), "/"); name != "" {
				fn(object{name: name, dir: true})
			}
		}
		for _, it := range page.Items {
			name := strings.TrimPrefix(it.Name, prefix)
			if name == "" || strings.HasSuffix(name, "/") {
				continue
			}
			size, _ := strconv.ParseInt(it.Size, 10, 64)
			fn(object{name: name, size: size, mod: it.Updated})
		}
		if page.NextPageToken == "" {
			return nil
		}
		token = page.NextPageToken
	}
}

func (b *gcsBackend) get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", b.objectURL(key)+"?alt=media", nil)
	if err != nil {
		return nil, err
	}
	if r := byteRange(off, length); r != "" {
		req.Header.Set("Range", r)
	}
	resp, err := b.do(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// put is a single-request media upload: the object exists only once the
// request has completed.
func (b *gcsBackend) put(ctx context.Context, key string, f *os.File, size int64) error {
	q := url.Values{"uploadType": {"media"}, "name": {key}}
	req, err := http.NewRequestWithContext(ctx, "POST", b.base+"/upload/storage/v1/b/"+url.PathEscape(b.bucket)+"/o?"+q.Encode(), io.NewSectionReader(f, 0, size))
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	return drained(b.do(req))
}

func (b *gcsBackend) del(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, "DELETE", b.objectURL(key), nil)
	if err != nil {
		return err
	}
	resp, err := b.do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (b *gcsBackend) classify(err error) Class {
	var ge *gcsError
	if errors.As(err, &ge) {
		switch {
		case ge.Status == 404:
			return ClassNotFound
		case conditionFailed(ge.Status):
			return ClassExists // ifGenerationMatch=0 on an existing object (Create)
		case ge.Status == 401 || ge.Status == 403:
			return ClassAccessDenied
		}
		return ClassServer
	}
	return netClass(err)
}
