package days

import (
	"flag"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

var update = flag.Bool("update", false, "recompute testdata/knees.json (six seeds per rate; about a minute)")

const kneesFile = "testdata/knees.json"

// knees returns the true knees, recomputed first with -update.
func knees(t *testing.T) Knees {
	t.Helper()
	if *update {
		k, _, err := SweepAll(KneeSeeds)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteKnees(kneesFile, k); err != nil {
			t.Fatal(err)
		}
	}
	k, err := ReadKnees(kneesFile)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKneesFileHolds re-sweeps the one-engine server over two of the six
// seeds behind testdata/knees.json: the knee of two seeds must lie within
// the spread that pairs of seeds show (4%) of the six seeds' knee, so the
// file describes the simulator as it is.
func TestKneesFileHolds(t *testing.T) {
	k := knees(t)
	// The grid's three middle rates: the crossing lies between them, and
	// the outer two only cost time.
	g := Grids[OneEngine.Name]
	sw, err := TrueKnee(OneEngine, g[0]+g[2], g[1]-g[2], g[2], KneeSeeds[:2])
	if err != nil {
		t.Fatal(err)
	}
	if want := k[OneEngine.Name]; !(math.Abs(sw.Knee-want) <= 0.04*want) {
		t.Fatalf("one engine: knee over seeds %v is %.3f req/s, the file says %.3f (attainment %v)", KneeSeeds[:2], sw.Knee, want, sw.Attainment)
	}
}

// testDay is the simulated length of a day in the suite: two hours whose
// peak passes the knee for about twenty minutes (bench/cmd/capacity runs
// longer days and more seeds).
const testDay = 2 * time.Hour

// testSeeds are the seeds each day of the suite runs with.
var testSeeds = []uint64{1, 2}

// TestCapacityAgainstTruth replays every day of the suite with each seed
// through the pipeline and judges the published capacity against the
// server's true knee: the knee must lie inside the prediction interval in
// at least 90% of the (day, seed) cases, on the low-load day the answer
// must be one-sided and its lower bound never above the knee, every other
// day must publish a capacity, the mix-shift day must say it started over,
// and every bounded answer must be nearer the knee than the mean-based
// baseline's.
func TestCapacityAgainstTruth(t *testing.T) {
	k := knees(t)
	var mu sync.Mutex
	var scores []Score
	t.Run("days", func(t *testing.T) {
		for _, d := range Suite(k, testDay) {
			for _, seed := range testSeeds {
				t.Run(d.Name, func(t *testing.T) {
					t.Parallel()
					r, err := Run(d, seed, capacity.DefaultConfig(SLO.Goal))
					if err != nil {
						t.Fatal(err)
					}
					s := ScoreOf(r, k)
					if d.LowLoad && (s.Kind != string(capacity.LowerOnly) || !(s.Lower <= s.Knee) || !math.IsInf(s.Upper, 1)) {
						t.Errorf("seed %d: low-load day published %s [%.3f, %.3f], want lower_only with its lower bound at most the knee %.3f", seed, s.Kind, s.Lower, s.Upper, s.Knee)
					}
					if !d.LowLoad && s.Kind == string(capacity.Unknown) {
						t.Errorf("seed %d: a day whose load passed the knee published no capacity (%q)", seed, r.Final.Reason)
					}
					if strings.HasPrefix(d.Name, "mix shift") && !strings.Contains(r.Final.Reason, "mix changed") {
						t.Errorf("seed %d: the mix shifted and the estimate does not say so (reason %q)", seed, r.Final.Reason)
					}
					mu.Lock()
					scores = append(scores, s)
					mu.Unlock()
				})
			}
		}
	})
	var table strings.Builder
	Table(&table, scores)
	t.Logf("true knee against the published interval, %v days, seeds %v:\n%s", testDay, testSeeds, table.String())
	inside := 0
	for _, s := range scores {
		if s.Inside {
			inside++
		}
	}
	for _, s := range scores {
		if !math.IsNaN(s.Error) && !(s.Error < s.BaselineError) {
			t.Errorf("%s, seed %d: our error %.3f is not below the mean-based baseline's %.3f", s.Day, s.Seed, s.Error, s.BaselineError)
		}
	}
	if n := len(scores); n == 0 || float64(inside) < 0.9*float64(n) {
		t.Fatalf("the true knee lay inside the published interval in %d of %d cases, want at least 90%%", inside, n)
	}
}
