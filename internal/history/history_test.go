package history

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

func TestAppendRejects(t *testing.T) {
	good := sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 1}
	cases := []struct {
		name string
		snap *scrape.Snapshot
		want string
	}{
		{"equal time", snap(at(30), "m", good), "not after the previous scrape"},
		{"earlier time", snap(at(10), "m", good), "clock stepped back"},
		{"nil snapshot", nil, "nil snapshot"},
		{"zero time", snap(time.Time{}, "m", good), "outside 1970..2262"},
		{"invalid histogram", snap(at(60), "m", sample{ttft: hist([]float64{1, 0.5, inf}, 1, 1, 1, 1)}), `model "m": histogram ttft: invalid`},
		{"negative count", snap(at(60), "m", sample{ttft: hist(edges3, 1, 1, -1, 1)}), "invalid"},
		{"infinite count", snap(at(60), "m", sample{ttft: hist(edges3, 1, 1, 1, inf)}), "must be finite"},
		{"NaN sum", snap(at(60), "m", sample{ttft: hist(edges3, math.NaN(), 1, 1, 1)}), "sum NaN"},
		{"NaN counter", snap(at(60), "m", sample{ttft: hist(edges3, 1, 1, 1, 1), gen: math.NaN()}), "counter generation_tokens: value NaN"},
		{"negative created", snap(at(60), "m", sample{ttft: hist(edges3, 1, 1, 1, 1), created: -5}), "created -5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := build(t, keepAll, []step{{0, sample{ttft: hist(edges3, 0, 0, 0, 0)}}, {30, good}})
			before, _ := h.Window("m", at(90), 2*time.Minute, Options{})
			err := h.Append(tc.snap)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			after, _ := h.Window("m", at(90), 2*time.Minute, Options{})
			_, latest, _ := h.Latest("m")
			if !reflect.DeepEqual(before, after) || h.Len() != 2 || !h.Newest().Equal(at(30)) || latest.Counters[scrape.GenerationTokens] != 1 {
				t.Errorf("rejected append changed the history (len %d, newest %v)", h.Len(), h.Newest())
			}
		})
	}
}

func TestFamiliesComeAndGo(t *testing.T) {
	h := New(keepAll)
	s0 := sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 5}.model()
	s1 := sample{gen: 7}.model() // TTFT missing from this scrape: carried forward
	s2 := sample{ttft: hist(edges3, 3, 3, 3, 3), gen: 9}.model()
	s2.Histograms[scrape.E2E] = hist(edges3, 2, 0, 1, 2) // appears mid-segment: counted from zero
	for i, ms := range []*scrape.ModelSample{s0, s1, s2} {
		if err := h.Append(&scrape.Snapshot{Time: at(float64(15 * i)), Models: map[string]*scrape.ModelSample{"m": ms}}); err != nil {
			t.Fatal(err)
		}
	}
	if h.Resets() != 0 {
		t.Errorf("resets = %d, want 0", h.Resets())
	}
	w, _ := h.Window("m", at(30), time.Minute, Options{})
	if got, want := w.Latency[slo.TTFT], hist(edges3, 2, 2, 2, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("TTFT = %+v, want %+v", got, want)
	}
	if got, want := w.Latency[slo.E2E], hist(edges3, 2, 0, 1, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("E2E = %+v, want %+v", got, want)
	}
	w, _ = h.Window("m", at(15), 15*time.Second, Options{})
	if got, want := w.Latency[slo.TTFT], hist(edges3, 0, 0, 0, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("carried TTFT = %+v, want zero increase %+v", got, want)
	}
	if _, ok := w.Latency[slo.E2E]; ok {
		t.Errorf("E2E present in a window before it appeared")
	}
	if w.GenerationTokensTotal != 2 {
		t.Errorf("generation = %v, want 2", w.GenerationTokensTotal)
	}
}

func TestManyModelsAndForget(t *testing.T) {
	h := New(Retention{Tiers: []Tier{{0, 10 * time.Minute}}})
	const n = 50
	for i := 0; i < 4; i++ {
		s := &scrape.Snapshot{Time: at(float64(15 * i)), Models: map[string]*scrape.ModelSample{}}
		for m := 0; m < n; m++ {
			v := float64((m + 1) * i)
			s.Models[fmt.Sprintf("model-%02d", m)] = sample{ttft: hist(edges3, v, v, v, v), gen: v}.model()
		}
		if i == 3 {
			delete(s.Models, "model-07") // not seen at the last scrape
		}
		if err := h.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	models := h.Models()
	if len(models) != n || !slices.IsSorted(models) {
		t.Fatalf("Models() = %v, want %d sorted names", models, n)
	}
	for m := 0; m < n; m++ {
		name := fmt.Sprintf("model-%02d", m)
		w, ok := h.Window(name, at(45), time.Minute, Options{})
		want := float64((m + 1) * 3)
		if name == "model-07" {
			want = float64((m + 1) * 2)
		}
		if !ok || w.GenerationTokensTotal != want {
			t.Errorf("%s: generation %v (ok %v), want %v", name, w.GenerationTokensTotal, ok, want)
		}
	}
	if tm, ms, ok := h.Latest("model-07"); !ok || !tm.Equal(at(30)) || ms.Counters[scrape.GenerationTokens] != 16 {
		t.Errorf("Latest(model-07) = %v %+v %v, want the scrape at +30s", tm, ms, ok)
	}

	h.Forget("model-03")
	h.Forget("no-such-model")
	if _, ok := h.Window("model-03", at(45), time.Minute, Options{}); ok {
		t.Error("forgotten model still answers")
	}
	if _, _, ok := h.Latest("model-03"); ok {
		t.Error("forgotten model still has a latest sample")
	}
	if gone := h.ForgetUnseen(at(40)); !slices.Equal(gone, []string{"model-07"}) {
		t.Errorf("ForgetUnseen = %v, want [model-07]", gone)
	}
	if got := len(h.Models()); got != n-2 {
		t.Errorf("%d models left, want %d", got, n-2)
	}
	if h.Len() != (n-2)*4 {
		t.Errorf("Len = %d, want %d", h.Len(), (n-2)*4)
	}
	if !h.Oldest().Equal(at(0)) || !h.Newest().Equal(at(45)) {
		t.Errorf("Oldest/Newest = %v/%v", h.Oldest(), h.Newest())
	}
}

func TestStaleModelsAgeOut(t *testing.T) {
	h := New(Retention{Tiers: []Tier{{0, time.Minute}, {30 * time.Second, 5 * time.Minute}}})
	mk := func(sec float64, models ...string) {
		s := &scrape.Snapshot{Time: at(sec), Models: map[string]*scrape.ModelSample{}}
		for _, m := range models {
			s.Models[m] = sample{ttft: hist(edges3, sec, sec, sec, sec)}.model()
		}
		if err := h.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	mk(0, "a", "b")
	mk(15, "a", "b")
	for sec := 30.0; sec <= 600; sec += 15 {
		mk(sec, "a")
	}
	if got := h.Models(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Models() = %v, want [a]: b aged out of every tier", got)
	}
	if h.Len() > 4+10+2 {
		t.Errorf("Len = %d: more than a minute raw plus one point per 30s", h.Len())
	}
	if old := h.Oldest(); old.Before(at(600 - 300 - 30)) {
		t.Errorf("Oldest = %v, older than the longest keep", old)
	}
}

func TestRetention(t *testing.T) {
	h, d := time.Hour, 24*time.Hour
	cases := []struct {
		window, period time.Duration
		want           []Tier
	}{
		{5 * time.Minute, 30 * d, []Tier{{0, h + 5*time.Minute}, {5 * time.Minute, d + 5*time.Minute}, {h, 30*d + h}}},
		{2 * h, 7 * d, []Tier{{0, 2*h + 5*time.Minute}, {5 * time.Minute, d + 5*time.Minute}, {h, 7*d + h}}},
		{time.Minute, 6 * h, []Tier{{0, h + 5*time.Minute}, {5 * time.Minute, 6*h + 5*time.Minute}}},
		{time.Minute, 30 * time.Minute, []Tier{{0, h + 5*time.Minute}}},
		{2 * d, 30 * d, []Tier{{0, 2*d + 5*time.Minute}, {h, 30*d + h}}},
	}
	for _, tc := range cases {
		r := NewRetention(tc.window, tc.period)
		if !reflect.DeepEqual(r.Tiers, tc.want) {
			t.Errorf("NewRetention(%v, %v) = %v, want %v", tc.window, tc.period, r.Tiers, tc.want)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("NewRetention(%v, %v) invalid: %v", tc.window, tc.period, err)
		}
	}
	bad := []struct {
		tiers []Tier
		want  string
	}{
		{nil, "no tiers"},
		{[]Tier{{time.Minute, h}}, "tier 0 step 1m0s"},
		{[]Tier{{0, h}, {time.Minute, h}}, "tier 1 keep 1h0m0s: must exceed"},
		{[]Tier{{0, h}, {time.Hour, 2 * h}, {time.Minute, 3 * h}}, "tier 2 step 1m0s: must not be finer"},
		{[]Tier{{0, 0}}, "tier 0 keep 0s"},
	}
	for _, tc := range bad {
		r := Retention{Tiers: tc.tiers}
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want %q", tc.tiers, err, tc.want)
		}
		if got := New(r).Retention(); got.Validate() != nil || got.Longest() < max(h, r.Longest()) {
			t.Errorf("New(%v) kept unusable retention %v", tc.tiers, got)
		}
	}
}

func TestCreatedJitterIsNoRestart(t *testing.T) {
	h := build(t, keepAll, []step{
		{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 1, created: 1000.25}},
		{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 2, created: 1000.5}}, // a family came or went
		{30, sample{ttft: hist(edges3, 3, 3, 3, 3), gen: 3, created: 1001.5}}, // a restart
	})
	if h.Resets() != 1 {
		t.Fatalf("resets = %d, want 1 (only the second created change is a restart)", h.Resets())
	}
	w, _ := h.Window("m", at(30), time.Minute, Options{})
	if w.GenerationTokensTotal != 1+3 {
		t.Errorf("generation = %v, want 4", w.GenerationTokensTotal)
	}
}

// TestConcurrentUse runs appends and queries together; -race checks the locking.
func TestConcurrentUse(t *testing.T) {
	h := New(stateRetention)
	g := newSynthetic(2, 50)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			if err := h.Append(g.next(at(float64(15 * i)))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if w, ok := h.Window("m", h.Newest(), 10*time.Minute, Options{}); ok && !w.Latency[slo.TTFT].Valid() {
			t.Fatal("invalid TTFT")
		}
		h.Models()
		h.Len()
		if _, err := h.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}
}
