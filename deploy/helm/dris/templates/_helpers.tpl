{{/* Names and labels of the dris chart. */}}

{{- define "dris.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dris.fullname" -}}
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

{{- define "dris.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dris.labels" -}}
helm.sh/chart: {{ include "dris.chart" . }}
{{ include "dris.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dris
{{- end }}

{{- define "dris.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dris.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one role's objects: call with (dict "root" $ "role" "api"). */}}
{{- define "dris.roleLabels" -}}
{{ include "dris.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "dris.roleSelectorLabels" -}}
{{ include "dris.selectorLabels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "dris.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dris.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dris.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "dris.secretName" -}}
{{- default (include "dris.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The roles, in a fixed order. */}}
{{- define "dris.roles" -}}
api indexer anchorer
{{- end }}

{{/* Values that the chart cannot default: checked once, with a message saying what to set. */}}
{{- define "dris.validate" -}}
{{- if not .Values.chain.rpcUrl }}
{{- fail "chain.rpcUrl is required: the EVM JSON-RPC endpoint to anchor on (see docs/operations.md#kubernetes-helm)" }}
{{- end }}
{{- if not (regexMatch "^0x[0-9a-fA-F]{40}$" (toString .Values.chain.contractAddress)) }}
{{- fail "chain.contractAddress is required: the anchor contract, deployed once with `dris chain deploy` (0x + 40 hex digits)" }}
{{- end }}
{{- if and (not .Values.secrets.existingSecret) (not (regexMatch "^(0x)?[0-9a-fA-F]{64}$" (toString .Values.secrets.anchorerKey))) }}
{{- fail "secrets.anchorerKey (0x + 64 hex digits) or secrets.existingSecret is required: the anchorer's signing key" }}
{{- end }}
{{- if and .Values.secrets.adminToken (lt (len .Values.secrets.adminToken) 32) }}
{{- fail "secrets.adminToken must be at least 32 bytes (e.g. openssl rand -base64 32)" }}
{{- end }}
{{- end }}
