{{- define "policy-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "policy-scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /* The labels Helm's conventions add; the kustomize base has none of them. */}}
{{- define "policy-scheduler.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "policy-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "policy-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "policy-scheduler.labels" -}}
app.kubernetes.io/name: {{ include "policy-scheduler.name" . }}
app.kubernetes.io/part-of: policy-scheduler
{{ include "policy-scheduler.helmLabels" . }}
{{- end }}

{{- define "policy-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "policy-scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "policy-scheduler.args" -}}
{{- $args := list "run" }}
{{- if .Values.leaderElection.enabled }}
{{- $args = concat $args (list "--lease-namespace" .Release.Namespace "--lease-name" .Values.leaderElection.leaseName) }}
{{- else }}
{{- if gt (int .Values.replicas) 1 }}
{{- fail "leaderElection.enabled=false needs replicas: 1 (two schedulers without a lease would bind the same pods)" }}
{{- end }}
{{- $args = append $args "--no-leader-elect" }}
{{- end }}
{{- $args = concat $args (list "--secure-port" (toString .Values.securePort)) }}
{{- /* `--set extraArgs={--event-qps,100}` gives a number: container args are strings. */}}
{{- range .Values.extraArgs }}
{{- $args = append $args (toString .) }}
{{- end }}
{{- $args | toJson }}
{{- end }}
