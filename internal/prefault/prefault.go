// Package prefault maps the running program's code into its page tables in
// one system call, when it is imported (a blank import in package main,
// before most other packages initialise).
//
// A run of walscope is short: stats over one segment, a verify in
// archive_command, a loop over files. Most of its start was page faults, not
// work: package initialisation and the first run of every function touch
// code scattered over the 6 MB of the executable's text, and each first
// touch of a 64 KB stretch is a fault (the kernel maps 16 pages around it).
// On the 2-core virtual machine the benchmarks run on a fault costs 10 to 30
// µs, and stats over one 1 MB segment took about 75 of them in code.
// madvise(MADV_POPULATE_READ) (Linux 5.14) maps the same pages, already in
// the page cache, in one call of about half a millisecond (issue 16:
// measured by scripts/bench-start.sh; populating the read-only data too, 6
// MB more of which a run touches less, measured no faster). On other systems
// the import does nothing.
//
// Nothing else changes: the pages are the executable's, shared with every
// other run, and a kernel without MADV_POPULATE_READ refuses the call, which
// is then a no-op. Packages other than main must not import this one.
package prefault

// Mapping is one line of /proc/self/maps: [Start, End).
type Mapping struct {
	Start, End uintptr
}

// Code returns, from the text of /proc/self/maps, the mappings of the file
// that is mapped at the address inside (an address of the executable's own
// data) that are readable and executable, not writable: its code. It returns
// nothing when no mapping holds inside or it has no file: nothing to
// populate. A truncated last line is ignored.
func Code(text []byte, inside uintptr) []Mapping {
	var lines []parsedLine
	exe := ""
	for len(text) > 0 {
		i := 0
		for i < len(text) && text[i] != '\n' {
			i++
		}
		if i == len(text) {
			break // cut short: not a whole line
		}
		l, ok := parseLine(text[:i])
		text = text[i+1:]
		if !ok {
			continue
		}
		lines = append(lines, l)
		if l.Start <= inside && inside < l.End {
			exe = l.path
		}
	}
	if exe == "" {
		return nil
	}
	var out []Mapping
	for _, l := range lines {
		if l.path == exe && l.code {
			out = append(out, l.Mapping)
		}
	}
	return out
}

type parsedLine struct {
	Mapping
	code bool   // r-x: readable, executable, not writable
	path string // "" for anonymous memory and [heap], [stack], …
}

// parseLine reads "start-end perms offset dev inode path".
func parseLine(b []byte) (parsedLine, bool) {
	var l parsedLine
	start, b, ok := hexUntil(b, '-')
	if !ok {
		return l, false
	}
	end, b, ok := hexUntil(b, ' ')
	if !ok || end <= start || len(b) < 4 {
		return l, false
	}
	l.Start, l.End = uintptr(start), uintptr(end)
	l.code = b[0] == 'r' && b[1] != 'w' && b[2] == 'x'
	// offset, device and inode, then the path (which may hold spaces).
	for field := 0; field < 4; field++ {
		for len(b) > 0 && b[0] != ' ' {
			b = b[1:]
		}
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
	}
	if len(b) > 0 && b[0] == '/' {
		l.path = string(b)
	}
	return l, true
}

// hexUntil reads a hexadecimal number up to the byte stop and returns it with
// what follows stop.
func hexUntil(b []byte, stop byte) (uint64, []byte, bool) {
	var v uint64
	for i, c := range b {
		switch {
		case c == stop && i > 0:
			return v, b[i+1:], true
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, nil, false
		}
		if i >= 16 {
			return 0, nil, false
		}
	}
	return 0, nil, false
}
