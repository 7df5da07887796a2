package scrape

import (
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// role is what a sample is within its family.
type role uint8

const (
	roleValue   role = iota // the value of a counter or gauge
	roleBucket              // <histogram>_bucket{le=...}
	roleCount               // <histogram>_count
	roleSum                 // <histogram>_sum
	roleCreated             // <family>_created: the child's creation time
)

// sampleRef says which profile name a wanted sample belongs to and what it is.
type sampleRef struct {
	fam    int    // index into Profile.Families
	name   int    // index into that family's Names
	role   role   // what the sample is
	sample string // the sample name, for messages
	// label and value, when label is set, are the name's label matcher:
	// only samples carrying that label value belong to the family.
	label, value string
}

// typeRef is a family name that may appear in a `# TYPE` line, with the type
// the profile expects for it.
type typeRef struct {
	fam, name int
	want      model.MetricType
}

// plan is a profile compiled for lookups by sample name and by declared family
// name. One sample name may belong to several families (each through its own
// label matcher). Plans of the built-in profiles are compiled once
// (builtinPlans); any other profile's per Parse. A plan is never modified
// once built.
type plan struct {
	profile Profile
	samples map[string][]sampleRef
	types   map[string][]typeRef
}

// builtinPlans are the plans of the built-in profiles, compiled once at
// start-up from copies of them and read-only afterwards.
var builtinPlans = []*plan{newPlan(cloneProfile(VLLM)), newPlan(cloneProfile(SGLang))}

// planFor returns the compiled plan for p: a built-in one when p has the very
// same content (so a caller that modified a profile gets a fresh plan), else
// a new one.
func planFor(p Profile) *plan {
	for _, pl := range builtinPlans {
		if sameProfile(pl.profile, p) {
			return pl
		}
	}
	return newPlan(p)
}

// cloneProfile deep-copies p, so that no later change to p reaches the copy.
func cloneProfile(p Profile) Profile {
	out := Profile{Name: p.Name, Families: make([]FamilySpec, len(p.Families))}
	for i, f := range p.Families {
		out.Families[i] = FamilySpec{Family: f.Family, Kind: f.Kind, Names: slices.Clone(f.Names)}
	}
	return out
}

// sameProfile reports whether a and b map the same families to the same
// names, in the same order.
func sameProfile(a, b Profile) bool {
	if a.Name != b.Name || len(a.Families) != len(b.Families) {
		return false
	}
	for i, f := range a.Families {
		g := b.Families[i]
		if f.Family != g.Family || f.Kind != g.Kind || !slices.Equal(f.Names, g.Names) {
			return false
		}
	}
	return true
}

// newPlan compiles p. When two names of one family would claim the same
// sample name, the first one keeps it; different families each read it.
func newPlan(p Profile) *plan {
	pl := &plan{
		profile: p,
		samples: make(map[string][]sampleRef, 4*len(p.Families)),
		types:   make(map[string][]typeRef, 2*len(p.Families)),
	}
	add := func(sample string, ref sampleRef) {
		if slices.ContainsFunc(pl.samples[sample], func(r sampleRef) bool { return r.fam == ref.fam }) {
			return
		}
		ref.sample = sample
		pl.samples[sample] = append(pl.samples[sample], ref)
	}
	addType := func(name string, ref typeRef) {
		if !slices.ContainsFunc(pl.types[name], func(r typeRef) bool { return r.fam == ref.fam }) {
			pl.types[name] = append(pl.types[name], ref)
		}
	}
	for fi, spec := range p.Families {
		for ni, full := range spec.Names {
			name, label, value := SplitName(full)
			ref := func(r role) sampleRef {
				return sampleRef{fam: fi, name: ni, role: r, label: label, value: value}
			}
			switch spec.Kind {
			case KindHistogram:
				add(name+"_bucket", ref(roleBucket))
				add(name+"_count", ref(roleCount))
				add(name+"_sum", ref(roleSum))
				add(name+"_created", ref(roleCreated))
				addType(name, typeRef{fi, ni, model.MetricTypeHistogram})
			case KindCounter:
				// The profile names the exposed sample (`foo_total`). Classic
				// text declares the family as `foo_total`, OpenMetrics as `foo`;
				// both expose the creation time as `foo_created`.
				base := strings.TrimSuffix(name, "_total")
				add(name, ref(roleValue))
				add(base+"_created", ref(roleCreated))
				addType(name, typeRef{fi, ni, model.MetricTypeCounter})
				if base != name {
					addType(base, typeRef{fi, ni, model.MetricTypeCounter})
				}
			default:
				add(name, ref(roleValue))
				addType(name, typeRef{fi, ni, model.MetricTypeGauge})
			}
		}
	}
	return pl
}

// typeCompatible reports whether a declared family type can hold what the
// profile expects. Untyped ("unknown") families are read by their sample names.
func typeCompatible(declared, want model.MetricType) bool {
	return declared == want || declared == model.MetricTypeUnknown || declared == ""
}
