package pgtest_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
)

// Shq's quoting survives a real shell, quotes inside included.
func TestShq(t *testing.T) {
	for _, s := range []string{"", "a b", "it's", `"$HOME" \n`, "'''"} {
		out, err := exec.Command("bash", "-c", "printf %s "+pgtest.Shq(s)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("Shq(%q) through bash: %q", s, out)
		}
	}
}

func TestLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{{"", nil}, {"\n", nil}, {"a", []string{"a"}}, {"a\nb\n", []string{"a", "b"}}, {"a\n\nb", []string{"a", "", "b"}}} {
		if got := pgtest.Lines(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A server found by Bin is the major asked for.
func TestBin(t *testing.T) {
	for _, major := range []int{13, 15, 17, 18} {
		bin, why := pgtest.Bin(major)
		if bin == "" {
			t.Logf("%d: %s", major, why)
			continue
		}
		out, err := exec.Command(bin+"/postgres", "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("PostgreSQL) %d.", major); !strings.Contains(string(out), want) {
			t.Errorf("Bin(%d) = %s: %s", major, bin, out)
		}
	}
}

func ExampleShq() {
	fmt.Println(pgtest.Shq("it's"))
	// Output: 'it'\''s'
}
