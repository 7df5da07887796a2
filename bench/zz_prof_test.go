package bench

import (
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZProf(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZ_TARGETS"))
	w := DefaultWorkload()
	synth, _ := NewSynth()
	spec := w.Spec(n)
	end := Epoch.Add(60 * 24 * time.Hour)
	times := FillTimes(spec.Retention, end, Interval)
	pipe := pipeline.New(spec)
	if err := Fill(pipe, n, synth, times); err != nil {
		t.Fatal(err)
	}
	st := time.Now()
	pipe.Evaluate(end)
	first := time.Since(st)
	var walls, cpus []time.Duration
	for i := 0; i < 15; i++ {
		st, c := time.Now(), cpuNow()
		pipe.Evaluate(end)
		walls, cpus = append(walls, time.Since(st)), append(cpus, cpuNow()-c)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	t.Logf("RESULT targets %d first %.1f ms, wall median %.1f ms, cpu median %.1f ms", n, first.Seconds()*1e3, walls[7].Seconds()*1e3, cpus[7].Seconds()*1e3)
}
