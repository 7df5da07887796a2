package alertquality

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var full = flag.Bool("full", false, "run every scenario of the library, the slow ones too")

// TestDaemonAlertQuality plays the library (the fast subset unless -full)
// through the daemon's pipeline and checks the targets for every alert: no
// false page, no missed page, firing within DetectGrace of the truth and
// resolving within ResolveGrace of its end. With -v it prints the README's
// table and the candidate policies the daemon's was chosen against.
func TestDaemonAlertQuality(t *testing.T) {
	var table, policies strings.Builder
	table.WriteString("| scenario | what happens | alert | truth fires | daemon fires | false / missed | delay / resolve |\n|---|---|---|---|---|---|---|\n")
	for _, sc := range Library() {
		if sc.Full && !*full {
			continue
		}
		run, err := Play(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range run.Keys {
			want, got := run.Truth[k], run.Daemon[k]
			s := score(want, got)
			if len(want) > 0 || len(got) > 0 {
				fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %d / %d | %s |\n",
					sc.Name, sc.What, k, describe(want), describe(got), s.False, s.Missed, delays(s))
			}
			if s.False > 0 || s.Missed > 0 {
				t.Errorf("%s %s: truth %s, daemon %s: %d false, %d missed", sc.Name, k, describe(want), describe(got), s.False, s.Missed)
			}
			for i := range s.Delays {
				if s.Delays[i] > DetectGrace || s.Resolves[i] > ResolveGrace {
					t.Errorf("%s %s: fired %v after the truth, resolved %v after it", sc.Name, k, s.Delays[i], s.Resolves[i])
				}
			}
			comparePolicies(&policies, run, k)
		}
		if len(run.TargetDown) > 0 {
			fmt.Fprintf(&table, "| %s | %s | target down | | %s | | |\n", sc.Name, sc.What, describe(run.TargetDown))
		}
	}
	t.Log("\n" + table.String() + "\nCandidate policies (false/missed per alert):\n" + policies.String())
}

// delays writes the detection delays and resolve delays of a score.
func delays(s Score) string {
	var parts []string
	for i := range s.Delays {
		parts = append(parts, short(s.Delays[i])+" / "+short(s.Resolves[i]))
	}
	return strings.Join(parts, ", ")
}
