package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Label names with a meaning to Parse.
const (
	labelModel = "model_name"
	labelPID   = "pid"
	labelLE    = "le"
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
//     present is used (Snapshot.Found); the others are ignored.
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
// Any error returns a *ParseError and no snapshot.
func Parse(body []byte, contentType string, p Profile, t time.Time) (*Snapshot, error) {
	if contentType == "" {
		contentType = "text/plain; version=0.0.4"
	}
	// Only a type naming protobuf can parse as the protobuf media type; the
	// check skips mime.ParseMediaType's cost on every other scrape.
	if strings.Contains(strings.ToLower(contentType), "protobuf") {
		if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "application/vnd.google.protobuf" {
			return nil, &ParseError{Reason: ReasonInvalidExposition,
				Err: fmt.Errorf("unsupported Content-Type %q", contentType)}
		}
	}
	// The classic parser appends a newline to a body that lacks one, which
	// would move the series into another array; doing it here keeps every
	// slice the parser returns inside base, so offsets (and line numbers) can
	// be computed from capacities.
	base := body
	if len(base) > 0 && base[len(base)-1] != '\n' {
		base = append(base[:len(base):len(base)], '\n')
	}
	parser, err := textparse.New(base, contentType, labels.NewSymbolTable(), textparse.ParserOptions{
		FallbackContentType: "text/plain",
	})
	if parser == nil {
		// err is only a warning when a parser came back (e.g. a fallback).
		return nil, &ParseError{Reason: ReasonInvalidExposition, Err: fmt.Errorf("content type %q: %w", contentType, err)}
	}
	c := newCollector(planFor(p), base)
	if err := c.run(parser); err != nil {
		return nil, err
	}
	return c.assemble(t)
}

// collector gathers the wanted samples of one exposition.
type collector struct {
	plan   *plan
	base   []byte
	states [][]*nameState       // [family][name]
	off    int                  // byte offset of the last entry in base, -1 before any
	lset   labels.Labels        // scratch: the label set, on the slow path
	labels []rawLabel           // scratch: the current sample's labels, sorted
	key    []byte               // scratch: identity of a child without le
	group  []byte               // scratch: identity without le and pid
	fast   lastBucket           // the previous bucket line, for sameChild
	model  string               // the last model_name made a string, for modelName
	keys   map[string]string    // identities made strings, for keyString
	ident  lastIdentity         // what key and group were computed from
	idents map[string]identInfo // label sets without le seen, by raw bytes
}

// lastIdentity remembers the raw label bytes (after the name) that
// c.key and c.group were last computed from, so that the next line
// with the same labels (a child's `_count`, `_sum`, `_created`) skips
// scanning, sorting and key building.
type lastIdentity struct {
	valid         bool
	rest          []byte // the label bytes, a slice of the body
	model         []byte
	hasLE         bool
	leOff, leSize int // where le sits in rest
}

// set records the identity just computed for series (whose name is raw);
// only labels scanned from the raw bytes (plain) can be matched by bytes.
func (li *lastIdentity) set(plain bool, series, raw, model, le []byte, hasLE bool) {
	*li = lastIdentity{}
	if !plain {
		return
	}
	rest := series[len(raw):]
	if hasLE {
		off := cap(rest) - cap(le)
		if off < 0 || off+len(le) > len(rest) {
			return
		}
		li.leOff, li.leSize = off, len(le)
	}
	li.valid, li.rest, li.model, li.hasLE = true, rest, model, hasLE
}

// reuse returns the remembered model and le (as a slice of series) when
// series has the same label bytes as the remembered line and a plain name:
// scanLabels would then read the same pairs.
func (li *lastIdentity) reuse(series, raw []byte) (model, le []byte, hasLE, ok bool) {
	rest := series[len(raw):]
	if !li.valid || !bytes.Equal(rest, li.rest) || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, nil, false, false
	}
	if li.hasLE {
		le = rest[li.leOff : li.leOff+li.leSize]
	}
	return li.model, le, li.hasLE, true
}

// modelName returns b as a string, reusing the previous one when equal: an
// exposition names few models, on every line.
func (c *collector) modelName(b []byte) string {
	if string(b) != c.model {
		c.model = string(b)
	}
	return c.model
}

// keyString returns c.key as a string, the same string for the same bytes:
// the few label sets of an exposition recur in every family.
func (c *collector) keyString() string { return c.intern(c.key) }

// intern returns b as a string, the same string for the same bytes.
func (c *collector) intern(b []byte) string {
	if k, ok := c.keys[string(b)]; ok {
		return k
	}
	if c.keys == nil {
		c.keys = make(map[string]string)
	}
	k := string(b)
	c.keys[k] = k
	return k
}

// identInfo is what identity computed from one set of raw label bytes
// without le: the interned key and group, and the model_name bytes.
type identInfo struct {
	key, group string
	model      []byte
}

// maxIdents bounds the label sets remembered in collector.idents.
const maxIdents = 4096

// lookupIdent sets c.key and c.group from the label bytes of a plain series
// seen before (without le), returning its model_name.
func (c *collector) lookupIdent(series, raw []byte) ([]byte, bool) {
	info, ok := c.idents[string(series[len(raw):])]
	if !ok || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	c.key = append(c.key[:0], info.key...)
	c.group = append(c.group[:0], info.group...)
	return info.model, true
}

// rememberIdent records the identity just computed for a plain series
// without le, for lookupIdent.
func (c *collector) rememberIdent(series, raw, model []byte) {
	if len(c.idents) >= maxIdents {
		return
	}
	if c.idents == nil {
		c.idents = make(map[string]identInfo)
	}
	c.idents[string(series[len(raw):])] = identInfo{key: c.keyString(), group: c.intern(c.group), model: model}
}

// bucketHint is the capacity for a new child's buckets of st: the most an
// earlier child had (children of one name share a layout), 32 before any.
func bucketHint(st *nameState) int {
	if st.maxLen == 0 {
		return 32
	}
	return st.maxLen
}

func newCollector(pl *plan, base []byte) *collector {
	c := &collector{plan: pl, base: base, off: -1}
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
	maxLen    int // the most buckets a child of this name has had so far
}

// histChild is one label set of a histogram (one engine, one pid…).
type histChild struct {
	model    string
	key      string // the child's identity (see identity), for messages
	buckets  []bucket
	sum      float64
	hasSum   bool
	hasCount bool
}

type bucket struct {
	le, count float64
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
			return &ParseError{Reason: ReasonInvalidExposition, Line: c.nextLine(), Err: err}
		}
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			c.track(name)
			ref, ok := c.plan.types[string(name)]
			if ok && !typeCompatible(typ, ref.want) {
				c.state(sampleRef{fam: ref.fam, name: ref.name}).wrongType = string(typ)
			}
		case textparse.EntryHelp:
			name, _ := p.Help()
			c.track(name)
		case textparse.EntryUnit:
			name, _ := p.Unit()
			c.track(name)
		case textparse.EntryComment:
			c.track(p.Comment())
		case textparse.EntrySeries:
			series, _, v := p.Series()
			c.track(series)
			if err := c.sample(p, series, v); err != nil {
				return err
			}
		}
	}
}

// sample handles one float sample, cheaply skipping unwanted ones: the name is
// read from the raw series bytes and looked up before any label is read, and
// the labels of wanted samples are scanned from the raw bytes too when they
// are in the plain form. A bucket line that differs from the previous bucket
// line only in its `le` value goes straight to that line's child.
func (c *collector) sample(p textparse.Parser, series []byte, v float64) error {
	if le, ok := c.sameChild(series); ok {
		return c.bucket(c.fast.ref, c.fast.st, c.fast.child, le, true, v)
	}
	c.fast.child = nil
	var ref sampleRef
	var ok bool
	var modelB, le []byte
	var hasLE, cached bool
	raw, plain := rawName(series)
	if plain {
		if ref, ok = c.plan.samples[string(raw)]; !ok {
			return nil
		}
		modelB, le, hasLE, cached = c.ident.reuse(series, raw)
		if !cached {
			if modelB, cached = c.lookupIdent(series, raw); cached {
				c.ident.set(true, series, raw, modelB, nil, false)
			}
		}
		if !cached {
			c.labels, plain = scanLabels(series, c.labels)
			if !plain {
				p.Labels(&c.lset)
				c.labels = fromLabelSet(c.lset, c.labels)
			}
		}
	} else {
		// A quoted name (`{"vllm:x", ...}`): only the label set knows it.
		p.Labels(&c.lset)
		if ref, ok = c.plan.samples[c.lset.Get(labels.MetricName)]; !ok {
			return nil
		}
		c.labels = fromLabelSet(c.lset, c.labels)
	}
	if !cached {
		sortLabels(c.labels)
		modelB, le, hasLE = c.identity(c.labels)
		c.ident.set(plain, series, raw, modelB, le, hasLE)
		if plain && !hasLE {
			c.rememberIdent(series, raw, modelB)
		}
	}
	st := c.state(ref)
	kind := c.plan.profile.Families[ref.fam].Kind
	lineErr := func(reason, format string, args ...any) error {
		return &ParseError{Reason: reason, Line: c.line(), Family: ref.sample, Model: string(modelB),
			Err: fmt.Errorf(format, args...)}
	}
	switch ref.role {
	case roleBucket, roleCount, roleSum:
		if st.hist == nil {
			st.hist = make(map[string]*histChild)
		}
		ch := st.hist[string(c.key)]
		if ch == nil {
			key := c.keyString()
			ch = &histChild{model: c.modelName(modelB), key: key, buckets: make([]bucket, 0, bucketHint(st))}
			st.hist[key] = ch
		}
		st.present = true
		switch ref.role {
		case roleBucket:
			if err := c.bucket(ref, st, ch, le, hasLE, v); err != nil {
				return err
			}
			if plain && hasLE {
				c.remember(ref, st, ch, series, le)
			}
		case roleCount:
			if ch.hasCount {
				return lineErr(ReasonDuplicateSeries, "second _count for %s", ch.desc())
			}
			if !validCount(v) {
				return lineErr(ReasonInvalidValue, "_count %v", v)
			}
			ch.hasCount = true
		case roleSum:
			if ch.hasSum {
				return lineErr(ReasonDuplicateSeries, "second _sum for %s", ch.desc())
			}
			// Every histogram a profile names sums latencies or token
			// counts, which cannot be negative.
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return lineErr(ReasonInvalidValue, "_sum %v", v)
			}
			ch.sum, ch.hasSum = v, true
		}
	case roleValue:
		switch {
		case kind == KindCounter && !validCount(v):
			return lineErr(ReasonInvalidValue, "counter value %v", v)
		case math.IsNaN(v) || math.IsInf(v, 0):
			return lineErr(ReasonInvalidValue, "gauge value %v", v)
		}
		if st.vals == nil {
			st.vals = make(map[string]valChild)
		}
		if _, dup := st.vals[string(c.key)]; dup {
			return lineErr(ReasonDuplicateSeries, "%s seen twice", describeKey(string(c.key)))
		}
		ch := valChild{model: c.modelName(modelB), v: v}
		if kind == KindGauge {
			ch.group = string(c.group) // only gauges group children
		}
		st.vals[c.keyString()] = ch
		st.present = true
	case roleCreated:
		if !validCount(v) {
			return lineErr(ReasonInvalidValue, "_created %v", v)
		}
		if st.created == nil {
			st.created = make(map[string]createdChild)
		}
		if _, dup := st.created[string(c.key)]; dup {
			return lineErr(ReasonDuplicateSeries, "%s seen twice", describeKey(string(c.key)))
		}
		st.created[c.keyString()] = createdChild{model: c.modelName(modelB), v: v}
	}
	return nil
}

// bucket adds one `_bucket` sample to its child.
func (c *collector) bucket(ref sampleRef, st *nameState, ch *histChild, le []byte, hasLE bool, v float64) error {
	if !hasLE {
		return c.bucketErr(ref, ch, ReasonInvalidHistogram, "bucket without le label")
	}
	edge, err := parseLE(le)
	if err != nil || math.IsNaN(edge) {
		return c.bucketErr(ref, ch, ReasonInvalidHistogram, "bad le %q", le)
	}
	if !validCount(v) {
		return c.bucketErr(ref, ch, ReasonInvalidValue, "bucket le=%q count %v", le, v)
	}
	ch.buckets = append(ch.buckets, bucket{le: edge, count: v})
	st.maxLen = max(st.maxLen, len(ch.buckets))
	return nil
}

// bucketErr is the error of a bad bucket line (kept out of bucket, which
// runs for nearly every line of an exposition).
func (c *collector) bucketErr(ref sampleRef, ch *histChild, reason, format string, args ...any) error {
	return &ParseError{Reason: reason, Line: c.line(), Family: ref.sample, Model: ch.model,
		Err: fmt.Errorf(format, args...)}
}

// lastBucket is the previous bucket line read on the plain path: its raw
// bytes before and after the `le` value, and where it went.
type lastBucket struct {
	ref      sampleRef
	st       *nameState
	child    *histChild // nil when there is no usable previous line
	pre, suf []byte     // slices of the exposition body
}

// remember records a bucket line whose labels were scanned from its raw bytes
// (le is a slice of series) for sameChild.
func (c *collector) remember(ref sampleRef, st *nameState, ch *histChild, series, le []byte) {
	start := cap(series) - cap(le)
	if start < 0 || start+len(le) > len(series) {
		return
	}
	c.fast = lastBucket{ref: ref, st: st, child: ch, pre: series[:start], suf: series[start+len(le):]}
}

// sameChild reports whether series is the previous bucket line with another
// `le` value, which it returns. The rest of the bytes being equal (name and
// every other label, plain text without escapes), the line has the same
// sample name and the same child; an `le` value holding no quote or backslash
// cannot change where any label starts or ends.
func (c *collector) sameChild(series []byte) ([]byte, bool) {
	f := &c.fast
	if f.child == nil {
		return nil, false
	}
	n := len(series) - len(f.pre) - len(f.suf)
	if n < 0 || !bytes.HasPrefix(series, f.pre) || !bytes.HasSuffix(series, f.suf) {
		return nil, false
	}
	le := series[len(f.pre) : len(f.pre)+n]
	for _, b := range le {
		if b == '"' || b == '\\' {
			return nil, false
		}
	}
	return le, true
}

// validCount reports whether v can be a count or a counter value: finite and
// not negative.
func validCount(v float64) bool {
	return v >= 0 && !math.IsInf(v, 1) // NaN fails v >= 0
}

// rawName returns the metric name at the start of a series' raw bytes, or false
// when the name is quoted or inside the braces and needs the label set.
func rawName(series []byte) ([]byte, bool) {
	if len(series) == 0 || series[0] == '{' || series[0] == '"' {
		return nil, false
	}
	// A plain loop: bytes.IndexAny builds its byte set on every call, which
	// showed in profiles since every sample of the body comes through here.
	for i, b := range series {
		if b == '{' || b == ' ' || b == '\t' {
			return series[:i], true
		}
	}
	return series, true
}

// track remembers where the current entry starts. Slices returned by the
// parser share base's array, so their offset is the difference in capacity.
func (c *collector) track(b []byte) {
	if off := cap(c.base) - cap(b); off >= 0 && off <= len(c.base) && b != nil {
		c.off = off
	}
}

// line is the 1-based line of the current entry.
func (c *collector) line() int {
	if c.off < 0 {
		return 0
	}
	return bytes.Count(c.base[:c.off], []byte("\n")) + 1
}

// nextLine is the line a parser error is on: the first non-blank line after
// the last entry read.
func (c *collector) nextLine() int {
	start := 0
	if c.off >= 0 {
		i := bytes.IndexByte(c.base[c.off:], '\n')
		if i < 0 {
			return c.line()
		}
		start = c.off + i + 1
	}
	line := bytes.Count(c.base[:start], []byte("\n")) + 1
	for rest := c.base[start:]; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 || len(bytes.TrimSpace(rest[:i])) > 0 {
			break
		}
		rest = rest[i+1:]
	}
	return line
}
