package days

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// Knees holds each server's true knee (req/s), by server name.
type Knees map[string]float64

// Grids are the rates each server's sweep measures (req/s): inputs chosen
// around where the knee lies, not results; TrueKnee reports a knee outside
// its grid as one of its ends (NaN or +Inf), which the tests refuse.
var Grids = map[string][3]float64{ // from, to, step
	OneEngine.Name:  {5.4, 6.6, 0.3},
	LongPrompt.Name: {3.6, 4.8, 0.3},
	TwoEngines.Name: {10.4, 12.8, 0.6},
	Cancelling.Name: {5.4, 7.0, 0.4},
}

// Suite returns the production days of the truth suite, each length long,
// their rates scaled to the servers' knees:
//
//   - diurnal: a raised-cosine day from 30% of the knee to a peak at 110%;
//   - low: the same shape peaking at 60% of the knee (the honest answer is
//     one-sided);
//   - burst: a day peaking at 85% with a 10-minute burst at 130% at its peak;
//   - mix shift: the first half on the demo's mix, the second on prompts
//     1.5 times as long, each half a diurnal day of its own mix's knee; the end
//     is judged against the long prompts' knee;
//   - two engines (random assignment) and 15% cancelled: diurnal days of
//     those servers.
func Suite(k Knees, length time.Duration) []Day {
	one, long := k[OneEngine.Name], k[LongPrompt.Name]
	half := length / 2
	shifted := Diurnal(0.3*long, 1.1*long, half, 8)
	for i := range shifted {
		shifted[i].Prompt = &LongPrompts
	}
	burst := Diurnal(0.3*one, 0.85*one, length, 12)
	burst = append(burst[:6:6], append([]sim.Phase{{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: 1.3 * one}}, burst[6:]...)...)
	return []Day{
		{Name: "diurnal, peak 110% of the knee", Server: OneEngine, Length: length, Phases: Diurnal(0.3*one, 1.1*one, length, 12)},
		{Name: "diurnal, peak 60% of the knee", Server: OneEngine, Length: length, Phases: Diurnal(0.2*one, 0.6*one, length, 12), LowLoad: true},
		{Name: "peak 85%, 10 min burst at 130%", Server: OneEngine, Length: length + 10*time.Minute, Phases: burst},
		{Name: "mix shift: prompts 1.5x as long", Server: OneEngine, Length: length, Phases: append(Diurnal(0.3*one, 1.1*one, half, 8), shifted...), KneeServer: &LongPrompt},
		{Name: "two engines, random assignment", Server: TwoEngines, Length: length, Phases: Diurnal(0.3*k[TwoEngines.Name], 1.1*k[TwoEngines.Name], length, 12)},
		{Name: "15% cancelled", Server: Cancelling, Length: length, Phases: Diurnal(0.3*k[Cancelling.Name], 1.1*k[Cancelling.Name], length, 12)},
	}
}

// Knee is the true knee the day's end is judged against.
func (d Day) Knee(k Knees) float64 {
	if d.KneeServer != nil {
		return k[d.KneeServer.Name]
	}
	return k[d.Server.Name]
}
