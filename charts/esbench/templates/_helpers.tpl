{{/*
Chart name (nameOverride wins), at most 63 characters.
*/}}
{{- define "esbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: fullnameOverride, or RELEASE-NAME unless the release
name already contains the chart name. At most 63 characters (some name fields are limited).
*/}}
{{- define "esbench.fullname" -}}
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

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "esbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object of the release.
*/}}
{{- define "esbench.labels" -}}
helm.sh/chart: {{ include "esbench.chart" . }}
{{ include "esbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: esbench
{{- end }}

{{/*
Labels that select the operator pod (immutable in a Deployment: never add the version here).
*/}}
{{- define "esbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "esbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels the operator puts on every pod an Experiment or a sweep creates, Elasticsearch's and
Rally's (operator/esbench/planning/manifests.py, labels()): the NetworkPolicy selects them.
*/}}
{{- define "esbench.experimentPodLabels" -}}
app.kubernetes.io/part-of: esbench
app.kubernetes.io/managed-by: esbench-operator
{{- end }}

{{/*
The operator's ServiceAccount. Without serviceAccount.create, an existing one must be named:
falling back to "default" would hand the operator's permissions to every pod that uses it.
*/}}
{{- define "esbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "esbench.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The subjects of every (Cluster)RoleBinding: the operator's ServiceAccount only.
*/}}
{{- define "esbench.subjects" -}}
- kind: ServiceAccount
  name: {{ include "esbench.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The operator image; the Rally Jobs use the same one unless operator.rallyImage is set.
*/}}
{{- define "esbench.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "esbench.rallyImage" -}}
{{- default (include "esbench.image" .) .Values.operator.rallyImage }}
{{- end }}

{{/*
What the operator does in each namespace it watches (see operator/esbench/controller/kube.py,
lifecycle.py, handlers.py). Shared by the ClusterRole (all namespaces) and the per-namespace
Roles. Deliberately nothing on Secrets: the Rally pod gets ECK's credentials by reference
(secret volumes), which the kubelet resolves, not the operator.
*/}}
{{- define "esbench.operatorRules" -}}
# Experiments: read and watch them (kopf), patch them (kopf keeps its progress in
# annotations), delete them (ttlSecondsAfterFinished), write their status.
- apiGroups: [esbench.io]
  resources: [experiments]
  verbs: [get, list, watch, patch, delete]
- apiGroups: [esbench.io]
  resources: [experiments/status]
  verbs: [patch]
# ExperimentSweeps: read and watch them (kopf), write their status; their runs are
# Experiments the operator creates.
- apiGroups: [esbench.io]
  resources: [experimentsweeps]
  verbs: [get, list, watch, patch]
- apiGroups: [esbench.io]
  resources: [experimentsweeps/status]
  verbs: [patch]
- apiGroups: [esbench.io]
  resources: [experiments]
  verbs: [create]
# ExperimentSchedules: read and watch them, write their status; each tick creates an Experiment
# or a sweep, and runs beyond the history limits (or replaced) are deleted.
- apiGroups: [esbench.io]
  resources: [experimentschedules]
  verbs: [get, list, watch, patch]
- apiGroups: [esbench.io]
  resources: [experimentschedules/status]
  verbs: [patch]
- apiGroups: [esbench.io]
  resources: [experimentsweeps]
  verbs: [create, delete]
# Children carry an ownerReference to their Experiment, sweep or schedule with
# blockOwnerDeletion: true; where the OwnerReferencesPermissionEnforcement admission plugin is on
# (e.g. OpenShift), setting it requires update on the owner's finalizers. It grants no other access.
- apiGroups: [esbench.io]
  resources: [experiments/finalizers, experimentsweeps/finalizers, experimentschedules/finalizers]
  verbs: [update]
# The ECK cluster of each Experiment, and the clusters a sweep shares between its runs.
- apiGroups: [elasticsearch.k8s.elastic.co]
  resources: [elasticsearches]
  verbs: [create, get, list, watch, delete]
# The Rally Job, its pod and the pod's log (the race report).
- apiGroups: [batch]
  resources: [jobs]
  verbs: [create, get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
# The full race.json, kept beside the Experiment; read back to record it in the results store.
- apiGroups: [""]
  resources: [configmaps]
  verbs: {{ if (include "esbench.resultsStore" . | fromYaml).url }}[create, get]{{ else }}[create]{{ end }}
# Events on Experiments (kopf.event and kopf's own handler errors); listed for ECK's reason
# when it marks a cluster Invalid.
- apiGroups: [""]
  resources: [events]
  verbs: [create, list]
{{- end }}

{{/*
What is read cluster-wide, whatever the namespaces: CRDs, for kopf (to notice resources
appearing, e.g. ECK installed after esbench), and the nodes a race ran on, for its
reproducibility record. API discovery (/api, /apis) and /version need no grant.
*/}}
{{- define "esbench.clusterRules" -}}
# kopf: notice CustomResourceDefinitions being added or removed.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [list, watch]
# The reproducibility record: instance type, kernel and capacity of the nodes of a race's pods.
- apiGroups: [""]
  resources: [nodes]
  verbs: [get]
{{- end }}

{{/* The name of the results store the chart creates (resultsStore.create): an ECK cluster name. */}}
{{- define "esbench.resultsStoreCluster" -}}
{{- printf "%s-results" (include "esbench.fullname" .) | trunc 36 | trimSuffix "-" }}
{{- end }}

{{/*
The results store the operator writes to, as YAML (url, username, passwordSecret, caSecret): the
values' own, or those of the cluster the chart creates, by ECK's names for its Service and
Secrets. An empty url: no store.
*/}}
{{- define "esbench.resultsStore" -}}
{{- $values := .Values.resultsStore }}
{{- if $values.create.enabled }}
{{- if $values.url }}
{{- fail "resultsStore: set url (an existing store) or create.enabled (a store the chart creates), not both" }}
{{- end }}
{{- $cluster := include "esbench.resultsStoreCluster" . }}
url: {{ printf "https://%s-es-http.%s.svc:9200" $cluster .Release.Namespace }}
username: elastic
passwordSecret: {name: {{ $cluster }}-es-elastic-user, key: elastic}
caSecret: {name: {{ $cluster }}-es-http-certs-public, key: ca.crt}
{{- else }}
{{- pick $values "url" "username" "passwordSecret" "caSecret" | toYaml }}
{{- end }}
{{- end }}

{{/* The port of the results store's URL (its scheme's default when it names none). */}}
{{- define "esbench.resultsStorePort" -}}
{{- $url := urlParse (include "esbench.resultsStore" . | fromYaml).url -}}
{{- $host := splitList ":" $url.host -}}
{{- if gt (len $host) 1 }}{{ last $host }}{{ else if eq $url.scheme "https" }}443{{ else }}80{{ end -}}
{{- end -}}
