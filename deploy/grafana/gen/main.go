// Command gen writes deploy/grafana/dashboard.json, the Grafana dashboard of
// vllm-slo-exporter's series, built with Grafana's Go SDK so that the JSON
// follows Grafana's current dashboard schema.
//
// Run it from the repository root after changing a panel:
//
//	go run ./deploy/grafana/gen -out deploy/grafana/dashboard.json
//
// The committed JSON must equal this program's output; a test checks it.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "write the dashboard JSON to this file instead of standard output")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

// run renders the dashboard and writes it to path, or to standard output
// when path is empty.
func run(path string) error {
	b, err := render()
	if err != nil {
		return err
	}
	if path == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write dashboard: %w", err)
	}
	return nil
}
