package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/daemon"
)

// runDaemon is the run command: the daemon serving with exporter-toolkit
// (TLS, basic auth and several addresses from the web flags) until SIGTERM
// or SIGINT.
func runDaemon(logger *slog.Logger, configFile string, webFlags *web.FlagConfig) int {
	d, err := daemon.New(daemon.Options{
		ConfigFile: configFile,
		Logger:     logger,
		Serve:      func(srv *http.Server) error { return web.ListenAndServe(srv, webFlags, logger) },
	})
	if err != nil {
		return fail(logger, "start", err)
	}
	if err := d.Run(context.Background()); err != nil {
		return fail(logger, "run", err)
	}
	return 0
}
