package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// printRules is the rules command; a positive queryOffset is written on
// every group (rules.Options.QueryOffset).
func printRules(out io.Writer, logger *slog.Logger, file string, queryOffset time.Duration) int {
	cfg, err := config.Load(file)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	if queryOffset < 0 {
		return fail(logger, "generate rules", fmt.Errorf("--query-offset %v is negative", queryOffset))
	}
	opts := rules.DefaultOptions()
	opts.QueryOffset = queryOffset
	rf, err := opts.Generate(cfg)
	if err != nil {
		return fail(logger, "generate rules", err)
	}
	b, err := rf.YAML()
	if err != nil {
		return fail(logger, "generate rules", err)
	}
	if _, err := out.Write(b); err != nil {
		return fail(logger, "write rules", err)
	}
	return 0
}

// checkConfigFile is the check-config command. With probe or a recording it
// also explains each objective on the servers (explainObjectives); an
// objective no server can measure is an error (exit 1), as is a target
// that cannot be read.
func checkConfigFile(stdout, stderr io.Writer, file string, probe bool, recordingPath string) int {
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s: OK (%d targets, %d SLOs)\n", file, len(cfg.Targets), len(cfg.SLOs))
	if !probe && recordingPath == "" {
		return 0
	}
	snaps := serverSnapshots(cfg, probe, recordingPath, stderr)
	unknown := explainObjectives(stdout, cfg, snaps)
	if unknown > 0 || (probe && len(snaps) < len(cfg.Targets)) || len(snaps) == 0 {
		return 1
	}
	return 0
}
