package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../dashboard.json from the generator")

// TestCommittedDashboardIsGenerated fails when deploy/grafana/dashboard.json
// was edited by hand or the generator changed without regenerating it.
func TestCommittedDashboardIsGenerated(t *testing.T) {
	got, err := render()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "dashboard.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generator's output; run: go run ./deploy/grafana/gen -out deploy/grafana/dashboard.json", path)
	}
}

// TestRenderIsDeterministic guards the comparison above: map iteration or
// anything else unstable would make the committed file flap.
func TestRenderIsDeterministic(t *testing.T) {
	a, err := render()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := render()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two renders differ")
		}
	}
}
