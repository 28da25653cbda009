package prefault

import (
	"syscall"
	"unsafe"
)

// madvPopulateRead is MADV_POPULATE_READ (include/uapi/asm-generic/mman-common.h).
const madvPopulateRead = 22

// maps receives /proc/self/maps: a program of walscope's size has about 30
// mappings when packages initialise, 2 KB of text.
var maps [16 << 10]byte

const marker = "walscope: the executable's read-only data"

func init() {
	populate()
}

// populate maps the executable's code; any failure leaves the faults to
// happen as they would have.
func populate() {
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	n, _ := syscall.Read(fd, maps[:])
	syscall.Close(fd)
	if n <= 0 {
		return
	}
	// A string constant's bytes are in the executable's read-only data:
	// the mapping that holds them names the file whose code to populate.
	for _, m := range Code(maps[:n], uintptr(unsafe.Pointer(unsafe.StringData(marker)))) {
		syscall.Syscall(syscall.SYS_MADVISE, m.Start, m.End-m.Start, madvPopulateRead)
	}
}
