package online

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// tee hands every interval to the learners and keeps it, so that a second
// set of learners can be fed exactly the same.
type tee struct {
	to   *Learners
	kept [][]pipeline.ClosedInterval
	ts   pipeline.TargetSpec
	slos []slo.SLO
}

func (t *tee) ObserveIntervals(ts pipeline.TargetSpec, slos []slo.SLO, ivs []pipeline.ClosedInterval) {
	t.ts, t.slos = ts, slos
	t.kept = append(t.kept, ivs)
	t.to.ObserveIntervals(ts, slos, ivs)
}

// learned runs a steady load for d into fresh learners, refitting every
// five minutes, and returns them with the pipeline and the tee.
func learned(t *testing.T, rate float64, d time.Duration) (*Learners, *pipeline.Pipeline, *tee, time.Time) {
	t.Helper()
	s := steady(t, rate, 7)
	c := New(nil)
	tp := &tee{to: c}
	p := pipeline.New(testSpec(tp))
	at := start
	for end := at.Add(d); at.Before(end); {
		at = at.Add(scrapeStep)
		scrapeInto(t, p, s, at)
		if at.Sub(start)%(5*time.Minute) == 0 {
			c.Refit(p.Evaluate(at))
		}
	}
	return c, p, tp, at
}

// published is the learners' reports as text (NaN compares equal to itself there).
func published(c *Learners) string { return fmt.Sprintf("%+v", c.Reports()) }

// TestRestoredLearnersPublishWhatNeverStoppedOnesDo saves learners after
// 40 minutes of a load that meets the SLO, restores them into new ones,
// and checks that the restored publish exactly what the originals do at
// once and after both are fed the same next 30 minutes of intervals and
// refitted at the same times: restarting keeps what was learned.
func TestRestoredLearnersPublishWhatNeverStoppedOnesDo(t *testing.T) {
	c, p, tp, at := learned(t, 2, 40*time.Minute)
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := New(nil)
	if err := restored.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if got, want := published(restored), published(c); got != want {
		t.Fatalf("restored publish\n%s\nwant\n%s", got, want)
	}
	if reps := c.Reports(); len(reps) != 1 || reps[0].Estimate.Kind != capacity.LowerOnly {
		t.Fatalf("after 40 minutes at 2 req/s: %+v, want one lower_only estimate", reps)
	}
	s := steady(t, 2, 7) // the same simulator, advanced past what was scraped
	s.AdvanceTo(at)
	before := len(tp.kept)
	for end := at.Add(30 * time.Minute); at.Before(end); {
		at = at.Add(scrapeStep)
		scrapeInto(t, p, s, at)
		for _, ivs := range tp.kept[before:] {
			restored.ObserveIntervals(tp.ts, tp.slos, ivs)
		}
		before = len(tp.kept)
		if at.Sub(start)%(5*time.Minute) == 0 {
			rep := p.Evaluate(at)
			c.Refit(rep)
			restored.Refit(rep)
			if got, want := published(restored), published(c); got != want {
				t.Fatalf("at %v the restored publish\n%s\nwant\n%s", at, got, want)
			}
		}
	}
	if e := restored.Reports()[0].Estimate; e.Windows < 30 || !e.Since.Equal(c.Reports()[0].Estimate.Since) {
		t.Fatalf("after 70 minutes the restored learner has %d windows since %v, want about 35 since the start", e.Windows, e.Since)
	}
}

// encodeState encodes a learners state as MarshalBinary would.
func encodeState(t *testing.T, st learnersState) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDamagedStateRefused feeds damaged and foreign states to learners
// that already hold an estimate: each is refused with an error naming the
// fault, and what they hold is unchanged.
func TestDamagedStateRefused(t *testing.T) {
	c, _, _, _ := learned(t, 2, 40*time.Minute)
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var good learnersState
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&good); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(st *learnersState)) []byte {
		var st learnersState
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&st); err != nil {
			t.Fatal(err)
		}
		f(&st)
		return encodeState(t, st)
	}
	flipped := bytes.Clone(data)
	flipped[len(flipped)/3] ^= 0xff
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"empty", "decode capacity learners", nil},
		{"truncated", "decode capacity learners", data[:len(data)/2]},
		{"another version", "format version 2", edit(func(st *learnersState) { st.Version = 2 })},
		{"windows out of order", "before the previous one ends", edit(func(st *learnersState) {
			ws := st.Entries[0].Learner.Windows
			ws[3], ws[4] = ws[4], ws[3]
		})},
		{"a negative count", "finished is -1", edit(func(st *learnersState) { st.Entries[0].Learner.Windows[2].Finished = -1 })},
		{"a NaN count", "arrivals is NaN", edit(func(st *learnersState) { st.Entries[0].Learner.Windows[2].Arrivals = math.NaN() })},
		{"good bounds crossed", "above good upper", edit(func(st *learnersState) { st.Entries[0].Learner.Windows[1].Good.Lower = 1e9 })},
		{"a window ending at its start", "not after its start", edit(func(st *learnersState) {
			w := &st.Entries[0].Learner.Windows[0]
			w.End = w.Start
		})},
		{"too many windows", "at most 1441 fit", edit(func(st *learnersState) {
			st.Entries[0].Learner.Windows = make([]capacity.Window, 2000)
		})},
		{"a key saved twice", "saved twice", edit(func(st *learnersState) { st.Entries = append(st.Entries, st.Entries[0]) })},
		{"an unknown kind", `unknown kind "huge"`, edit(func(st *learnersState) { st.Entries[0].Estimate.Kind = "huge" })},
		{"a goal outside (0, 1)", "goal 2 outside", edit(func(st *learnersState) { st.Entries[0].Goal = 2 })},
	}
	want := published(c)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.UnmarshalBinary(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if got := published(c); got != want {
				t.Fatalf("a refused state changed what is published:\n%s\nwant\n%s", got, want)
			}
		})
	}
	if len(good.Entries) != 1 {
		t.Fatalf("%d entries saved, want 1", len(good.Entries))
	}
	// A flipped byte may land where gob cannot tell; it must never panic.
	_ = New(nil).UnmarshalBinary(flipped)
}

// FuzzLearnersState decodes arbitrary bytes as the state file's capacity
// section: never a panic, and whatever is accepted encodes again and
// publishes without a panic.
func FuzzLearnersState(f *testing.F) {
	c := New(nil)
	ts := pipeline.TargetSpec{Name: "gpu0"}
	w := slo.Window{Start: start, End: start.Add(2 * time.Minute)}
	c.ObserveIntervals(ts, []slo.SLO{interactive}, []pipeline.ClosedInterval{{
		Interval: history.Interval{Model: "m", Window: w},
		Good:     []ledger.IntervalGood{{Start: w.Start, End: w.End, Finished: 100, Good: slo.Bounded{Lower: 90, Upper: 99, Estimate: 95}, GoodKnown: true}},
	}})
	data, err := c.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		l := New(nil)
		if err := l.UnmarshalBinary(b); err != nil {
			return
		}
		if _, err := l.MarshalBinary(); err != nil {
			t.Fatalf("an accepted state does not encode again: %v", err)
		}
		_ = l.Reports()
	})
}
