package alertquality

import (
	"fmt"
	"strings"
	"time"
)

// Episode is one firing stretch of an alert: from the first evaluation that
// fired to the first that did not (To is the resolve; the run's end when it
// never resolved), as offsets from the first scrape.
type Episode struct {
	From, To time.Duration
	// Open is true when the alert still fired at the end of the run.
	Open bool
}

// episodes cuts a firing-per-evaluation sequence into episodes.
func episodes(firing []bool) []Episode {
	var out []Episode
	for i := 0; i < len(firing); i++ {
		if !firing[i] {
			continue
		}
		j := i
		for j < len(firing) && firing[j] {
			j++
		}
		out = append(out, Episode{From: time.Duration(i) * Interval, To: time.Duration(j) * Interval, Open: j == len(firing)})
		i = j
	}
	return out
}

// ResolveGrace is how long after the truth stops an alert may still be
// firing (the target: resolve within 15 minutes of a burn's end) and
// DetectGrace how late after the truth starts it may fire and still count
// as a detection.
const (
	ResolveGrace = 15 * time.Minute
	DetectGrace  = 5 * time.Minute
)

// Score compares the episodes of one path with the truth's for one alert.
type Score struct {
	// False counts episodes that do not start before a true episode ends,
	// overlap it and resolve within ResolveGrace of its end (a re-page after
	// the truth resolved is false); Missed true episodes that no episode overlaps (extended
	// by DetectGrace).
	False, Missed int
	// Delays and Resolves hold, per detected true episode, how long after
	// its start the path fired and after its end the path resolved
	// (negative: earlier).
	Delays, Resolves []time.Duration
}

// score compares got with want.
func score(want, got []Episode) Score {
	var s Score
	for _, g := range got {
		ok := false
		for _, w := range want {
			if g.From <= w.To && g.To > w.From && g.To <= w.To+ResolveGrace {
				ok = true
			}
		}
		if !ok {
			s.False++
		}
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.From < w.To+DetectGrace && g.To > w.From {
				found = true
				s.Delays = append(s.Delays, g.From-w.From)
				s.Resolves = append(s.Resolves, g.To-w.To)
				break
			}
		}
		if !found {
			s.Missed++
		}
	}
	return s
}

// describe writes episodes as "15m0s–27m30s, ...", or "none".
func describe(es []Episode) string {
	if len(es) == 0 {
		return "none"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		end := short(e.To)
		if e.Open {
			end = "end"
		}
		parts[i] = short(e.From) + "–" + end
	}
	return strings.Join(parts, ", ")
}

// short writes a duration as minutes and seconds: 15:30.
func short(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d:%02d", sign, int(d.Minutes()), int(d.Seconds())%60)
}
