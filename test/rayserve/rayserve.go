// Package rayserve re-renders the simulator's exposition as Ray Serve's
// metrics agent serves vLLM's, so that the tests can read the simulator
// with the ray-vllm profile. It is test harness: no product package imports
// it.
package rayserve

import (
	"bytes"
	"sort"
	"strings"
)

// labelEscaper escapes a label value for the text exposition format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Names is how Ray's metrics agent spells vLLM's family names.
type Names int

// The two spellings of vLLM's names under Ray.
const (
	// Underscore is vLLM from about 0.10, which replaces the colon for
	// OpenTelemetry before Ray adds its namespace: ray_vllm_e2e_request_latency_seconds.
	Underscore Names = iota
	// Colon is older vLLM, whose names keep the colon: ray_vllm:e2e_request_latency_seconds.
	Colon
)

// prefix is what replaces "vllm:" at the start of a family name.
func (n Names) prefix() string {
	if n == Colon {
		return "ray_vllm:"
	}
	return "ray_vllm_"
}

// Reexport re-renders a classic text exposition of vLLM (the SingleProcess
// format) as Ray's metrics agent serves it when vLLM runs under Ray Serve:
// every vLLM family name gains Ray's namespace in the given spelling, every
// vLLM series gains Ray's labels (replica and worker identity, node, session,
// Ray version) from tags, and the `_created` families, which Ray does not
// export, are left out. Other families (python_, process_, http_) are kept as
// they are. It lets the simulator speak to a target configured with the
// ray-vllm profile; Ray's compatibility gauges for counters
// (RAY_EXPORT_COUNTER_AS_GAUGE, on by default) are not rendered.
func Reexport(body []byte, names Names, tags map[string]string) []byte {
	extra := rayLabels(tags)
	var out bytes.Buffer
	skipping := false
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		text := string(line)
		if strings.HasPrefix(text, "# ") {
			fields := strings.Fields(text)
			if len(fields) >= 3 {
				skipping = strings.HasPrefix(fields[2], "vllm:") && strings.HasSuffix(fields[2], "_created")
			}
			if !skipping {
				out.WriteString(strings.Replace(text, " vllm:", " "+names.prefix(), 1))
			}
			continue
		}
		if skipping || !strings.HasPrefix(text, "vllm:") {
			if !skipping {
				out.WriteString(text)
			}
			continue
		}
		out.WriteString(rayLine(text, names.prefix(), extra))
	}
	return out.Bytes()
}

// rayLabels renders tags as label pairs in name order, each followed by a comma.
func rayLabels(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + `="` + labelEscaper.Replace(tags[k]) + `",`)
	}
	return b.String()
}

// rayLine renames one vLLM sample line and adds Ray's labels to it.
func rayLine(line, prefix, extra string) string {
	line = prefix + strings.TrimPrefix(line, "vllm:")
	if extra == "" {
		return line
	}
	if i := strings.IndexByte(line, '{'); i >= 0 {
		return line[:i+1] + extra + line[i+1:]
	}
	i := strings.IndexByte(line, ' ')
	if i < 0 {
		return line
	}
	return line[:i] + "{" + strings.TrimSuffix(extra, ",") + "}" + line[i:]
}
