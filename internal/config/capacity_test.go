package config

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// TestCapacitySection reads the capacity section: defaults when absent, an
// explicit 0 that turns the alert off, and margins outside [0, 1) refused
// with the field named.
func TestCapacitySection(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       Capacity
		err        string
	}{
		{"absent", "", Capacity{HeadroomMargin: 0.2, HeadroomFor: model.Duration(15 * time.Minute)}, ""},
		{"explicit", "capacity:\n  headroom_margin: 0.3\n  headroom_for: 1h\n", Capacity{HeadroomMargin: 0.3, HeadroomFor: model.Duration(time.Hour)}, ""},
		{"off", "capacity:\n  headroom_margin: 0\n", Capacity{HeadroomFor: model.Duration(15 * time.Minute)}, ""},
		{"one", "capacity:\n  headroom_margin: 1\n", Capacity{}, "capacity.headroom_margin: 1 is outside [0, 1)"},
		{"negative", "capacity:\n  headroom_margin: -0.1\n", Capacity{}, "capacity.headroom_margin: -0.1 is outside [0, 1)"},
		{"unknown key", "capacity:\n  headroom: 0.2\n", Capacity{}, "headroom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(minimal+tc.yaml), "c.yml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Capacity != tc.want {
				t.Fatalf("capacity %+v, want %+v", c.Capacity, tc.want)
			}
		})
	}
}
