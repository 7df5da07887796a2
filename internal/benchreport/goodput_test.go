package benchreport

import (
	"strings"
	"testing"
)

// TestParseGoodput reads vLLM's --goodput syntax.
func TestParseGoodput(t *testing.T) {
	cases := []struct {
		in      []string
		want    string
		wantErr string
	}{
		{[]string{"ttft:500", "tpot:50"}, "ttft:500 tpot:50", ""},
		{[]string{"ttft:500 tpot:50,e2el:2000"}, "ttft:500 tpot:50 e2el:2000", ""},
		{[]string{"TTFT:1.5", "ttft:2"}, "ttft:2", ""},
		{nil, "", ""},
		{[]string{"ttft"}, "", "want KEY:VALUE"},
		{[]string{"queue:5"}, "", `unknown metric "queue"`},
		{[]string{"ttft:-1"}, "", "not a non-negative number"},
		{[]string{"ttft:NaN"}, "", "not a non-negative number"},
	}
	for _, c := range cases {
		got, err := ParseGoodput(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || objectivesText(got) != c.want {
			t.Errorf("%q: %q %v, want %q", c.in, objectivesText(got), err, c.want)
		}
	}
}
