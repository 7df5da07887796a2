package benchreport

import (
	"encoding/json"
	"math"
	"testing"
)

// TestNumJSON: infinities and NaN survive JSON encoding.
func TestNumJSON(t *testing.T) {
	b, err := json.Marshal([]Num{1.5, Num(math.Inf(1)), Num(math.Inf(-1)), Num(math.NaN())})
	if err != nil || string(b) != `[1.5,"+Inf","-Inf",null]` {
		t.Errorf("got %s %v", b, err)
	}
}
