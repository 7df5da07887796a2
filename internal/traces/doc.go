// Package traces keeps the per-request records that vLLM's OpenTelemetry
// spans carry and evaluates them exactly, beside the histogram estimates.
//
// A Store holds, per target and model, one compact record per finished
// request (its latencies, token counts, adapter, finish reason and end time),
// sorted by end time and kept for the longest window plus a grace period,
// measured back from now on the store's clock. Once the ledger has read a
// scrape interval's spans (Interval), the interval's records are sealed:
// kept as sorted columns and counts, from which EvaluateWindow evaluates a
// window without reading its requests (sealed.go).
// EvaluateWindow takes the records of one history window, reconciles their count
// with vLLM's finished-request counter over the same scrapes (the coverage),
// and, only when every finished request is there, produces exact numbers
// (lower = estimate = upper) and a calibration of the histogram bounds
// against them.
//
// The package does no I/O. Its only clock is the one the store is given
// (Limits.Now): it decides what is too old or too new to keep; windows come
// with their own times.
package traces
