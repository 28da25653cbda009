package main

// The documentation's tests: README.md is a landing page of at most 250
// lines, every command has its page in docs/commands/ naming every flag its
// --help prints, every example command of the docs runs on the committed
// fixtures with the exit code written next to it, and every link between
// the pages resolves. docs/README.md documents the conventions checked here.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// readmeMaxLines is issue 28's bound: what a newcomer reads in two minutes.
const readmeMaxLines = 250

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the package: %v", err)
	}
	return root
}

// docFiles returns README.md and every Markdown file under docs/, relative
// to the root, in a stable order.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move reference text into docs/", n, readmeMaxLines)
	}
}

// helpFlags returns the flags (long and short forms, --help and -h left
// out) that `walscope <command> --help` lists under OPTIONS.
func helpFlags(t *testing.T, command string) []string {
	t.Helper()
	out, stderr, code := walscope(t, "", command, "--help")
	if code != 0 {
		t.Fatalf("%s --help: exit %d: %s", command, code, stderr)
	}
	_, opts, ok := strings.Cut(out, "\nOPTIONS:\n")
	if !ok {
		t.Fatalf("%s --help prints no OPTIONS:\n%s", command, out)
	}
	flagName := regexp.MustCompile(`^--?[A-Za-z0-9][A-Za-z0-9-]*`)
	var flags []string
	for _, line := range strings.Split(opts, "\n") {
		spec := strings.TrimSpace(line)
		if !strings.HasPrefix(spec, "-") {
			continue
		}
		// The flag's forms end where its usage begins, after two spaces.
		if i := strings.Index(spec, "  "); i >= 0 {
			spec = spec[:i]
		}
		for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ' ' || r == ',' || r == '[' || r == ']' }) {
			name := flagName.FindString(f)
			if name == "" || name != f || name == "--help" || name == "-h" {
				continue
			}
			if !containsString(flags, name) {
				flags = append(flags, name)
			}
		}
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help: no flags found in:\n%s", command, opts)
	}
	return flags
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mentionsFlag reports whether text names flag as a word of its own: `-s`
// is not found in `--start` nor in `-s3`.
func mentionsFlag(text, flag string) bool {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(flag) + `($|[^A-Za-z0-9-])`)
	return re.MatchString(text)
}

// TestCommandPages: every command has docs/commands/<command>.md, which
// names every flag the command's --help prints; every page there is a
// command's (or the index, README.md).
func TestCommandPages(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, "docs", "commands")
	for _, c := range commands {
		page := filepath.Join(dir, c.name+".md")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("command %s has no page: %v", c.name, err)
			continue
		}
		var missing []string
		for _, f := range helpFlags(t, c.name) {
			if !mentionsFlag(string(b), f) {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			t.Errorf("docs/commands/%s.md does not name these flags of `walscope %s --help`: %s", c.name, c.name, strings.Join(missing, " "))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || name == "README" {
			continue
		}
		if !isCommand(name) {
			t.Errorf("docs/commands/%s is the page of no command (walscope --help does not list %s)", e.Name(), name)
		}
	}
}

func TestMentionsFlag(t *testing.T) {
	for _, tc := range []struct {
		text, flag string
		want       bool
	}{
		{"`-s/--start`", "-s", true},
		{"`-s/--start`", "--start", true},
		{"--start-lsn", "--start", false},
		{"--start", "-s", false},
		{"`-s3`", "-s", false},
		{"(-j N)", "-j", true},
		{"--by=record", "--by", true},
		{"", "-n", false},
	} {
		if got := mentionsFlag(tc.text, tc.flag); got != tc.want {
			t.Errorf("mentionsFlag(%q, %q) = %v", tc.text, tc.flag, got)
		}
	}
}

// example is one command of a ```sh block of the docs.
type example struct {
	file   string // relative to the root
	line   int    // where the command begins, 1-based
	block  int    // which sh block of the file
	args   []string
	exit   int      // the exit code written next to it, 0 if none
	needs  string   // what it needs beyond the fixtures: skipped when set
	unpack []string // fixtures to unpack into the block's directory first
}

func (e example) String() string {
	return fmt.Sprintf("%s:%d: walscope %s", e.file, e.line, strings.Join(e.args, " "))
}

var (
	needsLine  = regexp.MustCompile(`^#\s*needs:\s*(.+)$`)
	unpackLine = regexp.MustCompile(`^#\s*unpack:\s*(\S+)$`)
	exitNote   = regexp.MustCompile(`^exit\s+([0-9]+)\b`)
)

// docExamples returns the walscope commands of the ```sh blocks of the
// Markdown text md. A line (with its `\` continuations) runs each of its
// `&&`-joined commands that starts with `walscope` or `./walscope`, up to
// a `|` (the rest of a pipeline is not run); a trailing `# exit N` is the
// exit code expected; a line `# needs: WHAT` marks the next command as
// needing something the fixtures do not give (an object store, a
// backup tool's repository), and skips it; a line `# unpack: FILE.tar.zst`
// unpacks a committed fixture into the block's directory before its
// commands run.
func docExamples(file, md string) ([]example, error) {
	var out []example
	var inSh bool
	var block int
	var pending string // a continued line
	var pendingLine int
	var needs string
	var unpack []string
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inSh {
				if pending != "" {
					return nil, fmt.Errorf("%s:%d: a sh block ends inside a continued line", file, pendingLine)
				}
				inSh = false
			} else if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "sh" {
				inSh, needs, unpack = true, "", nil
				block++
			}
			continue
		}
		if !inSh {
			continue
		}
		if pending == "" {
			pendingLine = n
			if m := needsLine.FindStringSubmatch(trimmed); m != nil {
				needs = m[1]
				continue
			}
			if m := unpackLine.FindStringSubmatch(trimmed); m != nil {
				unpack = append(unpack, m[1])
				continue
			}
		}
		if c, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending += c + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		words, comment, err := shellWords(full)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, pendingLine, err)
		}
		exit := 0
		if m := exitNote.FindStringSubmatch(strings.TrimSpace(comment)); m != nil {
			exit, _ = strconv.Atoi(m[1])
		}
		found := false
		for _, cmd := range splitCommands(words) {
			if len(cmd) == 0 || (cmd[0] != "walscope" && cmd[0] != "./walscope") {
				continue
			}
			found = true
			out = append(out, example{file: file, line: pendingLine, block: block, args: cmd[1:], exit: exit, needs: needs, unpack: slices.Clone(unpack)})
		}
		if found {
			needs = ""
		}
	}
	return out, sc.Err()
}

// splitCommands cuts a line's words at `&&` and drops what follows a `|`
// in each command.
func splitCommands(words []string) [][]string {
	var cmds [][]string
	var cur []string
	piped := false
	for _, w := range words {
		switch w {
		case "&&":
			cmds, cur, piped = append(cmds, cur), nil, false
		case "|":
			piped = true
		default:
			if !piped {
				cur = append(cur, w)
			}
		}
	}
	return append(cmds, cur)
}

// shellWords splits a line as sh does for the forms the docs use: words
// separated by blanks, single and double quotes, backslash escapes, `&&`
// and `|` as words of their own, and a `#` that begins a word starting the
// comment, which is returned.
func shellWords(line string) (words []string, comment string, err error) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return words, line[i+1:], nil
		case c == '&' && i+1 < len(line) && line[i+1] == '&':
			flush()
			words = append(words, "&&")
			i++
		case c == '|':
			flush()
			words = append(words, "|")
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated single quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, "", fmt.Errorf("unterminated double quote in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '$' || c == '`' || c == '>' || c == '<' || c == ';':
			return nil, "", fmt.Errorf("%q: the docs test runs no shell: %q is not supported in an example", line, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, "", nil
}

func TestDocExamplesParse(t *testing.T) {
	md := "text\n```sh\n" +
		"go build -o walscope ./cmd/walscope && ./walscope dump fixtures/sample\n" +
		"walscope pitr --relation orders \\\n    --event drop x.tar.zst   # exit 1\n" +
		"# needs: s3\n" +
		"walscope ls s3://b/p\n" +
		"# unpack: fixtures/x.tar.zst\n" +
		"walscope stats 'a b' \"c\\\"d\" | head -3\n" +
		"```\n```\nwalscope not-sh\n```\n"
	got, err := docExamples("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"x.md:3: walscope dump fixtures/sample exit 0 needs  unpack []",
		"x.md:4: walscope pitr --relation orders --event drop x.tar.zst exit 1 needs  unpack []",
		"x.md:7: walscope ls s3://b/p exit 0 needs s3 unpack []",
		"x.md:9: walscope stats a b c\"d exit 0 needs  unpack [fixtures/x.tar.zst]",
	}
	var have []string
	for _, e := range got {
		have = append(have, fmt.Sprintf("%v exit %d needs %s unpack %v", e, e.exit, e.needs, e.unpack))
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("examples:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	if _, err := docExamples("y.md", "```sh\nwalscope dump $X\n```\n"); err == nil {
		t.Errorf("an example with a shell expansion was accepted")
	}
}

// TestDocExamples runs every example command of README.md and docs/ in a
// directory of its own per sh block, in which fixtures/ is the
// repository's, and checks its exit code.
func TestDocExamples(t *testing.T) {
	root := repoRoot(t)
	var all []example
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := docExamples(f, string(b))
		if err != nil {
			t.Error(err)
			continue
		}
		all = append(all, ex...)
	}
	if len(all) < 20 {
		t.Fatalf("only %d example commands found in the docs", len(all))
	}
	dirs := map[string]string{}   // file and block -> its working directory
	unpacked := map[string]bool{} // directory and fixture -> unpacked
	ran, skipped := 0, 0
	for _, e := range all {
		if e.needs != "" {
			skipped++
			t.Logf("%v: skipped, needs %s", e, e.needs)
			continue
		}
		key := fmt.Sprintf("%s#%d", e.file, e.block)
		dir, ok := dirs[key]
		if !ok {
			dir = t.TempDir()
			if err := os.Symlink(filepath.Join(root, "fixtures"), filepath.Join(dir, "fixtures")); err != nil {
				t.Fatal(err)
			}
			dirs[key] = dir
		}
		for _, u := range e.unpack {
			if unpacked[dir+"\x00"+u] {
				continue
			}
			if err := testwal.UntarZstd(filepath.Join(root, filepath.FromSlash(u)), dir); err != nil {
				t.Fatalf("%v: # unpack: %s: %v", e, u, err)
			}
			unpacked[dir+"\x00"+u] = true
		}
		stdout, stderr, code := walscope(t, dir, e.args...)
		ran++
		if code != e.exit {
			t.Errorf("%v: exit %d, the docs say %d\nstderr: %s\nstdout (end): %s", e, code, e.exit, lastLines(stderr, 5), lastLines(stdout, 5))
		}
	}
	t.Logf("%d example commands run, %d skipped (# needs:)", ran, skipped)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var (
	mdLink    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// anchors returns the GitHub anchors of the headings of Markdown text md:
// lower case, punctuation but '-' and '_' dropped, blanks as '-', and
// repeats numbered -1, -2, ...
func anchors(md string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if inCode || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			set[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

func TestAnchors(t *testing.T) {
	got := anchors("# walscope\n## Get the rows back (coming)\n```sh\n# not a heading\n```\n## `stats --by`: relation, time\n## Speed\n## Speed\n")
	for _, a := range []string{"walscope", "get-the-rows-back-coming", "stats---by-relation-time", "speed", "speed-1"} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block taken as a heading")
	}
}

// TestDocLinks: every relative link of README.md and docs/ names a file
// that exists, and an anchor into a Markdown file names one of its
// headings.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		inCode := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				continue
			}
			// Code spans hold examples of syntax, not links.
			line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				file := filepath.Join(root, f)
				if path != "" {
					file = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: link %s: %v", f, i+1, target, err)
					continue
				}
				if anchor == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				tb, err := os.ReadFile(file)
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", f, i+1, target, err)
					continue
				}
				if !anchors(string(tb))[anchor] {
					t.Errorf("%s:%d: link %s: no heading with anchor #%s in %s", f, i+1, target, anchor, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("no relative links found in the docs")
	}
}

// TestDatasetsQueriesMatchReadme: internal/duckdbtest runs the SQL of
// docs/datasets.md's Querying section; the README's Export section prints
// some of them, which must not drift from the tested ones.
func TestDatasetsQueriesMatchReadme(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	datasets, err := os.ReadFile(filepath.Join(root, "docs", "datasets.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Export\n")
	if !ok {
		t.Fatalf("README.md has no Export section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	blocks := strings.Split(sec, "```sql\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("README's Export section has %d sql blocks (a view and a query, at least)", len(blocks))
	}
	for _, b := range blocks {
		b = b[:strings.Index(b, "```")]
		if !strings.Contains(string(datasets), "```sql\n"+b+"```") {
			first, _, _ := strings.Cut(b, "\n")
			t.Errorf("docs/datasets.md does not print README's query %q as README does", first)
		}
	}
}
