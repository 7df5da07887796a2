package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
)

// runFlags are the run command's flags.
type runFlags struct {
	configFile string
	web        *web.FlagConfig
	// enableLifecycle turns on POST /-/reload. Off by default, as in
	// Prometheus: reloading is an administrative act, and SIGHUP (systemctl
	// reload, kill -HUP) needs no open endpoint.
	enableLifecycle bool
	// probeAddress, when set, serves /-/healthy and /-/ready there without
	// the web configuration's TLS and basic auth, for probes that carry no
	// credentials (the kubelet's).
	probeAddress string
	// externalURL is the address people reach the console by, for the links
	// in alerts (as Prometheus's --web.external-url).
	externalURL string
}

// addRunFlags declares the run command's flags on cmd.
func addRunFlags(cmd *kingpin.CmdClause) *runFlags {
	f := &runFlags{}
	cmd.Flag("config.file", "Configuration file.").Default("config.yaml").StringVar(&f.configFile)
	f.web = kingpinflag.AddFlags(cmd, defaultListenAddress)
	cmd.Flag("web.enable-lifecycle", "Enable POST /-/reload (protected against cross-site requests). SIGHUP reloads either way.").Default("false").BoolVar(&f.enableLifecycle)
	cmd.Flag("web.external-url", "URL the console is reached by (behind a proxy, say), for the links from alerts to their SLO's page (generatorURL). Default: http://<hostname>:<port of the first listen address>/.").Default("").StringVar(&f.externalURL)
	cmd.Flag("web.probe-listen-address", "Also serve /-/healthy and /-/ready, and nothing else, on this address without TLS or authentication (for Kubernetes probes when --web.config.file sets basic auth). Empty: off.").Default("").StringVar(&f.probeAddress)
	return f
}

// runDaemon is the run command: the daemon serving with exporter-toolkit
// (TLS, basic auth and several addresses from the web flags) until SIGTERM
// or SIGINT.
func runDaemon(logger *slog.Logger, f *runFlags) int {
	opts := daemon.Options{
		ConfigFile:      f.configFile,
		Logger:          logger,
		Serve:           func(srv *http.Server) error { return web.ListenAndServe(srv, f.web, logger) },
		EnableLifecycle: f.enableLifecycle,
		ExternalURL:     externalURL(f.externalURL, *f.web.WebListenAddresses, os.Hostname),
	}
	if f.probeAddress != "" {
		opts.ServeProbes = func(srv *http.Server) error { return serveProbes(logger, f.probeAddress, srv) }
	}
	d, err := daemon.New(opts)
	if err != nil {
		return fail(logger, "start", err)
	}
	if err := d.Run(context.Background()); err != nil {
		return fail(logger, "run", err)
	}
	return 0
}

// externalURL is the console's address for alerts' links: the one given,
// else, as Prometheus derives it, http://<hostname>:<port>/ with the port of
// the first listen address (the host of that address when it names one).
func externalURL(given string, listen []string, hostname func() (string, error)) string {
	if given != "" {
		return given
	}
	if len(listen) == 0 {
		return ""
	}
	host, port, err := net.SplitHostPort(listen[0])
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if host, err = hostname(); err != nil {
			return ""
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// serveProbes serves srv in plain HTTP on address until it is shut down.
func serveProbes(logger *slog.Logger, address string, srv *http.Server) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("probe listener: %w", err)
	}
	logger.Info("listening for probes", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
