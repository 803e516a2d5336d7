{{/* Names, labels and small computed values shared by the templates. */}}

{{- define "spiderpool.name" -}}
{{- default .Chart.Name .Values.global.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "spiderpool.namespace" -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "spiderpool.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "spiderpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.global.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "spiderpool.agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spiderpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.spiderpoolAgent.name }}
{{- end -}}

{{- define "spiderpool.controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spiderpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.spiderpoolController.name }}
{{- end -}}

{{/* image reference: (dict "image" .Values.x.image "root" .) */}}
{{- define "spiderpool.image" -}}
{{- $registry := .image.registry -}}
{{- if .root.Values.global.imageRegistryOverride -}}
{{- $registry = .root.Values.global.imageRegistryOverride -}}
{{- end -}}
{{- $ref := .image.repository -}}
{{- if $registry -}}
{{- $ref = printf "%s/%s" $registry .image.repository -}}
{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $ref .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "spiderpool.agent.serviceAccountName" -}}
{{- .Values.spiderpoolAgent.name -}}
{{- end -}}

{{- define "spiderpool.controller.serviceAccountName" -}}
{{- .Values.spiderpoolController.name -}}
{{- end -}}

{{/* The directory of the IPAM socket on the host. */}}
{{- define "spiderpool.ipamSocketDir" -}}
{{- dir .Values.global.ipamUNIXSocketHostPath -}}
{{- end -}}

{{/* "true" when the agent DaemonSet surges (seamless DRA plugin upgrade). */}}
{{- define "spiderpool.agent.surge" -}}
{{- if and .Values.dra.enabled .Values.dra.seamlessUpgrade -}}true{{- end -}}
{{- end -}}

{{/*
The served resource.k8s.io version for DeviceClass (v1, else v1beta2, else v1beta1). Group
versions, not Kinds: `helm template` without a cluster knows only group versions.
*/}}
{{- define "spiderpool.dra.apiVersion" -}}
{{- if .Values.dra.resourceApiVersion -}}
{{- .Values.dra.resourceApiVersion -}}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1" -}}
resource.k8s.io/v1
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2" -}}
resource.k8s.io/v1beta2
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta1" -}}
resource.k8s.io/v1beta1
{{- end -}}
{{- end -}}

{{/* The webhook CA bundle (base64) for the tls method in use; "" for certmanager (injected). */}}
{{- define "spiderpool.webhook.caBundle" -}}
{{- $tls := .Values.spiderpoolController.tls -}}
{{- if eq $tls.method "auto" -}}
{{- (include "spiderpool.autoCerts" . | fromYaml).ca -}}
{{- else if eq $tls.method "provided" -}}
{{- $tls.provided.tlsCa -}}
{{- end -}}
{{- end -}}

{{/*
The auto method's CA and serving certificate (base64 PEMs), generated once per render and
reused from the existing Secret on upgrades (so the caBundle does not change under a running
webhook). Memoised in .Values so that the Secret and both webhook configurations agree.
*/}}
{{- define "spiderpool.autoCerts" -}}
{{- if not (hasKey .Values "__autoCerts") -}}
{{- $tls := .Values.spiderpoolController.tls -}}
{{- $ns := include "spiderpool.namespace" . -}}
{{- $svc := .Values.spiderpoolController.name -}}
{{- $existing := lookup "v1" "Secret" $ns $tls.secretName -}}
{{- $certs := dict -}}
{{- if and $existing (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
{{- $_ := set $certs "ca" (index $existing.data "ca.crt") -}}
{{- $_ := set $certs "crt" (index $existing.data "tls.crt") -}}
{{- $_ := set $certs "key" (index $existing.data "tls.key") -}}
{{- else -}}
{{- $dns := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.global.clusterDnsDomain) -}}
{{- $dns = concat $dns $tls.auto.extraDnsNames -}}
{{- $ips := concat (list "127.0.0.1") $tls.auto.extraIpAddresses -}}
{{- $ca := genCA "spiderpool.io" (int $tls.auto.caExpiration) -}}
{{- $cert := genSignedCert $svc $ips $dns (int $tls.auto.certExpiration) $ca -}}
{{- $_ := set $certs "ca" ($ca.Cert | b64enc) -}}
{{- $_ := set $certs "crt" ($cert.Cert | b64enc) -}}
{{- $_ := set $certs "key" ($cert.Key | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__autoCerts" $certs -}}
{{- end -}}
{{- toYaml (index .Values "__autoCerts") -}}
{{- end -}}

{{/*
The cluster network NAD (eth0 of every pod) as "namespace/name", or "": multus.multusCNI.
defaultCniCRName (a bare name is in the release namespace, as upstream), else with Multus
installed by this chart the default SpiderMultusConfig's NAD (the controller names the NAD
after the SMC), else unknown. The agent (--multus-cluster-network) and 00-multus.conf use it.
*/}}
{{- define "spiderpool.multus.clusterNetwork" -}}
{{- $m := .Values.multus.multusCNI -}}
{{- $smc := .Values.defaultMultusConfig -}}
{{- if $m.defaultCniCRName -}}
{{- if contains "/" $m.defaultCniCRName -}}
{{- $m.defaultCniCRName -}}
{{- else -}}
{{- printf "%s/%s" (include "spiderpool.namespace" .) $m.defaultCniCRName -}}
{{- end -}}
{{- else if and $m.install $smc.install -}}
{{- printf "%s/%s" (default (include "spiderpool.namespace" .) $smc.namespace) $smc.name -}}
{{- end -}}
{{- end -}}
