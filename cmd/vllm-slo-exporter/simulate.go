package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// startSimulator builds the demo workload's simulator (keeping the
// per-request truth only when asked) and serves it on addr with the wall
// clock; it returns the simulator, the listener's address and a function that
// stops the server.
// onDone, when set, sees every request end (the demo's span emitter).
func startSimulator(addr string, anyPort bool, seed uint64, keepTruth bool, onDone func(sim.Request)) (*sim.Sim, string, func(), error) {
	return startPresetWith(addr, anyPort, "demo", seed, keepTruth, onDone, leadIn)
}

// demoLead is how soon the demo's first overload comes: long enough for the
// windows to hold a healthy minute first, short enough that someone trying
// the demo sees a page without waiting.
const demoLead = 90 * time.Second

// leadIn moves the demo workload's first overload to demoLead after the
// start: its steady phase is split around the overload, so that the
// workload still overloads for sim.DemoOverload of every sim.DemoPeriod.
func leadIn(cfg *sim.Config) {
	for i := range cfg.Models {
		w := &cfg.Models[i].Workload
		if len(w.Phases) != 2 || w.Phases[0].Duration <= demoLead {
			continue
		}
		steady, overload := w.Phases[0], w.Phases[1]
		first, rest := steady, steady
		first.Duration, rest.Duration = demoLead, steady.Duration-demoLead
		w.Phases = []sim.Phase{first, overload, rest}
	}
}

// portTaken is an address that another process is listening on.
// listen listens on addr; when the port is taken and anyPort is set (the
// address is a default the user did not choose), it listens on a free port of
// the same host instead, so that a demo starts beside another one.
func listen(addr string, anyPort bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil || !anyPort || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		return nil, err
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// startPresetWith is startSimulator for any named workload
// (sim.PresetNames), with a hook on every request's end and a change to the
// workload (both optional).
func startPresetWith(addr string, anyPort bool, preset string, seed uint64, keepTruth bool, onDone func(sim.Request), shape func(*sim.Config)) (*sim.Sim, string, func(), error) {
	cfg, err := sim.Preset(preset, seed, time.Now())
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: %w", err)
	}
	if shape != nil {
		shape(&cfg)
	}
	cfg.DiscardTruth = !keepTruth
	cfg.OnDone = onDone
	s, err := sim.New(cfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: %w", err)
	}
	ln, err := listen(addr, anyPort)
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(time.Now), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
	return s, ln.Addr().String(), stop, nil
}

// presetFlag declares the simulate command's --preset flag.
func presetFlag(cmd *kingpin.CmdClause) *string {
	names := sim.PresetNames()
	return cmd.Flag("preset", "Simulated workload: "+strings.Join(names, ", ")+".").Default("demo").Enum(names...)
}

// simulateOptions are the simulate command's flags.
type simulateOptions struct {
	addr, truthFile, preset string
	seed                    uint64
	// otlpEndpoint, when set, receives one span per finished request, as
	// vLLM's --otlp-traces-endpoint sends them; otlpProtocol is "grpc" or
	// "http/protobuf".
	otlpEndpoint, otlpProtocol string
}

// runSimulate is the simulate command: a named workload (the demo by default)
// on its own, with the ground truth written at exit when asked for, and its
// spans sent to an OTLP endpoint when one is given.
func runSimulate(logger *slog.Logger, o simulateOptions) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return simulate(ctx, logger, o, nil)
}

// simulate serves the simulator until ctx ends; serving, when set, learns
// the address it listens on.
func simulate(ctx context.Context, logger *slog.Logger, o simulateOptions, serving func(addr string)) int {
	var onDone func(sim.Request)
	if o.otlpEndpoint != "" {
		spans, err := sim.NewSpanEmitter(context.Background(), sim.SpanOptions{Endpoint: o.otlpEndpoint, Protocol: sim.SpanProtocol(o.otlpProtocol)})
		if err != nil {
			return fail(logger, "simulate", err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = spans.Shutdown(ctx)
		}()
		onDone = spans.Hook
	}
	addr, truthFile, preset := o.addr, o.truthFile, o.preset
	s, bound, stop, err := startPresetWith(addr, false, preset, o.seed, truthFile != "", onDone, nil)
	if err != nil {
		return fail(logger, "simulate", err)
	}
	logger.Info("simulated vLLM serving", "metrics", "http://"+bound+"/metrics", "preset", preset, "model", sim.DemoModel, "otlp_endpoint", o.otlpEndpoint)
	if serving != nil {
		serving(bound)
	}
	<-ctx.Done()
	stop()
	if truthFile == "" {
		return 0
	}
	if err := writeTruth(s, truthFile); err != nil {
		return fail(logger, "write truth", err)
	}
	logger.Info("ground truth written", "file", truthFile)
	return 0
}

func writeTruth(s *sim.Sim, path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	s.AdvanceTo(time.Now())
	return s.WriteTruth(f)
}
