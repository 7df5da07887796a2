package otlp

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// FuzzScanExport checks scanExport against pdata's decoder on arbitrary
// bytes: it never panics; whatever pdata decodes, it scans too (only
// groups and deeper nesting than maxNesting may be refused), and it counts
// the same spans, so the budget weighs what will be decoded.
func FuzzScanExport(f *testing.F) {
	good, _ := export(testSpan{"a", time.Second, 1}, testSpan{"b", 2 * time.Second, 2}).MarshalProto()
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := scanExport(body)
		req := ptraceotlp.NewExportRequest()
		if req.UnmarshalProto(body) != nil {
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "nested") || strings.Contains(err.Error(), "OTLP does not use") {
				return
			}
			t.Fatalf("pdata decodes %x, scanExport refuses it: %v", body, err)
		}
		if want := req.Traces().SpanCount(); s.spans != want {
			t.Fatalf("scanExport counts %d spans, pdata decodes %d", s.spans, want)
		}
	})
}
