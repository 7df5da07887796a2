// Package fleetday plays a day of a vLLM fleet in virtual time, scaled by
// an autoscaler with Kubernetes HPA semantics on one of five signals: the
// replica signal (capacity.Replicas, computed by the real capacity code
// from each replica's scrape intervals) and the four its peers scale on.
// It is measurement code: nothing in the daemon imports it.
package fleetday
