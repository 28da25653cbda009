package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/testwal"
)

// fixtureArchive extracts a fixture or corpus by name and returns its archive
// directory.
func fixtureArchive(t *testing.T, name string) string {
	t.Helper()
	for _, s := range testwal.Sets(t) {
		if s.Name == name {
			return filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	t.Fatalf("no fixture %s", name)
	return ""
}

// findChromium returns the Chromium binary, or "" if there is none.
func findChromium() string {
	if p := os.Getenv("WALSCOPE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the screenshots are kept: $WALSCOPE_ARTIFACTS, else
// the test's temporary directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("WALSCOPE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// chromium runs headless Chromium with args on the page and returns its
// stdout and stderr.
func chromium(t *testing.T, bin, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--hide-scrollbars"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errb.String())
	}
	return out.String(), errb.String()
}

var consoleLine = regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught).*$`)

// TestReportChromium renders the report of fixtures (one archive, and two
// side by side) and loads each in headless Chromium: the page must load
// without console errors, every chart must have drawn marks (counted in the
// DOM Chromium dumps, and by the page's own check), and the screenshot is
// kept as an artifact.
func TestReportChromium(t *testing.T) {
	bin := findChromium()
	if bin == "" && os.Getenv("CI") == "" {
		t.Log("chromium not found (and CI not set): checking the HTML only")
	}
	if bin == "" && os.Getenv("CI") != "" {
		t.Fatal("chromium not found, and CI is set: the browser test must run (apt-get install chromium)")
	}
	lz4 := fixtureArchive(t, "fixtures/pg15-replica-lz4")
	cases := []struct {
		name string
		args []string
	}{
		{"pg15-replica-lz4", []string{lz4}},
		{"compare", []string{"--compare", fixtureArchive(t, "fixtures/whatif/compression-off"), fixtureArchive(t, "fixtures/whatif/compression-lz4")}},
	}
	arts := artifactDir(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			page := filepath.Join(dir, "report.html")
			_, stderr, code := walscope(t, "", append([]string{"report", "--out", page}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("temporary files left in %s: %v", dir, ents)
			}
			raw, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			html := string(raw)
			// Self-contained: nothing fetched.
			noNS := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, "")
			for _, bad := range []string{"http://", "https://", "src=", "@import", "url(http", "<link"} {
				if strings.Contains(noNS, bad) {
					t.Errorf("the report refers to something outside it: %q", bad)
				}
			}
			charts := strings.Count(html, `<svg class="chart"`)
			want := 9 // over time, over LSN, cycles, rmgr bytes and counts, record type bytes and counts, relations, what-if
			if tc.name == "compare" {
				want *= 2
			}
			if charts < want {
				t.Errorf("%d charts, want at least %d", charts, want)
			}
			for _, section := range []string{"Settings the WAL records", "wal_level", "full_page_writes", "system identifier",
				"checkpoint sawtooth", "Checkpoint cycles", "distinct blocks imaged", "Resource managers", "Relations",
				"What if", "wal_compression", "Verification", "Timelines", "Problems"} {
				if !strings.Contains(html, section) {
					t.Errorf("the report lacks %q", section)
				}
			}
			if bin == "" {
				return
			}
			dom, logs := chromium(t, bin, page, "--dump-dom", "--window-size=1366,900")
			if m := consoleLine.FindAllString(logs, -1); len(m) > 0 {
				t.Errorf("console messages while loading the report:\n%s", strings.Join(m, "\n"))
			}
			if !strings.Contains(dom, `id="walscope-selfcheck"`) || !regexp.MustCompile(`>OK charts=\d+<`).MatchString(dom) {
				i := strings.Index(dom, "walscope-selfcheck")
				t.Errorf("the page's self-check did not pass: %.200s", dom[max(i, 0):])
			}
			parts := strings.Split(dom, `<svg class="chart"`)[1:]
			if len(parts) != charts {
				t.Errorf("the DOM holds %d charts, the file %d", len(parts), charts)
			}
			for i, p := range parts {
				p = p[:strings.Index(p, "</svg>")]
				id := regexp.MustCompile(`id="([^"]+)"`).FindStringSubmatch(p)
				if n := strings.Count(p, `class="mark"`); n == 0 {
					t.Errorf("chart %d (%v) drew no marks", i, id)
				}
			}
			shot := filepath.Join(arts, "report-"+tc.name+".png")
			_, logs = chromium(t, bin, page, "--screenshot="+shot, "--window-size=1366,3000")
			if m := consoleLine.FindAllString(logs, -1); len(m) > 0 {
				t.Errorf("console messages while taking the screenshot:\n%s", strings.Join(m, "\n"))
			}
			f, err := os.Open(shot)
			if err != nil {
				t.Fatalf("no screenshot: %v", err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
				t.Errorf("screenshot is %v", b)
			}
			t.Logf("screenshot: %s", shot)
		})
	}
}

// TestReportUsage: --out is required, --compare takes two inputs.
func TestReportUsage(t *testing.T) {
	if _, _, code := walscope(t, "", "report", "x"); code != exitUsage {
		t.Errorf("without --out: exit %d", code)
	}
	if _, _, code := walscope(t, "", "report", "--compare", "--out", filepath.Join(t.TempDir(), "r.html"), "a"); code != exitUsage {
		t.Errorf("--compare with one input: exit %d", code)
	}
}

// TestReportCatalog: --catalog names the relations of the report, and the
// verification section lists gaps.
func TestReportCatalog(t *testing.T) {
	dir := fixtureArchive(t, "fixtures/whatif/checkpoint-every-500")
	tmp := t.TempDir()
	cat := filepath.Join(tmp, "catalog.csv")
	os.WriteFile(cat, []byte("database,reltablespace,relfilenode,nspname,relname\n16384,0,16397,public,pgbench_<accounts>\n"), 0o644)
	page := filepath.Join(tmp, "r.html")
	if _, stderr, code := walscope(t, "", "report", "-q", "--catalog", cat, "--out", page, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, _ := os.ReadFile(page)
	html := string(raw)
	for _, want := range []string{"public.pgbench_&lt;accounts&gt; (1663/16384/16397)", "gaps (missing segments)", "no problems found", "2,464 images"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "<accounts>") {
		t.Error("relation name not escaped")
	}
}

// TestReportExitCode: the report is written whatever the WAL holds, and the
// exit code says, as verify's does, whether the WAL read has problems.
func TestReportExitCode(t *testing.T) {
	root := testwal.Root(t)
	for _, c := range []struct {
		name string
		want int
	}{{"crc-mismatch", exitProblem}, {"missing-segment", exitProblem}, {"clean-end", exitOK}, {"recycled-end", exitOK}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := testwal.UntarZstd(filepath.Join(root, "fixtures", "corrupt", c.name, "segments.tar.zst"), dir); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "r.html")
			_, stderr, code := walscope(t, "", "report", "--out", out, dir)
			if code != c.want {
				t.Errorf("exit %d, want %d: %s", code, c.want, stderr)
			}
			if st, err := os.Stat(out); err != nil || st.Size() < 10000 {
				t.Errorf("report not written: %v", err)
			}
			if c.want == exitProblem && !strings.Contains(stderr, "verification section") {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
}
