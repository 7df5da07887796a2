package daemon

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

// safeConfig owns the running configuration. Readers get the configuration
// in force; a reload replaces it only with a file that loads, validates and
// that the daemon accepts, so a bad file never replaces a good one. Two
// gauges tell the operator how the last reload went.
type safeConfig struct {
	file string

	mu  sync.RWMutex
	cfg *config.Config

	lastReloadOK      prometheus.Gauge
	lastReloadSuccess prometheus.Gauge
}

// newSafeConfig loads file and registers the reload gauges with reg.
func newSafeConfig(file string, reg prometheus.Registerer) (*safeConfig, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("load configuration: %w", err)
	}
	s := &safeConfig{
		file: file,
		cfg:  cfg,
		lastReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: exporter.Namespace + "_exporter_config_last_reload_successful",
			Help: "1 if the last configuration reload succeeded.",
		}),
		lastReloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: exporter.Namespace + "_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Time of the last successful configuration reload.",
		}),
	}
	reg.MustRegister(s.lastReloadOK, s.lastReloadSuccess)
	s.lastReloadOK.Set(1)
	s.lastReloadSuccess.SetToCurrentTime()
	return s, nil
}

// get returns the configuration in force; callers must not change it.
func (s *safeConfig) get() *config.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cfg
}

// reload reads the file again. The new configuration is swapped in only
// when it loads and accept(running, next) returns nil; it returns the
// configurations before and after. The gauges record the outcome.
func (s *safeConfig) reload(accept func(running, next *config.Config) error) (running, next *config.Config, err error) {
	running = s.get()
	next, err = config.Load(s.file)
	if err == nil {
		err = accept(running, next)
	}
	if err != nil {
		s.lastReloadOK.Set(0)
		return running, nil, err
	}
	s.mu.Lock()
	s.cfg = next
	s.mu.Unlock()
	s.lastReloadOK.Set(1)
	s.lastReloadSuccess.SetToCurrentTime()
	return running, next, nil
}
