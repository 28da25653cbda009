package typeout

import (
	"fmt"
	"strconv"
)

// inet's address families as stored (PGSQL_AF_INET, PGSQL_AF_INET6 in
// utils/inet.h).
const (
	pgsqlAFInet  = 2
	pgsqlAFInet6 = 3
)

// appendInet is inet_out and cidr_out (network_out, network.c): the stored
// inet_struct is family, bits and the address bytes (4 or 16), printed by
// pg_inet_net_ntop (port/inet_net_ntop.c); cidr always shows its /bits.
func appendInet(dst, d []byte, cidr bool) ([]byte, error) {
	if len(d) < 2 {
		return dst, fmt.Errorf("%w: inet of %d bytes", ErrCorrupt, len(d))
	}
	family, bits, addr := d[0], int(d[1]), d[2:]
	start := len(dst)
	switch family {
	case pgsqlAFInet:
		if len(addr) != 4 || bits > 32 {
			return dst, fmt.Errorf("%w: IPv4 inet of %d address bytes, %d bits", ErrCorrupt, len(addr), bits)
		}
		for i, b := range addr {
			if i > 0 {
				dst = append(dst, '.')
			}
			dst = strconv.AppendUint(dst, uint64(b), 10)
		}
		if bits != 32 {
			dst = append(dst, '/')
			dst = strconv.AppendInt(dst, int64(bits), 10)
		}
	case pgsqlAFInet6:
		if len(addr) != 16 || bits > 128 {
			return dst, fmt.Errorf("%w: IPv6 inet of %d address bytes, %d bits", ErrCorrupt, len(addr), bits)
		}
		dst = appendIPv6(dst, addr, bits)
	default:
		return dst, fmt.Errorf("%w: inet family %d", ErrCorrupt, family)
	}
	if cidr {
		has := false
		for _, c := range dst[start:] {
			has = has || c == '/'
		}
		if !has {
			dst = append(dst, '/')
			dst = strconv.AppendInt(dst, int64(bits), 10)
		}
	}
	return dst, nil
}

// appendIPv6 is inet_net_ntop_ipv6: the longest run (the first of equal
// ones) of at least two zero words as "::", an embedded IPv4 address in
// dotted form for ::a.b.c.d and ::ffff:a.b.c.d, "/bits" unless 128.
func appendIPv6(dst, src []byte, bits int) []byte {
	var words [8]int
	for i := 0; i < 16; i++ {
		words[i/2] |= int(src[i]) << ((1 - i%2) * 8)
	}
	bestBase, bestLen, curBase, curLen := -1, 0, -1, 0
	for i := 0; i < 8; i++ {
		if words[i] == 0 {
			if curBase == -1 {
				curBase, curLen = i, 1
			} else {
				curLen++
			}
		} else if curBase != -1 {
			if bestBase == -1 || curLen > bestLen {
				bestBase, bestLen = curBase, curLen
			}
			curBase = -1
		}
	}
	if curBase != -1 && (bestBase == -1 || curLen > bestLen) {
		bestBase, bestLen = curBase, curLen
	}
	if bestBase != -1 && bestLen < 2 {
		bestBase = -1
	}
	for i := 0; i < 8; i++ {
		if bestBase != -1 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				dst = append(dst, ':')
			}
			continue
		}
		if i != 0 {
			dst = append(dst, ':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 7 && words[7] != 1) || (bestLen == 5 && words[5] == 0xffff)) {
			for j, b := range src[12:16] {
				if j > 0 {
					dst = append(dst, '.')
				}
				dst = strconv.AppendUint(dst, uint64(b), 10)
			}
			break
		}
		dst = strconv.AppendUint(dst, uint64(words[i]), 16)
	}
	if bestBase != -1 && bestBase+bestLen == 8 {
		dst = append(dst, ':')
	}
	if bits != 128 {
		dst = append(dst, '/')
		dst = strconv.AppendInt(dst, int64(bits), 10)
	}
	return dst
}
