package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/walscope/walscope/xlog/objstore"
)

// TestCreateRace: on each real server (S3: versitygw and MinIO; GCS:
// fake-gcs-server; Azure: Azurite), eight writers racing to Create one
// name: exactly one succeeds, the others get ClassExists (fs.ErrExist),
// and the object holds the winner's data; Create on an existing name is
// refused without touching it; after Remove, Create succeeds again; Get
// reads it without the listing cache.
func TestCreateRace(t *testing.T) {
	stores := []func(testing.TB) *Store{S3, MinIO, GCS, Azure}
	for _, mk := range stores {
		s := mk(t)
		t.Run(s.Name, func(t *testing.T) {
			for _, kv := range s.Env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			name := s.Bucket + "/race/_lock"
			tree, err := objstore.Open(context.Background(), s.Bucket+"/race", objstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			const writers = 8
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = tree.Create(name, []byte(fmt.Sprintf("writer %d", i)))
				}()
			}
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Errorf("writers %d and %d both created %s", winner, i, name)
					}
					winner = i
				case !errors.Is(err, fs.ErrExist):
					t.Errorf("writer %d: %v (want the exists class)", i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("no writer created %s: %v", name, errs)
			}
			got, err := tree.Get(name)
			if err != nil || string(got) != fmt.Sprintf("writer %d", winner) {
				t.Fatalf("Get: %q, %v; want writer %d's data", got, err, winner)
			}
			if err := tree.Create(name, []byte("late")); !errors.Is(err, fs.ErrExist) {
				t.Errorf("Create over an existing object: %v", err)
			}
			if got, _ := tree.Get(name); string(got) != fmt.Sprintf("writer %d", winner) {
				t.Errorf("refused Create changed the object: %q", got)
			}
			if err := tree.Remove(name); err != nil {
				t.Fatal(err)
			}
			if _, err := tree.Get(name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Get after Remove: %v", err)
			}
			if err := tree.Remove(name); err != nil {
				t.Errorf("Remove of a missing object: %v", err)
			}
			if err := tree.Create(name, []byte("again")); err != nil {
				t.Errorf("Create after Remove: %v", err)
			}
		})
	}
}
