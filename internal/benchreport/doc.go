// Package benchreport is the terminal companion to `vllm bench serve`: it reads
// the benchmark's saved result files (per request, exact) and reproduces
// vLLM's own numbers with its definitions, adds token goodput, Little's-Law
// concurrency and cost, turns several files into a sweep with its knee and an
// SVG plot, and reports the same table from vLLM's histograms (a recording or
// a live target, through the daemon's pipeline) with brackets, and puts the
// client's view beside the server's.
//
// It never estimates what the data states exactly: per-request numbers come
// from the requests themselves; histogram numbers carry their bounds.
package benchreport
