package archive

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// pgBackRest: <repo>/archive/<stanza>/archive.info and
// <repo>/archive/<stanza>/<version>-<id>/<16 hex>/<segment>-<sha1>[.ext],
// history files in <version>-<id>/.

var archiveIDRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?-[0-9]+$`)

func (s *Source) isPgBackRest(dir string) bool { return len(s.pgbStanzas(dir)) > 0 }

// pgbStanzas returns the stanza directories at dir: dir itself, or the
// stanzas under dir/archive or under dir.
func (s *Source) pgbStanzas(dir string) []string {
	if s.isStanzaDir(dir) {
		return []string{dir}
	}
	for _, parent := range []string{s.tree.Join(dir, "archive"), dir} {
		ents, err := s.readDir(parent)
		if err != nil {
			continue
		}
		var out []string
		for _, e := range ents {
			if !e.IsDir() {
				continue // (a path joined for every segment file of a flat archive)
			}
			if p := s.tree.Join(parent, e.Name()); s.isStanzaDir(p) {
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func (s *Source) isStanzaDir(d string) bool {
	if s.exists(s.tree.Join(d, "archive.info")) || s.exists(s.tree.Join(d, "archive.info.copy")) {
		return true
	}
	return len(s.archiveIDs(d)) > 0
}

// archiveIDs lists the <version>-<id> directories of a stanza that hold
// <16 hex> directories.
func (s *Source) archiveIDs(stanza string) []string {
	ents, err := s.readDir(stanza)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !archiveIDRe.MatchString(e.Name()) {
			continue
		}
		subs, _ := s.readDir(s.tree.Join(stanza, e.Name()))
		for _, sub := range subs {
			if sub.IsDir() && len(sub.Name()) == 16 && isUpperHex(sub.Name()) {
				out = append(out, e.Name())
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return archiveIDNum(out[i]) < archiveIDNum(out[j]) })
	return out
}

func archiveIDNum(id string) int {
	n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
	return n
}

func (s *Source) scanPgBackRest(dir string) error {
	stanzas := s.pgbStanzas(dir)
	if len(stanzas) > 1 {
		names := make([]string, len(stanzas))
		for i, st := range stanzas {
			names[i] = filepath.Base(st)
		}
		return fmt.Errorf("%s: %w: several pgBackRest stanzas (%s): name one, as archive/<stanza>", dir, ErrLayout, strings.Join(names, ", "))
	}
	stanza := stanzas[0]
	info := &RepoInfo{Tool: LayoutPgBackRest, Stanza: filepath.Base(stanza)}
	s.repo = info
	var dbID string
	for _, name := range []string{"archive.info", "archive.info.copy"} {
		b, err := readFile(s.tree, s.tree.Join(stanza, name))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(b, magicOpenSSL) {
			info.Encrypted = true
			info.Note = name + " is encrypted (repo-cipher-type): the archive files are too"
			break
		}
		ini := parseINI(b)
		dbID = ini["db"]["db-id"]
		info.SystemID, _ = strconv.ParseUint(ini["db"]["db-system-id"], 10, 64)
		info.Version = strings.Trim(ini["db"]["db-version"], `"`)
		break
	}
	ids := s.archiveIDs(stanza)
	all := ids
	if s.pgbOnlyID != "" {
		ids = []string{s.pgbOnlyID} // opened at archive/<stanza>/<version>-<id>
	} else if dbID != "" && info.Version != "" {
		want := info.Version + "-" + dbID
		var others []string
		found := false
		for _, id := range ids {
			if id == want {
				found = true
			} else {
				others = append(others, id)
			}
		}
		if found {
			ids = []string{want}
			if len(others) > 0 {
				info.Note = fmt.Sprintf("archive ids %s belong to earlier clusters (stanza-upgrade) and are not read", strings.Join(others, ", "))
			}
		}
	}
	if len(ids) == 1 {
		info.ArchiveID = ids[0]
	} else {
		info.ArchiveID = strings.Join(ids, ",")
	}
	for _, id := range all {
		if slices.Contains(ids, id) {
			continue
		}
		reason := "the WAL of an earlier cluster (stanza-upgrade): not read (name the folder to read it)"
		if s.pgbOnlyID != "" {
			reason = "another archive id than the one named: not read"
		}
		s.notRead = append(s.notRead, NotRead{Path: s.tree.Join(stanza, id), Reason: reason})
	}
	for _, id := range ids {
		idDir := s.tree.Join(stanza, id)
		if err := s.scanFlat(idDir, LayoutPgBackRest, false); err != nil {
			return err
		}
		subs, err := s.readDir(idDir)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			if sub.IsDir() && len(sub.Name()) == 16 && isUpperHex(sub.Name()) {
				if err := s.scanFlat(s.tree.Join(idDir, sub.Name()), LayoutPgBackRest, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// parseINI reads pgBackRest's info files: [section] and key=value lines.
func parseINI(b []byte) map[string]map[string]string {
	out := map[string]map[string]string{}
	sec := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sec = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if out[sec] == nil {
			out[sec] = map[string]string{}
		}
		out[sec][k] = v
	}
	return out
}

// Barman: <server>/wals/<16 hex>/<segment> (compressed without a new
// extension), history files in wals/, and wals/xlog.db, one line per file:
// name, size, time, compression[, encryption].

type xlogDBLine struct {
	size        int64
	compression string
	encryption  string
}

func (s *Source) scanBarman(wals string) error {
	var index map[string]xlogDBLine
	if b, err := readFile(s.tree, s.tree.Join(wals, "xlog.db")); err == nil {
		index = map[string]xlogDBLine{}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			l := xlogDBLine{}
			l.size, _ = strconv.ParseInt(f[1], 10, 64)
			if len(f) > 3 && f[3] != "None" {
				l.compression = f[3]
			}
			if len(f) > 4 && f[4] != "None" {
				l.encryption = f[4]
			}
			index[f[0]] = l
		}
	}
	first := len(s.entries)
	if err := s.scanFlat(wals, LayoutBarman, false); err != nil {
		return err
	}
	// WAL not archived yet, beside wals/ in the server directory: listed,
	// as walscope reads the archive only.
	for _, f := range []struct{ name, why string }{
		{"incoming", "Barman's incoming folder: WAL archive_command delivered that barman has not archived yet; not read (name the folder to read it)"},
		{"streaming", "Barman's streaming folder: WAL pg_receivewal received that barman has not archived yet; not read (name the folder to read it)"},
	} {
		p := s.tree.Join(parentPath(wals), f.name)
		if ents, err := s.readDir(p); err == nil && len(ents) > 0 {
			s.notRead = append(s.notRead, NotRead{Path: p, Reason: f.why})
		}
	}
	subs, err := s.readDir(wals)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if sub.IsDir() && len(sub.Name()) == 16 && isUpperHex(sub.Name()) {
			if err := s.scanFlat(s.tree.Join(wals, sub.Name()), LayoutBarman, false); err != nil {
				return err
			}
		}
	}
	if index == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range s.entries[first:] {
		base := filepath.Base(e.file)
		seen[base] = true
		l, ok := index[base]
		if !ok {
			e.problems = append(e.problems, Problem{Kind: ProblemIndex, Message: "not listed in xlog.db"})
			continue
		}
		e.hint = l.compression
		if l.encryption != "" {
			e.hint += "+" + l.encryption
		}
	}
	var missing []string
	for name := range index {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		n, ok := ParseName(name)
		if !ok {
			continue
		}
		p := s.tree.Join(wals, name)
		if !n.History && len(name) >= 16 {
			p = s.tree.Join(wals, name[:16], name)
		}
		s.entries = append(s.entries, &entry{key: p, name: n, layout: LayoutBarman, file: p, missing: true,
			size: index[name].size, hint: index[name].compression,
			problems: []Problem{{Kind: ProblemMissing, Message: "listed in xlog.db but missing"}}})
	}
	return nil
}
