package export

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// An object store has no flock: one append at a time to a dataset there is
// a lease, an object created only if absent (S3 If-None-Match: *, GCS
// ifGenerationMatch=0, Azure If-None-Match: *), removed when the append
// ends. A lease left by a run that died is taken over when it is stale: its
// process is known to be gone (same host, no such pid) or it is older than
// the TTL. Each batch's manifest is created the same way, so two appenders
// that both believed they held the lease still cannot both commit one
// batch.

// LeaseName is the lease object's path in the dataset.
const LeaseName = ManifestDir + "/_append.lease"

// ErrLeased reports a dataset another append holds.
var ErrLeased = errors.New("another append holds the dataset")

// LeaseStore is what a lease needs of a store (xlog/objstore's Tree):
// Create fails with fs.ErrExist when the object exists, Get with
// fs.ErrNotExist when it does not.
type LeaseStore interface {
	Create(name string, data []byte) error
	Get(name string) ([]byte, error)
	Remove(name string) error
}

// LeaseInfo is the lease object's content.
type LeaseInfo struct {
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Nonce    string    `json:"nonce"`
	Acquired time.Time `json:"acquired"`
	Walscope string    `json:"walscope"`
}

// Lease is a held lease.
type Lease struct {
	s    LeaseStore
	name string
	Info LeaseInfo
	// TookOver describes the stale lease this one replaced ("" if none).
	TookOver string
}

// LeaseOptions tune TakeLease.
type LeaseOptions struct {
	// TTL: a lease older than this is stale (default 24 hours: a nightly
	// append still running a day later has died).
	TTL time.Duration
	// Break takes over any lease, stale or not (--break-lock).
	Break   bool
	Version string // walscope's version, written in the lease
	Now     func() time.Time
}

// TakeLease takes the lease of the dataset whose root is name's prefix
// (name is the lease object's full path in s). Held by a live append, it
// fails with an error wrapping ErrLeased that says who holds it since when.
func TakeLease(s LeaseStore, name string, o LeaseOptions) (*Lease, error) {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	host, _ := os.Hostname()
	var nonce [12]byte
	rand.Read(nonce[:])
	l := &Lease{s: s, name: name, Info: LeaseInfo{Host: host, PID: os.Getpid(), Nonce: hex.EncodeToString(nonce[:]),
		Acquired: o.Now().UTC().Truncate(time.Second), Walscope: o.Version}}
	data, _ := json.Marshal(l.Info)
	for attempt := 0; attempt < 3; attempt++ {
		err := s.Create(name, data)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		raw, err := s.Get(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		var held LeaseInfo
		if json.Unmarshal(raw, &held) != nil {
			held = LeaseInfo{} // unreadable: taken over as stale only by age
		}
		if held.Nonce == l.Info.Nonce {
			return l, nil // our own Create, retried after a lost answer
		}
		why := stale(held, host, o)
		if why == "" {
			return nil, fmt.Errorf("%w: %s (pid %d, walscope %s) since %s; if that run has died, re-run with --break-lock, or wait until the lease is %s old",
				ErrLeased, held.Host, held.PID, held.Walscope, held.Acquired.Format(time.RFC3339), o.TTL)
		}
		if err := s.Remove(name); err != nil {
			return nil, err
		}
		l.TookOver = fmt.Sprintf("took over the lease of %s (pid %d) since %s: %s", held.Host, held.PID, held.Acquired.Format(time.RFC3339), why)
	}
	return nil, fmt.Errorf("%w: the lease changed hands while it was being taken; try again", ErrLeased)
}

// stale says why a lease is stale, or "".
func stale(h LeaseInfo, host string, o LeaseOptions) string {
	switch {
	case o.Break:
		return "--break-lock"
	case h.Acquired.IsZero():
		return "unreadable"
	case o.Now().Sub(h.Acquired) > o.TTL:
		return fmt.Sprintf("older than %s", o.TTL)
	case h.Host == host && h.PID > 0 && !processAlive(h.PID):
		return "its process is gone"
	}
	return ""
}

// Release removes the lease if it is still this one's.
func (l *Lease) Release() error {
	raw, err := l.s.Get(l.name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var held LeaseInfo
	if json.Unmarshal(raw, &held) == nil && held.Nonce != l.Info.Nonce {
		return fmt.Errorf("%w: the lease was taken over by %s (pid %d) during this append", ErrLeased, held.Host, held.PID)
	}
	return l.s.Remove(l.name)
}
