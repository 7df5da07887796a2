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

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// startSimulator builds the demo workload's simulator (keeping the
// per-request truth only when asked) and serves it on addr with the wall
// clock; it returns the simulator, the listener's address and a function that
// stops the server.
func startSimulator(addr string, seed uint64, keepTruth bool) (*sim.Sim, string, func(), error) {
	return startPreset(addr, "demo", seed, keepTruth)
}

// startPreset is startSimulator for any named workload (sim.PresetNames).
func startPreset(addr, preset string, seed uint64, keepTruth bool) (*sim.Sim, string, func(), error) {
	cfg, err := sim.Preset(preset, seed, time.Now())
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: %w", err)
	}
	cfg.DiscardTruth = !keepTruth
	s, err := sim.New(cfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("simulator: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
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

// runSimulate is the simulate command: a named workload (the demo by default)
// on its own, with the ground truth written at exit when asked for.
func runSimulate(logger *slog.Logger, addr, truthFile, preset string, seed uint64) int {
	s, bound, stop, err := startPreset(addr, preset, seed, truthFile != "")
	if err != nil {
		return fail(logger, "simulate", err)
	}
	logger.Info("simulated vLLM serving", "metrics", "http://"+bound+"/metrics", "preset", preset, "model", sim.DemoModel)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
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
