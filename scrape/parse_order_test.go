package scrape

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// leValue finds a line's le value, to interleave the children of a family.
var leValue = regexp.MustCompile(`le="([^"]*)"`)

// interleave reorders each run of sample lines so that the buckets of one
// child are no longer adjacent (sorted by le value first), which defeats
// every shortcut that relies on a child's lines being consecutive.
func interleave(body string) string {
	lines := strings.Split(body, "\n")
	sortKey := func(l string) string {
		if m := leValue.FindStringSubmatch(l); m != nil {
			return m[1] + "|" + l
		}
		return "|" + l
	}
	for i := 0; i < len(lines); {
		if strings.HasPrefix(lines[i], "#") || lines[i] == "" {
			i++
			continue
		}
		j := i
		for j < len(lines) && lines[j] != "" && !strings.HasPrefix(lines[j], "#") {
			j++
		}
		slices.SortStableFunc(lines[i:j], func(a, b string) int { return strings.Compare(sortKey(a), sortKey(b)) })
		i = j
	}
	return strings.Join(lines, "\n")
}

// TestParseLineOrderIndependent checks that the snapshot of every text-format
// golden exposition is the same whatever the order of its sample lines:
// children's buckets adjacent (the usual case), interleaved, or reversed.
func TestParseLineOrderIndependent(t *testing.T) {
	for _, tc := range expositions {
		if tc.contentType == ctOM {
			continue // OpenMetrics fixes the order of a family's samples
		}
		t.Run(tc.file, func(t *testing.T) {
			body := string(readTestdata(t, tc.file))
			want := render(mustParse(t, []byte(body), tc.contentType))
			inter := interleave(body)
			if inter == body {
				t.Fatal("interleave changed nothing: the test would not exercise anything")
			}
			if got := render(mustParse(t, []byte(inter), tc.contentType)); got != want {
				t.Errorf("interleaved lines give\n%s\nwant\n%s", got, want)
			}
			lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
			slices.Reverse(lines)
			if got := render(mustParse(t, []byte(strings.Join(lines, "\n")+"\n"), tc.contentType)); got != want {
				t.Errorf("reversed lines give\n%s\nwant\n%s", got, want)
			}
		})
	}
}
