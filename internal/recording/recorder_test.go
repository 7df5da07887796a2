package recording

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/stepclock"
)

var start = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// offsets runs Record over a scraper that takes `took` of fake time and
// returns the scrape times as offsets from the start.
func offsets(t *testing.T, sched Schedule, took time.Duration) []time.Duration {
	t.Helper()
	clock := stepclock.New(start)
	scr := func(context.Context) Entry {
		clock.Advance(took)
		return Entry{Target: "a", Status: 200}
	}
	var got []time.Duration
	n, err := Record(context.Background(), scr, sched, clock, func(e Entry) error {
		got = append(got, e.Time.Sub(start))
		return nil
	})
	if err != nil || n != len(got) {
		t.Fatalf("Record: %d saved, %d seen, err %v", n, len(got), err)
	}
	return got
}

// TestRecordSchedule: a scrape at once, one per interval, one at the end,
// each stamped when it began; a slow scrape skips the slots it overran.
func TestRecordSchedule(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		sched Schedule
		took  time.Duration
		want  []time.Duration
	}{
		{"multiple", Schedule{Duration: 60 * s, Interval: 15 * s}, 0, []time.Duration{0, 15 * s, 30 * s, 45 * s, 60 * s}},
		{"end between slots", Schedule{Duration: 50 * s, Interval: 15 * s}, 0, []time.Duration{0, 15 * s, 30 * s, 45 * s, 50 * s}},
		{"slow scrapes", Schedule{Duration: 60 * s, Interval: 15 * s}, 20 * s, []time.Duration{0, 30 * s, 60 * s}},
		{"interval past the end", Schedule{Duration: 10 * s, Interval: time.Minute}, 0, []time.Duration{0, 10 * s}},
		{"scrape past the end", Schedule{Duration: 10 * s, Interval: 5 * s}, 30 * s, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := offsets(t, tc.sched, tc.took); !slices.Equal(got, tc.want) {
				t.Errorf("scrapes at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRecordStops: a cancelled context keeps what was saved and drops the
// scrape it cut short; an error of save ends the recording with it.
func TestRecordStops(t *testing.T) {
	sched := Schedule{Duration: time.Hour, Interval: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	cutShort := func(context.Context) Entry {
		calls++
		if calls == 3 {
			cancel()
		}
		return Entry{Target: "a", Error: "context canceled"}
	}
	var saved []Entry
	n, err := Record(ctx, cutShort, sched, stepclock.New(start), func(e Entry) error {
		saved = append(saved, e)
		return nil
	})
	if err != nil || n != 2 || len(saved) != 2 {
		t.Errorf("cancelled: %d saved (%d seen), err %v; want 2", n, len(saved), err)
	}

	full := errors.New("disk full")
	ok := func(context.Context) Entry { return Entry{Target: "a", Status: 200} }
	n, err = Record(context.Background(), ok, sched, stepclock.New(start), func(Entry) error { return full })
	if n != 0 || !errors.Is(err, full) {
		t.Errorf("save error: %d saved, err %v; want 0 and %v", n, err, full)
	}
}

func TestScheduleValidate(t *testing.T) {
	for _, s := range []Schedule{{0, time.Second}, {time.Second, 0}, {-time.Second, time.Second}} {
		if _, err := Record(context.Background(), nil, s, stepclock.New(start), nil); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("%+v: err %v, want must be positive", s, err)
		}
	}
}

// TestHTTPScraper records a served exposition and a failed status as a
// target's scrapes, and a file written by Record reads back the same.
func TestHTTPScraper(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("x 1\n"))
	}))
	defer srv.Close()
	scr, err := HTTPScraper("gpu0", srv.URL+"/metrics", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := scr(context.Background())
	want := Entry{Target: "gpu0", Status: 200, ContentType: "text/plain; version=0.0.4", Body: "x 1\n"}
	if got != want {
		t.Errorf("ok scrape %+v, want %+v", got, want)
	}
	status = http.StatusServiceUnavailable
	got = scr(context.Background())
	if got.Status != 503 || got.Body != "" || !strings.Contains(got.Error, "status 503") {
		t.Errorf("failed scrape %+v, want status 503 and its error", got)
	}

	path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Record(context.Background(), scr, Schedule{Duration: time.Minute, Interval: 30 * time.Second}, stepclock.New(start), w.Write)
	if cerr := w.Close(); err != nil || cerr != nil || n != 3 {
		t.Fatalf("Record: %d saved, err %v, close %v", n, err, cerr)
	}
	read, err := ReadAll(path)
	if err != nil || len(read) != 3 || !read[2].Time.Equal(start.Add(time.Minute)) || read[2].Status != 503 {
		t.Errorf("read back %+v, err %v", read, err)
	}
	if _, err := HTTPScraper("gpu0", "ftp://127.0.0.1/", time.Second); err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Errorf("ftp URL: err %v, want a scheme error", err)
	}
}

// TestScanSkips hands malformed lines to skip and reads on.
func TestScanSkips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	good := `{"time":"2026-11-29T08:00:00Z","target":"a","status":200}`
	if err := writeFile(path, good+"\nnope\n\n"+good+"\n"); err != nil {
		t.Fatal(err)
	}
	var seen int
	var skipped []error
	visit := func(Entry) error { seen++; return nil }
	if err := Scan(path, visit, func(err error) { skipped = append(skipped, err) }); err != nil || seen != 2 || len(skipped) != 1 ||
		!strings.Contains(skipped[0].Error(), "rec.jsonl:2: malformed entry") {
		t.Errorf("seen %d, skipped %v, err %v", seen, skipped, err)
	}
	if _, err := ReadAll(path); !errors.Is(err, ErrMalformed) {
		t.Errorf("ReadAll: err %v, want ErrMalformed", err)
	}
	stop := errors.New("stop")
	if err := Scan(path, func(Entry) error { return stop }, nil); !errors.Is(err, stop) {
		t.Errorf("visit error: got %v", err)
	}
}
