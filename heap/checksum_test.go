package heap_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/internal/testwal"
)

// TestChecksumOfBackupPages: every page of every relation file in
// fixtures/pages' base backup (a real PostgreSQL 15 cluster initialised with
// --data-checksums: the checksums pg_basebackup read and checked) carries
// the checksum Checksum computes; a flipped bit, or the page read as
// another block, does not.
func TestChecksumOfBackupPages(t *testing.T) {
	b, err := backup.Open(filepath.Join(testwal.Root(t), "fixtures", "pages", "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	page := make([]byte, b.BlockSize())
	checked := 0
	for _, db := range []uint32{1, 5} {
		names, err := b.ReadDir("base/" + itoa(db))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			rel, ok := parseRel(n)
			if !ok {
				continue
			}
			loc := decode.RelFileLocator{SpcOID: 1663, DBOID: db, RelNumber: rel}
			nb, err := b.NBlocks(loc, decode.ForkMain)
			if err != nil {
				t.Fatal(err)
			}
			for blk := uint32(0); blk < nb; blk++ {
				if err := b.ReadBlock(loc, decode.ForkMain, blk, page); err != nil {
					t.Fatal(err)
				}
				if !heap.ChecksumOK(page, blk) {
					t.Fatalf("base/%d/%d block %d: pd_checksum %d, computed %d", db, rel, blk, binary.LittleEndian.Uint16(page[8:]), heap.Checksum(page, blk))
				}
				if binary.LittleEndian.Uint16(page[8:]) == 0 {
					continue
				}
				checked++
				if heap.ChecksumOK(page, blk+1) {
					t.Fatalf("base/%d/%d block %d: right as block %d too", db, rel, blk, blk+1)
				}
				page[100] ^= 1
				if heap.ChecksumOK(page, blk) {
					t.Fatalf("base/%d/%d block %d: a flipped bit still checks", db, rel, blk)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d pages checked", checked)
	}
	t.Logf("%d pages: checksums equal the server's", checked)
}

func itoa(n uint32) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

func parseRel(name string) (uint32, bool) {
	var n uint32
	if name == "" {
		return 0, false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint32(c-'0')
	}
	return n, true
}
