package alertquality

import "sync"

// sharedRuns holds the scenarios this test binary has played, by name: a
// scenario is deterministic (its seed is part of it), so every test reads
// the same run, and playing each once keeps the harness's time to the
// engines' work rather than repeating the simulator and the pipeline for
// every test.
var sharedRuns struct {
	sync.Mutex
	runs map[string]*Run
}

// playShared is Play, once per scenario and test binary. Each call gets its
// own copy of the run with the engines' results (Rules, VMRules and their
// labels) cleared, since a test fills those from the rule file it loads;
// everything else is shared and only read.
func playShared(sc Scenario) (*Run, error) {
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
