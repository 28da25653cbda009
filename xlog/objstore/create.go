package objstore

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ClassExists is a create-only write refused because the object exists
// (Create). Such an *Error unwraps to fs.ErrExist.
const ClassExists Class = "exists"

// Create stores data as the object name only if no object has that name,
// in one conditional request (S3 PUT with If-None-Match: *, GCS upload with
// ifGenerationMatch=0, Azure Put Blob with If-None-Match: *): of writers
// racing to create one name exactly one succeeds, whatever the others see
// of it in listings. Refused, the error is an *Error of ClassExists
// (errors.Is(err, fs.ErrExist)). A request retried after a lost answer may
// find its own object: callers that must tell write data of their own in it
// (a nonce) and read it back with Get.
func (t *Tree) Create(name string, data []byte) error {
	key, err := t.key(name)
	if err != nil {
		return err
	}
	err = t.retry(func() error { return t.b.create(t.ctx, key, data) })
	if err != nil {
		return &Error{URL: t.url(key), Op: "create", Class: t.class(err), Err: err}
	}
	t.forget(key)
	return nil
}

// Get reads the whole object name with one request, bypassing the tree's
// listings and prefetches (for small objects another writer changes: a
// lock, a manifest). A missing object is an *Error of ClassNotFound
// (errors.Is(err, fs.ErrNotExist)).
func (t *Tree) Get(name string) ([]byte, error) {
	key, err := t.key(name)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = t.retry(func() error {
		rc, err := t.b.get(t.ctx, key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err = io.ReadAll(rc)
		return err
	})
	if err != nil {
		return nil, &Error{URL: t.url(key), Op: "get", Class: t.class(err), Err: err}
	}
	return data, nil
}

// Remove deletes the object name; a missing one is no error.
func (t *Tree) Remove(name string) error {
	key, err := t.key(name)
	if err != nil {
		return err
	}
	err = t.retry(func() error { return t.b.del(t.ctx, key) })
	if err != nil && t.class(err) != ClassNotFound {
		return &Error{URL: t.url(key), Op: "delete", Class: t.class(err), Err: err}
	}
	t.forget(key)
	return nil
}

// forget drops what the tree cached of key's directory, so that the next
// listing sees the change.
func (t *Tree) forget(key string) {
	dir := ""
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		dir = key[:i+1]
	}
	t.mu.Lock()
	delete(t.dirs, dir)
	t.mu.Unlock()
}

// conditionFailed reports an answer refusing a conditional write: 412
// Precondition Failed (S3, GCS, Azure), 409 (Azure's BlobAlreadyExists,
// S3's ConditionalRequestConflict: another conditional write in flight).
func conditionFailed(status int) bool {
	return status == http.StatusPreconditionFailed || status == http.StatusConflict
}

func (b *s3Backend) create(ctx context.Context, key string, data []byte) error {
	return drained(b.request(ctx, "PUT", key, nil, bytes.NewReader(data), int64(len(data)), http.Header{"If-None-Match": {"*"}}))
}

func (b *gcsBackend) create(ctx context.Context, key string, data []byte) error {
	q := url.Values{"uploadType": {"media"}, "name": {key}, "ifGenerationMatch": {"0"}}
	req, err := http.NewRequestWithContext(ctx, "POST", b.base+"/upload/storage/v1/b/"+url.PathEscape(b.bucket)+"/o?"+q.Encode(), bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("Content-Type", "application/octet-stream")
	return drained(b.do(req))
}

func (b *azureBackend) create(ctx context.Context, key string, data []byte) error {
	return drained(b.request(ctx, "PUT", key, nil, bytes.NewReader(data), int64(len(data)),
		http.Header{"X-Ms-Blob-Type": {"BlockBlob"}, "If-None-Match": {"*"}}))
}
