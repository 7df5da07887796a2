package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// bucketsOptions are the buckets command's flags.
type bucketsOptions struct {
	config, recording string
	budget            int
}

func addBucketsFlags(cmd *kingpin.CmdClause) *bucketsOptions {
	o := &bucketsOptions{}
	cmd.Flag("config.file", "Configuration file (its SLO thresholds become edges).").Default("config.yaml").StringVar(&o.config)
	cmd.Flag("recording", "A recording of the server (record): its observed distribution places the other edges, and its edges are checked.").StringVar(&o.recording)
	cmd.Flag("buckets.max", "Finite edges per family (each edge is one more series per label set); 0 keeps vLLM's default count.").Default("0").IntVar(&o.budget)
	return o
}

// runBuckets is the buckets command: the JSON for vLLM's
// --custom-histogram-buckets on stdout, and on stderr where each objective's
// threshold lies among the server's edges today (the recording's, else
// global.histogram_buckets or vLLM's defaults).
func runBuckets(stdout, stderr io.Writer, o *bucketsOptions) int {
	cfg, err := config.Load(o.config)
	if err != nil {
		fmt.Fprintf(stderr, "buckets: %v\n", err)
		return 1
	}
	slos := daemon.PipelineSpec(cfg).SLOs
	rec := buckets.NewRecorder()
	where, edges := "the configured edges", map[buckets.Family][]float64{}
	for _, f := range buckets.Families {
		edges[f] = cfg.Global.BucketEdges(buckets.Representative(f))
	}
	if o.recording != "" {
		if err := observe(rec, o.recording, cfg, stderr); err != nil {
			fmt.Fprintf(stderr, "buckets: %v\n", err)
			return 1
		}
		where = "the recorded server's edges"
		for f, e := range rec.Edges() {
			edges[f] = e
		}
	}
	for _, p := range buckets.Place(slos, edges) {
		if p.OnEdge {
			fmt.Fprintf(stderr, "SLO %q: %s <= %gs is an edge of %s: exact\n", p.SLO, p.Metric, p.Threshold, where)
			continue
		}
		fmt.Fprintf(stderr, "SLO %q: %s <= %gs lies between %g and %g on %s: bracketed, not exact\n", p.SLO, p.Metric, p.Threshold, p.Below, p.Above, where)
	}
	out := map[buckets.Family][]float64{}
	for f, ths := range buckets.Thresholds(slos) {
		budget := o.budget
		if budget == 0 {
			budget = len(buckets.Default(f))
		}
		adv, err := buckets.Advise(f, ths, rec.Observed(f, slos), budget)
		if err != nil {
			fmt.Fprintf(stderr, "buckets: %v\n", err)
			return 1
		}
		out[f] = adv.Edges
	}
	b, err := json.Marshal(out)
	if err == nil {
		_, err = fmt.Fprintf(stdout, "%s\n", b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "buckets: write: %v\n", err)
		return 1
	}
	return 0
}

// observe feeds every successful scrape of a recording, parsed with its
// target's profile (vllm when the target is not configured), to rec; a
// malformed line or an unparsable scrape is said on stderr and skipped.
func observe(rec *buckets.Recorder, path string, cfg *config.Config, stderr io.Writer) error {
	skip := func(err error) { fmt.Fprintf(stderr, "buckets: skipped: %v\n", err) }
	return recording.Scan(path, func(e recording.Entry) error {
		if e.Body == "" {
			return nil
		}
		snap, err := scrape.Parse([]byte(e.Body), e.ContentType, profileOf(cfg, e.Target), e.Time)
		if err != nil {
			skip(fmt.Errorf("scrape at %v: %w", e.Time, err))
			return nil
		}
		rec.Add(e.Target, snap)
		return nil
	}, skip)
}

func profileOf(cfg *config.Config, target string) scrape.Profile {
	for _, t := range cfg.Targets {
		if t.Name == target {
			if p, err := scrape.LookupProfile(t.Profile); err == nil {
				return p
			}
		}
	}
	return scrape.VLLM
}
