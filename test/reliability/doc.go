// Package reliability holds the fault-injection, security, soak and
// concurrency tests of the whole scrape → pipeline → exporter path:
// a hostile target on 127.0.0.1 under each test's control is scraped beside a
// healthy simulated vLLM, and every case checks that our endpoint keeps
// answering, that the healthy target's numbers do not move, that target_up and
// scrape_failures_total{reason} say what happened, and that the published
// numbers stay true (no made-up zeros, no double counting).
//
// The package has no non-test code: it exists for its tests and for
// RELIABILITY.md at the repository root, which maps every case to the test
// that proves it. It must never be imported.
package reliability
