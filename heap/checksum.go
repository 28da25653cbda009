package heap

import "encoding/binary"

// Data page checksums, as pg_checksum_page computes them
// (src/include/storage/checksum_impl.h): FNV-1a-like sums over the page as
// 32 parallel lanes of 32-bit words, two rounds of zeros, the lanes XORed,
// the block number mixed in, reduced to 1..65535. The same in 10 to 18.

const (
	checksumLanes = 32
	fnvPrime      = 16777619
)

var checksumBaseOffsets = [checksumLanes]uint32{
	0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C,
	0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB,
	0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4,
	0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E, 0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756,
}

// Checksum returns the checksum PostgreSQL stores in pd_checksum for page
// (any BLCKSZ, a multiple of 128 bytes) as block blkno of its fork: the
// page's own pd_checksum is left out of the sum, the page is not changed.
func Checksum(page []byte, blkno uint32) uint16 {
	var sums [checksumLanes]uint32
	sums = checksumBaseOffsets
	words := len(page) / 4
	for i := 0; i+checksumLanes <= words; i += checksumLanes {
		for j := 0; j < checksumLanes; j++ {
			off := (i + j) * 4
			v := binary.LittleEndian.Uint32(page[off:])
			if off == 8 { // pd_checksum (bytes 8-9) counts as zero; pd_flags (10-11) as it is
				v &^= 0xFFFF
			}
			t := sums[j] ^ v
			sums[j] = t*fnvPrime ^ t>>17
		}
	}
	for r := 0; r < 2; r++ {
		for j := 0; j < checksumLanes; j++ {
			t := sums[j]
			sums[j] = t*fnvPrime ^ t>>17
		}
	}
	var result uint32
	for _, s := range sums {
		result ^= s
	}
	result ^= blkno
	return uint16(result%65535 + 1)
}

// ChecksumOK reports whether page's pd_checksum is right for block blkno;
// a new page (all zeros) has none and is right.
func ChecksumOK(page []byte, blkno uint32) bool {
	if isNew(page) {
		return true
	}
	return binary.LittleEndian.Uint16(page[8:]) == Checksum(page, blkno)
}

func isNew(page []byte) bool {
	for _, b := range page {
		if b != 0 {
			return false
		}
	}
	return true
}
