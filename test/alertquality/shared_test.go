package alertquality

import (
	"regexp"
	"runtime"
	"sync"
	"testing"
)

// Every test of the package runs in parallel (t.Parallel, as many at once
// as -parallel allows, GOMAXPROCS by default): each starts its own engines
// on free loopback ports in a directory of its own, and reads the shared
// runs only, so the suite's longest package uses both cores once the rest
// is done.

// sharedRuns holds the scenarios this test binary has played, by name: a
// scenario is deterministic (its seed is part of it), so every test reads
// the same run, and playing each once keeps the harness's time to the
// engines' work rather than repeating the simulator and the pipeline for
// every test.
var sharedRuns struct {
	sync.Once
	sync.Mutex
	runs map[string]*Run
}

// playLibrary plays, before the first test reads one, every scenario this
// binary's flags select, on as many goroutines as there are CPUs: each
// play is its own simulator and pipeline, so they run side by side, and
// the harness's tests then only read. A scenario whose play fails is left
// out, for playShared to play again and report where a test asks for it.
// With -scenario, only the scenarios it matches are played here; one a
// test asks for by name beyond them is played when it asks.
func playLibrary() {
	re, err := regexp.Compile(*scenario)
	if err != nil {
		return // selected reports the bad expression to every test
	}
	var todo []Scenario
	for _, sc := range Library() {
		if (!sc.Full || *full) && re.MatchString(sc.Name) {
			todo = append(todo, sc)
		}
	}
	next := make(chan Scenario)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for sc := range next {
				if run, err := Play(sc); err == nil {
					sharedRuns.Lock()
					if sharedRuns.runs == nil {
						sharedRuns.runs = map[string]*Run{}
					}
					sharedRuns.runs[sc.Name] = run
					sharedRuns.Unlock()
				}
			}
		})
	}
	for _, sc := range todo {
		next <- sc
	}
	close(next)
	wg.Wait()
}

// playShared is Play, once per scenario and test binary. Each call gets its
// own copy of the run with the engines' results (Rules, VMRules and their
// labels) cleared, since a test fills those from the rule file it loads;
// everything else is shared and only read.
func playShared(sc Scenario) (*Run, error) {
	sharedRuns.Do(playLibrary)
	sharedRuns.Lock()
	defer sharedRuns.Unlock()
	run, ok := sharedRuns.runs[sc.Name]
	if !ok {
		var err error
		if run, err = Play(sc); err != nil {
			return nil, err
		}
		if sharedRuns.runs == nil {
			sharedRuns.runs = map[string]*Run{}
		}
		sharedRuns.runs[sc.Name] = run
	}
	own := *run
	own.Rules, own.RuleLabels, own.VMRules, own.VMRuleLabels = nil, nil, nil, nil
	return &own, nil
}

// sharedExact holds the scenarios this test binary has played in exact
// mode, by name, for the tests that read them (TestExactModePages,
// TestCancelBurnPagesPromptly): played once each, like sharedRuns.
var sharedExact struct {
	sync.Mutex
	runs map[string]*Run
}

// playExactShared is PlayExact, once per scenario and test binary; every
// caller reads the same run and must not change it.
func playExactShared(sc Scenario) (*Run, error) {
	sharedExact.Lock()
	defer sharedExact.Unlock()
	if run, ok := sharedExact.runs[sc.Name]; ok {
		return run, nil
	}
	run, err := PlayExact(sc)
	if err != nil {
		return nil, err
	}
	if sharedExact.runs == nil {
		sharedExact.runs = map[string]*Run{}
	}
	sharedExact.runs[sc.Name] = run
	return run, nil
}

// sharedRules holds, by scenario name, the generated rules' burn-rate
// alerts (Run.Rules, Run.RuleLabels) as evaluateRules replayed them in
// Prometheus, for the tests that score the rules' pages
// (TestAlertQuality, TestCancelBurnPagesPromptly): each run is replayed
// once per test binary. The mutex is held while a replay runs, so a test
// asking for runs another is replaying waits for them.
var sharedRules struct {
	sync.Mutex
	rules  map[string]map[Key][]Episode
	labels map[string]map[Key]map[string]bool
}

// rulesShared fills Rules and RuleLabels of every run from sharedRules,
// replaying in one Prometheus those runs no test has replayed yet.
func rulesShared(t *testing.T, runs []*Run) {
	t.Helper()
	sharedRules.Lock()
	defer sharedRules.Unlock()
	var todo []*Run
	for _, run := range runs {
		if _, ok := sharedRules.rules[run.Scenario.Name]; !ok {
			todo = append(todo, run)
		}
	}
	if len(todo) > 0 {
		evaluateRules(t, todo)
		if sharedRules.rules == nil {
			sharedRules.rules, sharedRules.labels = map[string]map[Key][]Episode{}, map[string]map[Key]map[string]bool{}
		}
		for _, run := range todo {
			sharedRules.rules[run.Scenario.Name], sharedRules.labels[run.Scenario.Name] = run.Rules, run.RuleLabels
		}
	}
	for _, run := range runs {
		run.Rules, run.RuleLabels = sharedRules.rules[run.Scenario.Name], sharedRules.labels[run.Scenario.Name]
	}
}
