package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestReplayGolden replays every committed recording through the binary and
// compares its exposition with the golden file. With -update it first
// regenerates the recordings from the simulator, then the goldens.
func TestReplayGolden(t *testing.T) {
	cfgFile := writeFile(t, t.TempDir(), "config.yaml", replayConfig)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rec := filepath.Join("testdata", sc.name+".jsonl.gz")
			golden := filepath.Join("testdata", sc.name+".golden")
			if *update {
				entries, _, err := sc.generate()
				if err != nil {
					t.Fatal(err)
				}
				writeRecording(t, rec, entries)
			}
			out, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+cfgFile, "--recording="+rec)
			if code != 0 {
				t.Fatalf("replay exit %d; stderr:\n%s", code, stderr)
			}
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if !bytes.Equal([]byte(out), want) {
				t.Errorf("replay of %s differs from %s (run with -update and review the diff):\n%s", rec, golden, firstDiff(string(want), out))
			}
			// Sanity of the golden itself: it must carry the target and pass
			// the invariants, so -update cannot bless an empty output.
			checkInvariants(t, parseExposition(t, out))
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + string(w) + "\n  got:  " + string(g)
		}
	}
	return "(no line differs)"
}

// TestReplayFormatsAgree checks that the same simulated server gives the same
// exposition however it serves /metrics: multi-process, OpenMetrics, text
// version 1.0.0 and le="1" are only different spellings of the same data.
func TestReplayFormatsAgree(t *testing.T) {
	ref, err := os.ReadFile(filepath.Join("testdata", "two-engines.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"multi-process", "openmetrics", "integer-le"} {
		got, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ref) {
			t.Errorf("%s.golden differs from two-engines.golden:\n%s", name, firstDiff(string(ref), string(got)))
		}
	}
}
