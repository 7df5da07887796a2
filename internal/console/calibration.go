package console

// calibrationPanel is the overview's panel of exact mode's calibration over
// time: per target, model and window, the windows the spans calibrated
// since the exporter started, the share in which every histogram bound
// held, and the histograms' mean absolute attainment error. It prints the
// report's running totals (pipeline.ModelReport.Calibration) and computes
// nothing; it is empty without exact mode.
const calibrationPanel = `{{define "calibration"}}{{if .Exact}}<h2>Calibration</h2>
<div class="scroll"><table id="calibration"><thead><tr><th>target</th><th>model</th><th>window</th><th>windows calibrated</th><th>bounds held</th><th>mean |attainment error|</th></tr></thead><tbody>
{{range $t := .Report.Targets}}{{range $m := .Models}}{{range .Calibration}}<tr class="calibration"><td>{{$t.Name}}</td><td class="model">{{$m.Name}}</td><td>{{window .Nominal}}</td><td>{{num .Windows}}</td><td>{{if .Windows}}{{pq .HeldShare}}%{{else}}–{{end}}</td><td>{{if .Errors}}{{num .MeanAbsError}}{{else}}–{{end}}</td></tr>
{{end}}{{end}}{{end}}</tbody></table></div>
<p class="note">Since the exporter started: in each window whose spans numbered vLLM's finished requests, the histograms' bounds were compared with the spans' exact values. Bounds held below 100% means spans that contradict vLLM's own histograms (the log names the bounds); the mean error is how far the histograms' attainment estimates were from the exact attainment. The /metrics counters are vllm_slo_calibration_windows_total, _bounds_held_total, _attainment_abs_error_sum and _attainment_errors_total.</p>{{end}}{{end}}`
