package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/rayserve"
)

// TestReplayRayServe replays a scenario as vLLM serves it and as Ray Serve
// re-exports it (both spellings of the names, Ray's replica labels, no
// `_created`), the latter with profile ray-vllm: every series must be the
// same, since the data is.
func TestReplayRayServe(t *testing.T) {
	dir := t.TempDir()
	vllmCfg := writeFile(t, dir, "vllm.yaml", replayConfig)
	rayCfg := writeFile(t, dir, "ray.yaml", strings.Replace(replayConfig,
		"    url: http://127.0.0.1:8000/metrics\n", "    url: http://127.0.0.1:8000/metrics\n    profile: ray-vllm\n", 1))
	tags := map[string]string{"ReplicaId": "llm:vllm:x1", "WorkerId": "0a1b", "Component": "core_worker", "NodeAddress": "10.0.0.7", "SessionName": "session_2026", "Version": "2.52.0"}
	for _, name := range []string{"single-process", "two-models"} {
		sc := scenarioNamed(t, name)
		entries, _, err := sc.generate()
		if err != nil {
			t.Fatal(err)
		}
		plainRec := filepath.Join(dir, name+".jsonl")
		writeRecording(t, plainRec, entries)
		want, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+vllmCfg, "--recording="+plainRec)
		if code != 0 {
			t.Fatalf("replay %s: exit %d\n%s", name, code, stderr)
		}
		for names, spelling := range map[rayserve.Names]string{rayserve.Underscore: "underscore", rayserve.Colon: "colon"} {
			t.Run(name+"/"+spelling, func(t *testing.T) {
				ray := append(entries[:0:0], entries...)
				for i := range ray {
					ray[i].Body = string(rayserve.Reexport([]byte(ray[i].Body), names, tags))
				}
				rec := filepath.Join(dir, name+"-"+spelling+".jsonl")
				writeRecording(t, rec, ray)
				got, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+rayCfg, "--recording="+rec)
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, stderr)
				}
				if got != want {
					t.Errorf("Ray Serve's replay differs from vLLM's:\n%s", firstDiff(want, got))
				}
			})
		}
	}
}

// scenarioNamed returns the replay scenario of that name.
func scenarioNamed(t *testing.T, name string) scenario {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return scenario{}
}
