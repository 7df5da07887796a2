package days

import (
	"math"
	"strings"
	"testing"
)

// TestErrorsSummarisesTheBoundedAnswers: per day, the one-sided answer
// counts in inside and within but not among the bounded answers' errors,
// and only an error above 5% counts as over.
func TestErrorsSummarisesTheBoundedAnswers(t *testing.T) {
	scores := []Score{
		{Day: "d", Inside: true, Within15: true, Error: 0.02, Width: 0.1},
		{Day: "d", Inside: true, Within15: true, Error: 0.06, Width: 0.2},
		{Day: "d", Inside: true, Error: math.NaN(), Width: math.NaN()},
		{Day: "e", Error: 0.05, Width: 0.1},
	}
	var b strings.Builder
	Errors(&b, scores)
	for _, want := range []string{"| d | 3/3 | 2/3 | 2 | 15.0% | 4.0% | 6.0% | 1 |", "| e | 0/1 | 0/1 | 1 | 10.0% | 5.0% | 5.0% | 0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("summary\n%s\nlacks the row %q", b.String(), want)
		}
	}
}
