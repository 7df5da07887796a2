package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/rules"
)

// printRules is the rules command.
func printRules(out io.Writer, logger *slog.Logger, file string) int {
	cfg, err := config.Load(file)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	rf, err := rules.Generate(cfg)
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

// checkConfigFile is the check-config command.
func checkConfigFile(stdout, stderr io.Writer, file string) int {
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s: OK (%d targets, %d SLOs)\n", file, len(cfg.Targets), len(cfg.SLOs))
	return 0
}
