package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"testing"
)

// fakeBackend is a bucket in memory whose gets of some keys fail.
type fakeBackend struct {
	mu      sync.Mutex
	objects map[string][]byte
	fail    map[string]error // get fails so
	gets    map[string]int
}

func (b *fakeBackend) list(ctx context.Context, prefix string, fn func(object)) error {
	seen := map[string]bool{}
	for k, v := range b.objects {
		rest, ok := bytes.CutPrefix([]byte(k), []byte(prefix))
		if !ok {
			continue
		}
		if i := bytes.IndexByte(rest, '/'); i >= 0 {
			if d := string(rest[:i]); !seen[d] {
				seen[d] = true
				fn(object{name: d, dir: true})
			}
			continue
		}
		fn(object{name: string(rest), size: int64(len(v))})
	}
	return nil
}

func (b *fakeBackend) get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	b.mu.Lock()
	b.gets[key]++
	b.mu.Unlock()
	if err := b.fail[key]; err != nil {
		return nil, err
	}
	v, ok := b.objects[key]
	if !ok {
		return nil, errNotFound
	}
	end := int64(len(v))
	if length >= 0 {
		end = min(end, off+length)
	}
	return io.NopCloser(bytes.NewReader(v[off:end])), nil
}

func (b *fakeBackend) put(ctx context.Context, key string, f *os.File, size int64) error { return nil }
func (b *fakeBackend) del(ctx context.Context, key string) error                         { return nil }
func (b *fakeBackend) create(ctx context.Context, key string, data []byte) error         { return nil }

var errNotFound = errors.New("no such key")

func (b *fakeBackend) classify(err error) Class {
	if errors.Is(err, errNotFound) {
		return ClassNotFound
	}
	return netClass(err)
}

// TestFetchFailures: an object that cannot be fetched is an *Error naming
// it with its class, after the retries (none for a final answer); its
// neighbours still read, and prefetched ones are fetched once.
func TestFetchFailures(t *testing.T) {
	b := &fakeBackend{objects: map[string][]byte{
		"wal/000000010000000000000001": []byte("one"),
		"wal/000000010000000000000002": []byte("two"),
		"wal/000000010000000000000003": []byte("three"),
		"wal/000000010000000000000004": []byte("four"),
	}, fail: map[string]error{
		"wal/000000010000000000000002": &net.OpError{Op: "read", Err: errors.New("connection reset by peer")},
	}, gets: map[string]int{}}
	tr := newTree(context.Background(), Location{Scheme: "s3", Bucket: "bk"}, b, Options{Retries: 2})
	ents, err := tr.ReadDir("s3://bk/wal")
	if err != nil || len(ents) != 4 {
		t.Fatalf("ReadDir: %d entries, %v", len(ents), err)
	}
	read := func(name string) (string, error) {
		f, err := tr.Open("s3://bk/wal/" + name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		return string(data), err
	}
	if got, err := read("000000010000000000000001"); got != "one" || err != nil {
		t.Errorf("first: %q, %v", got, err)
	}
	_, err = read("000000010000000000000002")
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassNetwork || e.Op != "get" || e.URL != "s3://bk/wal/000000010000000000000002" {
		t.Fatalf("a failing object: %v", err)
	}
	if got, err := read("000000010000000000000003"); got != "three" || err != nil {
		t.Errorf("after the failure: %q, %v", got, err)
	}
	b.mu.Lock()
	if n := b.gets["wal/000000010000000000000002"]; n != 3 {
		t.Errorf("the failing object was tried %d times, want 1 + 2 retries", n)
	}
	if n := b.gets["wal/000000010000000000000003"]; n != 1 {
		t.Errorf("a prefetched object was fetched %d times, want once", n)
	}
	b.mu.Unlock()
	if _, err := tr.Open("s3://bk/wal/000000010000000000000009"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v", err)
	}
}
