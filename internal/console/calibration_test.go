package console

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// TestCalibrationPanel: in exact mode the overview prints each model's
// calibration totals as the report holds them (windows calibrated, share
// of bounds held, mean absolute attainment error); without exact mode
// there is no panel.
func TestCalibrationPanel(t *testing.T) {
	rep := &pipeline.Report{Time: start, Targets: []pipeline.TargetReport{{Name: "gpu0", Tried: true, Up: true, Models: []pipeline.ModelReport{{
		Name:        "m",
		Traces:      []traces.Result{{Nominal: time.Hour, Covered: true}},
		Calibration: []traces.CalibrationTotal{{Nominal: time.Hour, Windows: 200, Held: 199, AbsErrorSum: 0.5, Errors: 400}},
	}}}}}
	c := New(Options{Report: func() *pipeline.Report { return rep }})
	_, body := get(t, c, "/")
	i := strings.Index(body, `<table id="calibration">`)
	if i < 0 {
		t.Fatalf("no calibration panel in exact mode:\n%s", body)
	}
	row := body[i:]
	row = row[:strings.Index(row, "</table>")]
	for _, want := range []string{"<td>gpu0</td>", ">m</td>", "<td>1h</td>", "<td>200</td>", "<td>99.5%</td>", "<td>0.00125</td>"} {
		if !strings.Contains(row, want) {
			t.Errorf("panel lacks %q:\n%s", want, row)
		}
	}
	rep.Targets[0].Models[0].Traces, rep.Targets[0].Models[0].Calibration = nil, nil
	if _, body := get(t, c, "/"); strings.Contains(body, `id="calibration"`) {
		t.Error("a calibration panel without exact mode")
	}
}
