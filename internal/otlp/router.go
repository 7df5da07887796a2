package otlp

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Route sends the spans of matching resources to a target.
type Route struct {
	// Match lists resource attributes that must all have these values.
	Match map[string]string
	// Target is the configured target the spans belong to.
	Target string
	// Model is the model_name of spans that carry no gen_ai.response.model
	// (vLLM V1 does not set it); empty leaves them to the target's only
	// model.
	Model string
}

// Router decides which target a resource's spans belong to. It is safe for
// concurrent use; SetTargets follows a reload.
type Router struct {
	routes []Route
	// targetAttribute names the resource attribute whose value, when it is
	// a target's name, routes to that target.
	targetAttribute  string
	adapterAttribute string

	mu      sync.RWMutex
	targets map[string]bool
	// only is the single configured target, if there is exactly one.
	only string
}

// NewRouter builds a router: explicit routes first (the first match wins),
// then the resource attribute targetAttribute naming a target, then the only
// target when exactly one is configured. adapterAttribute names the span
// attribute that holds the LoRA adapter ("" to not split by adapter).
func NewRouter(routes []Route, targetAttribute string, targets []string, adapterAttribute string) *Router {
	r := &Router{routes: routes, targetAttribute: targetAttribute, adapterAttribute: adapterAttribute}
	r.SetTargets(targets)
	return r
}

// SetTargets replaces the configured targets (after a reload): spans of a
// removed target are no longer accepted, a new target gets its spans.
func (r *Router) SetTargets(targets []string) {
	set := make(map[string]bool, len(targets))
	for _, t := range targets {
		set[t] = true
	}
	only := ""
	if len(targets) == 1 {
		only = targets[0]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets, r.only = set, only
}

// Route returns the route of a resource; ok is false when no target matches.
func (r *Router) Route(attrs pcommon.Map) (Route, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, rt := range r.routes {
		if matches(attrs, rt.Match) && r.targets[rt.Target] {
			return rt, true
		}
	}
	if r.targetAttribute != "" {
		if v, ok := attrs.Get(r.targetAttribute); ok && r.targets[v.AsString()] {
			return Route{Target: v.AsString()}, true
		}
	}
	if r.only != "" {
		return Route{Target: r.only}, true
	}
	return Route{}, false
}

func matches(attrs pcommon.Map, want map[string]string) bool {
	for k, v := range want {
		got, ok := attrs.Get(k)
		if !ok || got.AsString() != v {
			return false
		}
	}
	return true
}
