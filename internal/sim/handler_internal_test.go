package sim

import "testing"

// TestAcceptsGzip checks which Accept-Encoding headers allow gzip. The
// helper is unexported, so the test stays in package sim.
func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                         false,
		"gzip":                     true,
		"identity":                 false,
		"deflate, GZIP;q=0.5":      true,
		"gzip;q=0":                 false,
		"br, gzip; q=0.0, deflate": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
