package days

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/capacity"
)

func TestExplore(t *testing.T) {
	t0 := time.Now()
	sw, err := TrueKnee(OneEngine, 5.2, 6.6, 0.1, []uint64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("knee", sw.Knee, sw.Attainment, time.Since(t0))
	k := sw.Knee
	for seed := uint64(1); seed <= 4; seed++ {
		d := Day{Name: "diurnal", Server: OneEngine, Length: 3 * time.Hour, Phases: Diurnal(0.3*k, 1.1*k, 3*time.Hour, 12)}
		res, err := Run(d, seed, capacity.DefaultConfig(SLO.Goal))
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range res.Hourly {
			fmt.Printf("h%d %s %+v base %.2f\n", i, e.Kind, e.Requests, res.Baselines[i].Requests)
		}
		fmt.Printf("final %s %+v cons %.2f opt %.2f base %.2f\n", res.Final.Kind, res.Final.Requests, res.Final.Conservative, res.Final.Optimistic, res.Baseline.Requests)
	}
}
