package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// realTar makes a tar file of dir's content with the tar tool, as
// `tar -cf FILE -C DIR .` does (members ./pg_wal/..., as GNU tar writes
// them).
func realTar(t *testing.T, dir, dst string) {
	t.Helper()
	cmd := exec.Command("tar", "-cf", dst, "-C", dir, ".")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tar: %v: %s", err, errb.String())
	}
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLsListsSkippedFiles: ls lists every file it did not read inside tar
// files and a layout's own folders, with the reason (issue 17: files
// skipped inside tars and layout folders were not listed): the other
// members of a tar's WAL folder one by one, a base backup's other files as
// a count, a tar holding no WAL, folders beside WAL files, pgBackRest's
// archive ids of an earlier cluster, Barman's incoming and streaming
// folders, files named on the command line that are not WAL.
func TestLsListsSkippedFiles(t *testing.T) {
	sample := filepath.Join(testwal.Root(t), "fixtures", "sample")
	segs := map[string]string{}
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(sample, n))
		if err != nil {
			t.Fatal(err)
		}
		segs[n] = string(b)
	}
	backupFile := "START WAL LOCATION: 0/600028 (file 000000010000000000000006)\n"

	// A base backup's tar: data files, pg_wal/ with a README, a backup
	// history file and archive_status/.
	base := t.TempDir()
	files := map[string]string{
		filepath.Join(base, "PG_VERSION"):                                                "15\n",
		filepath.Join(base, "backup_label"):                                              backupFile,
		filepath.Join(base, "base", "1", "1259"):                                         strings.Repeat("x", 8192),
		filepath.Join(base, "pg_wal", "README"):                                          "notes\n",
		filepath.Join(base, "pg_wal", "000000010000000000000006.00000028.backup"):        backupFile,
		filepath.Join(base, "pg_wal", "archive_status", "000000010000000000000006.done"): "",
	}
	for n, b := range segs {
		files[filepath.Join(base, "pg_wal", n)] = b
	}
	writeFiles(t, files)
	// pg_basebackup -Ft's pg_wal.tar: bare segments, beside them a README
	// and a backup history file.
	bare := t.TempDir()
	files = map[string]string{
		filepath.Join(bare, "README"):                                   "notes\n",
		filepath.Join(bare, "000000010000000000000006.00000028.backup"): backupFile,
	}
	for n, b := range segs {
		files[filepath.Join(bare, n)] = b
	}
	writeFiles(t, files)
	docs := t.TempDir()
	writeFiles(t, map[string]string{filepath.Join(docs, "notes.txt"): "no WAL here\n"})

	out := t.TempDir()
	realTar(t, base, filepath.Join(out, "base.tar"))
	realTar(t, bare, filepath.Join(out, "pg_wal.tar"))
	// A directory of tars: one holds no WAL; a folder of older WAL beside.
	dirOfTars := t.TempDir()
	realTar(t, bare, filepath.Join(dirOfTars, "pg_wal.tar"))
	realTar(t, docs, filepath.Join(dirOfTars, "docs.tar"))
	writeFiles(t, map[string]string{filepath.Join(dirOfTars, "2024", "000000010000000000000001"): segs["000000010000000000000006"]})
	// pgBackRest with an earlier cluster's archive id and a stray folder;
	// Barman with WAL not archived yet and a stray folder.
	pgb := t.TempDir()
	archivetest.PgBackRest(t, sample, pgb, "main", "15")
	stanza := filepath.Join(pgb, "archive", "main")
	writeFiles(t, map[string]string{
		filepath.Join(stanza, "14-2", "0000000100000000", "000000010000000000000001"): "old",
		filepath.Join(stanza, "15-1", "notes", "x"):                                   "x",
	})
	barman := t.TempDir()
	archivetest.Barman(t, sample, barman)
	writeFiles(t, map[string]string{
		filepath.Join(barman, "incoming", "000000010000000000000008"):          "",
		filepath.Join(barman, "streaming", "000000010000000000000008.partial"): "",
		filepath.Join(barman, "wals", "old", "000000010000000000000005"):       "",
	})

	for _, tc := range []struct {
		name string
		args []string
		want []string // not_read paths (relative to the first argument's folder) and reasons
	}{
		{"base.tar", []string{filepath.Join(out, "base.tar")}, []string{
			"base.tar: 4 other members outside its WAL folders (a base backup's files): not WAL",
			"base.tar:./pg_wal/000000010000000000000006.00000028.backup: a backup history file: not WAL (pitr --backup reads it)",
			"base.tar:./pg_wal/README: not a WAL file name",
		}},
		{"pg_wal.tar", []string{filepath.Join(out, "pg_wal.tar")}, []string{
			"pg_wal.tar:./000000010000000000000006.00000028.backup: a backup history file: not WAL (pitr --backup reads it)",
			"pg_wal.tar:./README: not a WAL file name",
		}},
		{"directory of tars", []string{dirOfTars}, []string{
			"2024: a folder: its files are not read (name it to read them)",
			"docs.tar: a tar file holding no WAL file (1 other members)",
			"pg_wal.tar:./000000010000000000000006.00000028.backup: a backup history file: not WAL (pitr --backup reads it)",
			"pg_wal.tar:./README: not a WAL file name",
		}},
		{"pgbackrest", []string{pgb}, []string{
			"archive/main/14-2: the WAL of an earlier cluster (stanza-upgrade): not read (name the folder to read it)",
			"archive/main/15-1/notes: a folder: its files are not read (name it to read them)",
		}},
		{"barman", []string{barman}, []string{
			"incoming: Barman's incoming folder: WAL archive_command delivered that barman has not archived yet; not read (name the folder to read it)",
			"streaming: Barman's streaming folder: WAL pg_receivewal received that barman has not archived yet; not read (name the folder to read it)",
			"wals/old: a folder: its files are not read (name it to read them)",
		}},
		{"files named", []string{filepath.Join(sample, "000000010000000000000006"), filepath.Join(sample, "README.md")}, []string{
			"README.md: not a WAL file name, nor a tar file",
		}},
	} {
		stdout, stderr, code := walscope(t, "", append([]string{"ls", "--format", "json"}, tc.args...)...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", tc.name, code, stderr)
			continue
		}
		var rep lsReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		root := tc.args[0]
		if st, err := os.Stat(root); err == nil && !st.IsDir() {
			root = filepath.Dir(root)
		}
		var got []string
		for _, n := range rep.NotRead {
			rel, _ := filepath.Rel(root, n.Path)
			got = append(got, rel+": "+n.Reason)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: not read\n got %q\nwant %q", tc.name, got, tc.want)
		}
		text, _, _ := walscope(t, "", append([]string{"ls"}, tc.args...)...)
		if !strings.Contains(text, "other files not read:") {
			t.Errorf("%s: text output lists no files not read:\n%s", tc.name, text)
		}
	}
}

// TestNothingFoundSaysWhy: where nothing at the path is WAL, the error every
// command gives names the files found there that were not read, with the
// reason (issue 17: a segment name that is a symbolic link to /dev/zero, or
// WAL one folder down, gave only "could not find any WAL file").
func TestNothingFoundSaysWhy(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "000000010000000000000006")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"ls", "stats", "verify", "dump", "whatif"} {
		stdout, stderr, code := walscope(t, "", c, dir)
		want := "walscope: error: could not find any WAL file in " + dir + "; not read: " +
			filepath.Join(dir, "000000010000000000000006") + " (not a regular file), " + filepath.Join(dir, "wal") + " (a folder: "
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, want) {
			t.Errorf("%s: exit %d, want %d with %q: %s%s", c, code, exitUsage, want, stdout, stderr)
		}
	}
}
