{{- define "gpulab.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpulab.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: web, worker, beat, collector-<shard>, migrate. */}}
{{- define "gpulab.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gpulab.secretName" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecret }}{{- else -}}{{ include "gpulab.fullname" . }}{{- end -}}
{{- end -}}

{{/* Pods restart when the settings or the chart-made Secret change. */}}
{{- define "gpulab.podAnnotations" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end -}}

{{/* What every portal pod shares: settings from the ConfigMap, secrets as files, a writable /tmp. */}}
{{- define "gpulab.podSpec" -}}
serviceAccountName: {{ include "gpulab.fullname" .root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: secrets
    secret:
      secretName: {{ include "gpulab.secretName" .root }}
      defaultMode: 0440
  - name: tmp
    emptyDir: {}
{{- end -}}

{{- define "gpulab.container" -}}
image: {{ printf "%s:%s" .root.Values.image.repository .root.Values.image.tag | quote }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
securityContext:
  {{- toYaml .root.Values.securityContext | nindent 2 }}
envFrom:
  - configMapRef:
      name: {{ include "gpulab.fullname" .root }}
env:
  - {name: SECRET_KEY_FILE, value: /run/gpulab-secrets/secret_key}
  - {name: CREDENTIAL_KEYS_FILE, value: /run/gpulab-secrets/credential_keys}
  - {name: DATABASE_URL_FILE, value: /run/gpulab-secrets/database_url}
  - {name: REDIS_URL_FILE, value: /run/gpulab-secrets/redis_url}
  - {name: METRICS_TOKEN_FILE, value: /run/gpulab-secrets/metrics_token}
  {{- if .root.Values.signOnSecrets }}
  - {name: OIDC_CLIENT_SECRET_FILE, value: /run/gpulab-secrets/oidc_client_secret}
  - {name: LDAP_BIND_PASSWORD_FILE, value: /run/gpulab-secrets/ldap_bind_password}
  {{- end }}
  {{- range $name, $value := .env }}
  - {name: {{ $name }}, value: {{ $value | quote }}}
  {{- end }}
volumeMounts:
  - {name: secrets, mountPath: /run/gpulab-secrets, readOnly: true}
  - {name: tmp, mountPath: /tmp}
resources:
  {{- toYaml .resources | nindent 2 }}
{{- end -}}
