// Package fleetday plays a day of a vLLM fleet in virtual time, scaled by
// an autoscaler with Kubernetes HPA semantics on one of five signals: the
// replica signal (capacity.Replicas, computed by the real capacity code
// from each replica's scrape intervals) and the four its peers scale on;
// it chooses each signal's threshold on training days and scores it on
// held-out ones (docs/autoscaling.md).
//
// A replica is a step model with internal/sim's engine rules and costs,
// not internal/sim itself: the simulator draws its own arrivals and cannot
// take requests from a router, and it keeps every token of every request,
// where a table plays hundreds of replica-days. The replica model files
// each request by the step it finishes at (every step gives every running
// request one token) and is calibrated to the simulator's knee
// (TestReplicaModelIsCalibratedToTheSimulator).
//
// It is measurement code: nothing in the daemon imports it.
package fleetday
