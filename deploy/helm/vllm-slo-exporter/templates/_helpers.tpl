{{/* The chart's name, or nameOverride. */}}
{{- define "vllm-slo-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: fullnameOverride, or the release name with the chart's name. */}}
{{- define "vllm-slo-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "vllm-slo-exporter.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "vllm-slo-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "vllm-slo-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The labels of this chart's vLLM pods. */}}
{{- define "vllm-slo-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-slo-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: vllm
{{- end }}

{{/* What selects the pods that carry the sidecar: this chart's vLLM pods, or podSelector. */}}
{{- define "vllm-slo-exporter.podSelector" -}}
{{- if .Values.vllm.enabled }}
{{- include "vllm-slo-exporter.selectorLabels" . }}
{{- else }}
{{- if not .Values.podSelector }}
{{- fail "vllm.enabled=false needs podSelector: the labels of the vLLM pods that carry the sidecar" }}
{{- end }}
{{- toYaml .Values.podSelector }}
{{- end }}
{{- end }}

{{/* Where the ConfigMap is mounted, and the file --config.file names in it. */}}
{{- define "vllm-slo-exporter.configDir" -}}
/etc/vllm-slo-exporter
{{- end }}
{{- define "vllm-slo-exporter.configKey" -}}
config.yaml
{{- end }}
{{- define "vllm-slo-exporter.stateDir" -}}
/var/lib/vllm-slo-exporter
{{- end }}

{{/* The text of the exporter's configuration. */}}
{{- define "vllm-slo-exporter.config" -}}
{{- if .Values.exporter.configYAML }}
{{- .Values.exporter.configYAML }}
{{- else }}
{{- toYaml .Values.exporter.config }}
{{- end }}
{{- end }}

{{- define "vllm-slo-exporter.image" -}}
{{- printf "%s:%s" .Values.exporter.image.repository (default .Chart.AppVersion .Values.exporter.image.tag) }}
{{- end }}

{{/*
The sidecar container, one item of a pod's containers. The Deployment uses it,
and NOTES.txt prints it for another chart's pods when vllm.enabled=false.
*/}}
{{- define "vllm-slo-exporter.container" -}}
- name: slo-exporter
  image: {{ include "vllm-slo-exporter.image" . }}
  imagePullPolicy: {{ .Values.exporter.image.pullPolicy }}
  args:
    - --config.file={{ include "vllm-slo-exporter.configDir" . }}/{{ include "vllm-slo-exporter.configKey" . }}
    - --web.listen-address=:{{ .Values.exporter.port }}
    - --web.probe-listen-address=:{{ .Values.exporter.probePort }}
    {{- if .Values.exporter.enableLifecycle }}
    - --web.enable-lifecycle
    {{- end }}
    {{- range .Values.exporter.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: slo-metrics
      containerPort: {{ .Values.exporter.port }}
    - name: slo-probes
      containerPort: {{ .Values.exporter.probePort }}
  livenessProbe:
    httpGet:
      path: /-/healthy
      port: slo-probes
    periodSeconds: 30
  readinessProbe:
    httpGet:
      path: /-/ready
      port: slo-probes
    periodSeconds: 10
  resources:
    {{- toYaml .Values.exporter.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.exporter.securityContext | nindent 4 }}
  volumeMounts:
    - name: vllm-slo-exporter-config
      mountPath: {{ include "vllm-slo-exporter.configDir" . }}
      readOnly: true
    - name: vllm-slo-exporter-state
      mountPath: {{ include "vllm-slo-exporter.stateDir" . }}
{{- end }}

{{/* The sidecar's volumes, items of a pod's volumes. */}}
{{- define "vllm-slo-exporter.volumes" -}}
- name: vllm-slo-exporter-config
  configMap:
    name: {{ include "vllm-slo-exporter.fullname" . }}
- name: vllm-slo-exporter-state
  {{- if .Values.exporter.state.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.exporter.state.existingClaim }}
  {{- else }}
  emptyDir:
    sizeLimit: {{ .Values.exporter.state.sizeLimit }}
  {{- end }}
{{- end }}
