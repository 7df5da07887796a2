package bench

import (
	"fmt"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// Epoch is the virtual start time of every fixture, so that runs are
// reproducible.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Shape is the size of a simulated vLLM server: Models models, each on
// Engines data-parallel engines, served in Style.
type Shape struct {
	Models, Engines int
	Style           sim.Style
}

// Realistic is one model on two engines, single-process text: what a typical
// vLLM V1 deployment serves.
var Realistic = Shape{Models: 1, Engines: 2}

// Large is four models on eight engines each.
var Large = Shape{Models: 4, Engines: 8}

// String names the shape for tables ("1m×2e").
func (s Shape) String() string {
	return fmt.Sprintf("%dm×%de", s.Models, s.Engines)
}

// SimConfig is the simulator configuration of a shape: every model runs the
// demo's steady workload and engine cost model, with its own name.
func (s Shape) SimConfig(seed uint64) sim.Config {
	base := sim.DemoConfig(seed, Epoch)
	mc := base.Models[0]
	mc.Engines = s.Engines
	mc.Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: sim.DemoRate}}
	mc.Workload.Repeat = false
	base.Models = nil
	for i := range s.Models {
		m := mc
		m.Name = fmt.Sprintf("org/model-%d", i)
		base.Models = append(base.Models, m)
	}
	base.Style = s.Style
	base.DiscardTruth = true
	base.DiscardTokenTimes = true
	return base
}

// Stream is a simulated server scraped on a virtual clock: each Next advances
// it by the interval and renders its /metrics, so successive bodies carry
// growing counts as a real server's would.
type Stream struct {
	sim      *sim.Sim
	now      time.Time
	interval time.Duration
}

// NewStream starts a simulated server of shape s and runs it for warm of
// virtual time so that its histograms hold realistic counts.
func NewStream(s Shape, seed uint64, interval, warm time.Duration) (*Stream, error) {
	sm, err := sim.New(s.SimConfig(seed))
	if err != nil {
		return nil, fmt.Errorf("shape %s: %w", s, err)
	}
	st := &Stream{sim: sm, now: Epoch, interval: interval}
	st.advance(warm)
	return st, nil
}

func (st *Stream) advance(d time.Duration) {
	st.now = st.now.Add(d)
	st.sim.AdvanceTo(st.now)
}

// Next advances the server by one interval and returns its exposition, the
// Content-Type it is served with, and the scrape time.
func (st *Stream) Next() (body []byte, contentType string, at time.Time) {
	st.advance(st.interval)
	body, contentType = st.sim.Exposition()
	return body, contentType, st.now
}

// Body returns one exposition of shape s after warm of simulated load.
func Body(s Shape, warm time.Duration) ([]byte, string, error) {
	st, err := NewStream(s, 1, time.Second, warm)
	if err != nil {
		return nil, "", err
	}
	body, ct, _ := st.Next()
	return body, ct, nil
}
