package scrape

import (
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// The longest label name and value Parse accepts on a sample a profile
// wants, in bytes. A model is refused (ReasonLabelTooLong) when one of its
// samples carries a longer one: every series the exporter publishes for a
// model repeats its model_name, and the history, the console and the
// rendered /metrics would each hold another copy, so one 1 MiB name in a
// body under the size limit would cost a hundred times that downstream.
// vLLM's model names are Hugging Face ids or paths (a Hugging Face id is at
// most 96 bytes, a Linux path component 255) and its label names a few
// words, far below these limits. Samples the profile does not want are never
// kept, and so not checked.
const (
	MaxLabelNameLength  = 128
	MaxLabelValueLength = 1024
)

// Label names with a meaning to Parse.
const (
	labelModel = "model_name"
	labelPID   = "pid"
	labelLE    = "le"
	// labelPriority is the bucketed request priority vLLM's priority
	// scheduling adds to its finished-request metrics (ModelSample.TTFTAtFinish).
	labelPriority = "priority"
)

// Parse reads one exposition body and reduces it to the families profile p
// names, per model_name, at time t.
//
// contentType selects the format as Prometheus does: empty (or unparsable, or
// unknown) means Prometheus text 0.0.4, `text/plain` with any version is the
// same text format, `application/openmetrics-text` is OpenMetrics 1.0.
// Protobuf is refused: the fetcher never asks for it.
//
// Semantics, decided here once:
//   - A family counts as present only if at least one of its samples (not
//     counting `_created`) is in the body; a `# TYPE` line alone is not enough,
//     since it carries no data. For each family the first of its Names that is
//     present is used (Snapshot.Found); the others are ignored, errors in them
//     included.
//   - A name with a label matcher (see FamilySpec.Names) reads only the
//     series carrying that label value, and is present only when one of
//     them is; the same series may also belong to a family that reads the
//     name whole.
//   - A name whose `# TYPE` contradicts the profile's kind (a gauge where a
//     histogram is expected) is not used, so the family may end up Missing.
//   - Series without a model_name label are kept under model_name "".
//   - Histograms are summed over every label but model_name (engine, pid, …);
//     all children of one model must share one bucket layout. The +Inf bucket
//     is the total; `_count` is validated but not used. `_sum` is required.
//   - Counters are summed over every label but model_name. Gauges take the
//     maximum over `pid` and are summed over every other label.
//   - ModelSample.Created is the largest `_created` of the model's histograms
//     and counters, in both the classic (a separate gauge family) and the
//     OpenMetrics (inline) form.
//   - Bucket counts must be non-decreasing in le, exactly: exposed counts are
//     integers, which float64 holds exactly, so any decrease is a broken
//     exposition, not noise. Non-integer counts are accepted (nothing breaks).
//
// Failures come in two sizes (see the package doc for why):
//   - A syntax error stops the parser: no snapshot, a *ParseError with the
//     line.
//   - A family that fails validation for one model (a histogram without its
//     +Inf bucket, a NaN, a duplicate series…) rejects that model for this
//     scrape: it is absent from the snapshot, and Snapshot.Rejected names the
//     family, the model, the line and the reason. The other models are kept.
//     When no model is left, Parse returns the first rejection's *ParseError
//     and no snapshot.
func Parse(body []byte, contentType string, p Profile, t time.Time) (*Snapshot, error) {
	if contentType == "" {
		contentType = "text/plain; version=0.0.4"
	}
	if isProtobuf(contentType) {
		return nil, &ParseError{Reason: ReasonInvalidExposition,
			Err: fmt.Errorf("unsupported Content-Type %q", contentType)}
	}
	// The text parser appends a line feed to a body that lacks one; the
	// clipped slice makes that append copy instead of writing into the
	// caller's spare capacity.
	parser, err := textparse.New(slices.Clip(body), contentType, labels.NewSymbolTable(), textparse.ParserOptions{
		FallbackContentType: "text/plain",
	})
	if parser == nil {
		// err is only a warning when a parser came back (e.g. a fallback).
		return nil, &ParseError{Reason: ReasonInvalidExposition, Err: fmt.Errorf("content type %q: %w", contentType, err)}
	}
	_, openMetrics := parser.(*textparse.OpenMetricsParser)
	c := newCollector(planFor(p), newLineCounter(body, !openMetrics))
	if err := c.run(parser); err != nil {
		return nil, err
	}
	return c.assemble(t)
}

// isProtobuf reports whether contentType names Prometheus's protobuf format.
func isProtobuf(contentType string) bool {
	// Only a type naming protobuf can parse as the protobuf media type; the
	// check skips mime.ParseMediaType's cost on every other scrape.
	if !strings.Contains(strings.ToLower(contentType), "protobuf") {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/vnd.google.protobuf"
}

// collector gathers the wanted samples of one exposition.
type collector struct {
	plan   *plan
	lines  lineCounter
	states [][]*nameState // [family][name]
	lset   labels.Labels  // the current sample's labels
	key    []byte         // scratch: the current sample's identity
}

func newCollector(pl *plan, lines lineCounter) *collector {
	c := &collector{plan: pl, lines: lines}
	c.states = make([][]*nameState, len(pl.profile.Families))
	for i, spec := range pl.profile.Families {
		c.states[i] = make([]*nameState, len(spec.Names))
	}
	return c
}

// nameState is what was seen of one exposed name of a profile family.
type nameState struct {
	present   bool   // a sample other than _created was seen
	wrongType string // the declared type, when it contradicts the profile
	hist      map[string]*histChild
	vals      map[string]valChild
	created   map[string]createdChild
	// rejected holds, per model_name, the first error found in this name's
	// samples of that model; later samples of the model are not read.
	rejected map[string]*ParseError
}

// reject records err against model, keeping the first error of each model.
func (st *nameState) reject(model string, err *ParseError) {
	if st.rejected == nil {
		st.rejected = make(map[string]*ParseError)
	}
	if _, seen := st.rejected[model]; !seen {
		st.rejected[model] = err
	}
}

// histChild is one label set of a histogram (one engine, one pid…).
type histChild struct {
	model    string
	labels   labels.Labels // of its first sample, for messages
	line     int           // of its first sample
	buckets  []bucket
	sum      float64
	hasSum   bool
	hasCount bool
}

// bucket is one `_bucket` sample.
type bucket struct {
	le, count float64
	line      int
}

// createdChild is the `_created` sample of one label set.
type createdChild struct {
	model string
	v     float64
}

// valChild is one label set of a counter or gauge.
type valChild struct {
	model string
	group string // gauges: identity without pid, they take the max within a group
	v     float64
	line  int
}

func (c *collector) state(ref sampleRef) *nameState {
	st := c.states[ref.fam][ref.name]
	if st == nil {
		st = &nameState{}
		c.states[ref.fam][ref.name] = st
	}
	return st
}

// run walks every entry of the exposition.
func (c *collector) run(p textparse.Parser) error {
	for {
		et, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &ParseError{Reason: ReasonInvalidExposition, Line: c.lines.next(), Err: err}
		}
		line := c.lines.entry(entryText(p, et))
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			for _, ref := range c.plan.types[string(name)] {
				if !typeCompatible(typ, ref.want) {
					c.state(sampleRef{fam: ref.fam, name: ref.name}).wrongType = string(typ)
				}
			}
		case textparse.EntrySeries:
			_, _, v := p.Series()
			c.sample(p, v, line)
		}
	}
}

// entryText is the part of the parser's current entry that may hold a raw
// line feed (see lineCounter): a sample's series, a HELP, TYPE or UNIT
// line's name; nil for a comment. Native histograms exist only in formats
// Parse never selects.
func entryText(p textparse.Parser, et textparse.Entry) []byte {
	switch et {
	case textparse.EntryType:
		name, _ := p.Type()
		return name
	case textparse.EntryHelp:
		name, _ := p.Help()
		return name
	case textparse.EntryUnit:
		name, _ := p.Unit()
		return name
	case textparse.EntrySeries:
		series, _, _ := p.Series()
		return series
	}
	return nil
}

// sample handles one float sample: a sample of a name the profile does not
// want is skipped, a wanted one goes to its child in every family that reads
// it, and one that cannot be used rejects its model for that family's name.
func (c *collector) sample(p textparse.Parser, v float64, line int) {
	p.Labels(&c.lset)
	refs := c.plan.samples[c.lset.Get(model.MetricNameLabel)]
	if len(refs) == 0 {
		return
	}
	modelName := c.lset.Get(labelModel)
	if err := labelLengthError(c.lset); err != nil {
		c.rejectAll(refs, shownModel(modelName), err, line)
		return
	}
	// A child's identity is every label but the name and le, in the label
	// set's own length-prefixed encoding, which no label value can forge.
	c.key = c.lset.BytesWithoutLabels(c.key, model.MetricNameLabel, labelLE)
	for _, ref := range refs {
		if ref.label != "" && c.lset.Get(ref.label) != ref.value {
			continue
		}
		c.add(ref, modelName, v, line)
	}
}

// rejectAll rejects model, for every family of refs that reads the
// current sample, with a label too long (err).
func (c *collector) rejectAll(refs []sampleRef, model string, err error, line int) {
	for _, ref := range refs {
		if ref.label != "" && c.lset.Get(ref.label) != ref.value {
			continue
		}
		st := c.state(ref)
		if ref.role != roleCreated {
			st.present = true
		}
		st.reject(model, &ParseError{Reason: ReasonLabelTooLong, Line: line, Family: ref.sample, Model: model, Err: err})
	}
}

// labelLengthError describes the first label of ls whose name or value is
// longer than MaxLabelNameLength or MaxLabelValueLength, nil if none is.
// The message shows no more than the start of the name.
func labelLengthError(ls labels.Labels) error {
	var err error
	ls.Range(func(l labels.Label) {
		switch {
		case err != nil:
		case len(l.Name) > MaxLabelNameLength:
			err = fmt.Errorf("label name %q… of %d bytes, over the limit of %d", clip(l.Name, 32), len(l.Name), MaxLabelNameLength)
		case len(l.Value) > MaxLabelValueLength:
			err = fmt.Errorf("label %s: value of %d bytes, over the limit of %d", l.Name, len(l.Value), MaxLabelValueLength)
		}
	})
	return err
}

// shownModel is how a refused model is named in rejections and messages: a
// model_name over MaxLabelValueLength by its first 32 bytes and its length,
// so that neither the rejection nor the log holds the whole value.
func shownModel(model string) string {
	if len(model) <= MaxLabelValueLength {
		return model
	}
	return fmt.Sprintf("%s… (%d bytes)", clip(model, 32), len(model))
}

// clip returns at most the first n bytes of s, cut at a rune boundary and
// made valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "?")
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "?")
}

// add records one sample that belongs to ref's family.
func (c *collector) add(ref sampleRef, modelName string, v float64, line int) {
	st := c.state(ref)
	if ref.role != roleCreated {
		st.present = true
	}
	if _, bad := st.rejected[modelName]; bad {
		return
	}
	var reason string
	var err error
	switch ref.role {
	case roleValue:
		reason, err = c.value(st, c.plan.profile.Families[ref.fam].Kind, modelName, v, line)
	case roleCreated:
		reason, err = c.created(st, modelName, v)
	default:
		reason, err = c.histogram(st, ref.role, modelName, v, line)
	}
	if err != nil {
		st.reject(modelName, &ParseError{Reason: reason, Line: line, Family: ref.sample, Model: modelName, Err: err})
	}
}

// histogram adds one `_bucket`, `_count` or `_sum` sample to its child.
func (c *collector) histogram(st *nameState, r role, modelName string, v float64, line int) (string, error) {
	if st.hist == nil {
		st.hist = make(map[string]*histChild)
	}
	ch := st.hist[string(c.key)]
	if ch == nil {
		ch = &histChild{model: modelName, labels: c.lset, line: line}
		st.hist[string(c.key)] = ch
	}
	switch r {
	case roleBucket:
		le, hasLE := c.lset.Get(labelLE), c.lset.Has(labelLE)
		if !hasLE {
			return ReasonInvalidHistogram, errors.New("bucket without le label")
		}
		edge, err := strconv.ParseFloat(le, 64)
		if err != nil || math.IsNaN(edge) {
			return ReasonInvalidHistogram, fmt.Errorf("bad le %q", le)
		}
		if !validCount(v) {
			return ReasonInvalidValue, fmt.Errorf("bucket le=%q count %v", le, v)
		}
		ch.buckets = append(ch.buckets, bucket{le: edge, count: v, line: line})
	case roleCount:
		if ch.hasCount {
			return ReasonDuplicateSeries, fmt.Errorf("second _count for %s", ch.desc())
		}
		if !validCount(v) {
			return ReasonInvalidValue, fmt.Errorf("_count %v", v)
		}
		ch.hasCount = true
	case roleSum:
		if ch.hasSum {
			return ReasonDuplicateSeries, fmt.Errorf("second _sum for %s", ch.desc())
		}
		// Every histogram a profile names sums latencies or token counts,
		// which cannot be negative.
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return ReasonInvalidValue, fmt.Errorf("_sum %v", v)
		}
		ch.sum, ch.hasSum = v, true
	}
	return "", nil
}

// value records one counter or gauge sample.
func (c *collector) value(st *nameState, kind Kind, modelName string, v float64, line int) (string, error) {
	switch {
	case kind == KindCounter && !validCount(v):
		return ReasonInvalidValue, fmt.Errorf("counter value %v", v)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return ReasonInvalidValue, fmt.Errorf("gauge value %v", v)
	}
	if st.vals == nil {
		st.vals = make(map[string]valChild)
	}
	if _, dup := st.vals[string(c.key)]; dup {
		return ReasonDuplicateSeries, fmt.Errorf("%s seen twice", describe(c.lset))
	}
	ch := valChild{model: modelName, v: v, line: line}
	if kind == KindGauge {
		// Only gauges group children: the same label set but pid.
		ch.group = string(c.lset.BytesWithoutLabels(nil, model.MetricNameLabel, labelLE, labelPID))
	}
	st.vals[string(c.key)] = ch
	return "", nil
}

// created records one `_created` sample.
func (c *collector) created(st *nameState, modelName string, v float64) (string, error) {
	if !validCount(v) {
		return ReasonInvalidValue, fmt.Errorf("_created %v", v)
	}
	if st.created == nil {
		st.created = make(map[string]createdChild)
	}
	if _, dup := st.created[string(c.key)]; dup {
		return ReasonDuplicateSeries, fmt.Errorf("%s seen twice", describe(c.lset))
	}
	st.created[string(c.key)] = createdChild{model: modelName, v: v}
	return "", nil
}

// validCount reports whether v can be a count or a counter value: finite and
// not negative.
func validCount(v float64) bool {
	return v >= 0 && !math.IsInf(v, 1) // NaN fails v >= 0
}

// desc renders the child's labels for messages.
func (ch *histChild) desc() string { return describe(ch.labels) }

// describe renders a series' labels without its name and le, for messages:
// {engine="0", model_name="m"}.
func describe(ls labels.Labels) string {
	var b strings.Builder
	b.WriteByte('{')
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel || l.Name == labelLE {
			return
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	})
	b.WriteByte('}')
	return b.String()
}
