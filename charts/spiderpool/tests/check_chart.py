#!/usr/bin/env python3
"""Renders charts/spiderpool with the real helm for several value sets and asserts the objects.

    check_chart.py --helm HELM [--agent BIN --controller BIN] [--only CASE]

Per value set: `helm lint --strict` and `helm template`, then the kinds that must be present or
absent, the agent DaemonSet (host network, probes, hostPath mounts identical inside and out,
maxSurge, DRA flags and env), the controller Deployment (replicas, leader election, probes,
webhook port, certificates), the webhook configurations against the controller's own
definition (operator/webhook/testdata/webhook_configurations.json), TLS material, RBAC split by
persona, the ValidatingAdmissionPolicy, the default objects against the CRD schemas in crds/.
With --agent/--controller, the rendered command lines are parsed by the real binaries
(`<args> --version`: absl rejects unknown flags and bad values) and the rendered conf.yml is
read by the agent's own parser. Prints one PASS/FAIL line per case; exits 1 on any failure.
"""

import argparse
import base64
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CHART = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(CHART))
GOLDEN = os.path.join(ROOT, "operator/webhook/testdata/webhook_configurations.json")
DRIVER = "netresources.spidernet.io"
VAP_API = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"


class CheckError(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise CheckError(msg)


# ----------------------------------------------------------------------------- rendering

class Rendered:
    def __init__(self, text, namespace):
        self.ns = namespace
        self.objs = [d for d in yaml.safe_load_all(text) if d]

    def all(self, kind):
        return [o for o in self.objs if o.get("kind") == kind]

    def one(self, kind, name=None):
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        expect(len(found) == 1, f"want exactly one {kind} {name or ''}, found {len(found)}")
        return found[0]

    def has(self, kind, name=None):
        return any(name is None or o["metadata"]["name"] == name for o in self.all(kind))

    def kinds(self):
        return sorted({o["kind"] for o in self.objs})


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def helm_render(helm, values, namespace, api_versions, kube_version, workdir):
    vfile = os.path.join(workdir, "values.yaml")
    with open(vfile, "w") as f:
        yaml.safe_dump(values, f)
    kv = ["--kube-version", kube_version] if kube_version else []
    lint = run([helm, "lint", "--strict", CHART, "-f", vfile, "--namespace", namespace] + kv)
    args = [helm, "template", "spiderpool", CHART, "--namespace", namespace, "-f", vfile] + kv
    for a in api_versions:
        args += ["--api-versions", a]
    out = run(args)
    return lint, out


# ----------------------------------------------------------------------------- helpers

def container(pod_spec, name, init=False):
    lst = pod_spec.get("initContainers" if init else "containers", [])
    found = [c for c in lst if c["name"] == name]
    expect(found, f"no {'init ' if init else ''}container {name}")
    return found[0]


def flags(c):
    """--name=value arguments of a container as a dict (dashes kept)."""
    out = {}
    for a in c.get("args", []):
        expect(a.startswith("--") and "=" in a, f"{c['name']}: argument {a!r} is not --flag=value")
        k, v = a[2:].split("=", 1)
        expect(k not in out, f"{c['name']}: flag --{k} given twice")
        out[k] = v
    return out


def env(c):
    out = {}
    for e in c.get("env", []):
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def mounts(pod_spec, c):
    """mountPath -> hostPath (None for non-hostPath volumes)."""
    vols = {v["name"]: v for v in pod_spec.get("volumes", [])}
    out = {}
    for m in c.get("volumeMounts", []):
        expect(m["name"] in vols, f"{c['name']}: mount of undefined volume {m['name']}")
        hp = vols[m["name"]].get("hostPath")
        out[m["mountPath"]] = hp["path"] if hp else None
    return out


def no_privileges(c):
    sc = c.get("securityContext", {})
    expect(not sc.get("privileged"), f"{c['name']} is privileged")
    expect(sc.get("allowPrivilegeEscalation") is False, f"{c['name']}: allowPrivilegeEscalation")
    expect(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{c['name']}: capabilities not dropped")
    expect(not sc.get("capabilities", {}).get("add"), f"{c['name']}: capabilities added")
    expect(sc.get("readOnlyRootFilesystem") is True, f"{c['name']}: writable root filesystem")


def rules_for_subject(r, kind, name, namespace):
    """Every rule granted to a subject through the rendered (Cluster)RoleBindings."""
    out = []
    for b in r.all("ClusterRoleBinding") + r.all("RoleBinding"):
        if not any(s["kind"] == kind and s["name"] == name and s.get("namespace", namespace) == namespace
                   for s in b["subjects"]):
            continue
        ref = b["roleRef"]
        role = r.one(ref["kind"], ref["name"])
        out += role["rules"]
    return out


def grants(rules, group, resource, verb, resource_name=None):
    for rule in rules:
        if group not in rule.get("apiGroups", []) or resource not in rule.get("resources", []):
            continue
        if verb not in rule.get("verbs", []):
            continue
        names = rule.get("resourceNames")
        if names and resource_name not in names:
            continue
        return True
    return False


WRITE = ["create", "update", "patch", "delete", "deletecollection"]


def no_wildcards(r):
    for kind in ("ClusterRole", "Role"):
        for role in r.all(kind):
            for rule in role.get("rules", []):
                for f in ("apiGroups", "resources", "verbs"):
                    expect("*" not in rule.get(f, []), f"{kind} {role['metadata']['name']}: '*' in {f}")


# ----------------------------------------------------------------------------- RBAC table

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
RENDERED_RULES = set()  # every rule of every value set rendered so far (rbac_key form)


def rbac_key(role_kind, role_name, groups, resources, verbs, names):
    return (f"{role_kind} {role_name}", tuple(sorted(groups)), tuple(sorted(resources)),
            tuple(sorted(verbs)), tuple(sorted(names or [])))


def rbac_table():
    """The rule table of README.md "RBAC rule by rule": rbac_key -> the row's reason."""
    text = open(README).read()
    begin, end = text.find("<!-- rbac-rules:begin -->"), text.find("<!-- rbac-rules:end -->")
    expect(0 <= begin < end, "README.md: the rbac-rules markers are missing")
    rows = {}
    for line in text[begin:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] in ("role", "") or cells[0].startswith("---"):
            continue
        split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else []
        groups = ["" if g == '""' else g for g in split(cells[1])]
        kind, _, name = cells[0].partition(" ")
        key = rbac_key(kind, name, groups, split(cells[2]), split(cells[3]), split(cells[4]))
        expect(key not in rows, f"README.md: RBAC row listed twice: {cells[0]} {cells[2]}")
        expect(cells[5], f"README.md: RBAC row without a reason: {cells[0]} {cells[2]}")
        rows[key] = cells[5]
    expect(rows, "README.md: no RBAC rows between the markers")
    return rows


def check_rbac_table(r, case_name):
    """Every rendered rule is a README row (no wildcards: no_wildcards)."""
    table = rbac_table()
    for kind in ("ClusterRole", "Role"):
        for role in r.all(kind):
            for rule in role.get("rules", []):
                key = rbac_key(kind, role["metadata"]["name"], rule.get("apiGroups", []),
                               rule.get("resources", []), rule.get("verbs", []),
                               rule.get("resourceNames"))
                expect(key in table, f"{kind} {role['metadata']['name']}: rule {rule} has no row in "
                                     "README.md 'RBAC rule by rule' (add it with who needs it and why)")
                RENDERED_RULES.add(key)


def check_rbac_rows_rendered():
    """Every README row is rendered by some value set: no stale row."""
    stale = [k for k in rbac_table() if k not in RENDERED_RULES]
    expect(not stale, f"README.md RBAC rows that no value set renders: {stale}")

# ----------------------------------------------------------------------------- CRD schemas

def load_crds():
    crds = {}
    for p in sorted(glob.glob(os.path.join(CHART, "crds", "*.yaml"))):
        with open(p) as f:
            for d in yaml.safe_load_all(f):
                if d and d.get("kind") == "CustomResourceDefinition":
                    kind = d["spec"]["names"]["kind"]
                    crds[kind] = d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return crds


def validate(schema, value, path):
    """Structural subset of OpenAPI v3: type, properties (unknown fields), required (unless
    defaulted), enum."""
    t = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        expect(isinstance(value, (int, str)), f"{path}: not int-or-string")
        return
    if schema.get("x-kubernetes-preserve-unknown-fields") and t in (None, "object"):
        return
    if t == "object":
        expect(isinstance(value, dict), f"{path}: not an object")
        props = schema.get("properties")
        for req in schema.get("required", []):
            # The API server applies schema defaults before it validates.
            expect(req in value or "default" in (props or {}).get(req, {}), f"{path}: required field {req} missing")
        if props is not None:
            for k, v in value.items():
                expect(k in props, f"{path}: unknown field {k}")
                validate(props[k], v, f"{path}.{k}")
    elif t == "array":
        expect(isinstance(value, list), f"{path}: not a list")
        for i, v in enumerate(value):
            validate(schema.get("items", {}), v, f"{path}[{i}]")
    elif t == "string":
        expect(isinstance(value, str), f"{path}: not a string")
    elif t == "integer":
        expect(isinstance(value, int) and not isinstance(value, bool), f"{path}: not an integer")
    elif t == "boolean":
        expect(isinstance(value, bool), f"{path}: not a boolean")
    if "enum" in schema:
        expect(value in schema["enum"], f"{path}: {value!r} not in {schema['enum']}")


# ----------------------------------------------------------------------------- the checks

def check_common(r, case, bins):
    ns = r.ns
    no_wildcards(r)
    for o in r.objs:
        md = o["metadata"]
        expect(md.get("labels", {}).get("app.kubernetes.io/managed-by") == "Helm",
               f"{o['kind']} {md['name']}: no managed-by label")
        if o["kind"] in ("ConfigMap", "DaemonSet", "Deployment", "Service", "ServiceAccount", "Role",
                         "RoleBinding", "Secret", "Certificate", "Issuer", "SpiderMultusConfig"):
            want = ns
            if o["kind"] == "SpiderMultusConfig":
                want = case.get("smc_ns", ns)
            expect(md.get("namespace") == want, f"{o['kind']} {md['name']} in {md.get('namespace')}, want {want}")

    # ---- conf.yml
    cm = r.one("ConfigMap", "spiderpool-conf")
    conf = yaml.safe_load(cm["data"]["conf.yml"])
    v4, v6 = case.get("ipv4", True), case.get("ipv6", False)
    expect(conf["enableIPv4"] is v4 and conf["enableIPv6"] is v6, f"conf.yml IPv4/IPv6 {conf}")
    expect(conf["ipamUnixSocketPath"] == "/var/run/spidernet/spiderpool.sock", "conf.yml socket path")

    # ---- agent DaemonSet
    ds = r.one("DaemonSet", "spiderpool-agent")
    spec = ds["spec"]["template"]["spec"]
    expect(spec.get("hostNetwork") is True, "agent: not on the host network")
    expect(spec["serviceAccountName"] == "spiderpool-agent", "agent: service account")
    expect(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
           "agent: selector does not match the pod labels")
    agent = container(spec, "spiderpool-agent")
    no_privileges(agent)
    expect("ports" not in agent, "agent: containerPorts on a host-network pod become hostPorts "
                                 "(they would block the surge pod)")
    af = flags(agent)
    ae = env(agent)
    expect(ae.get("SPIDERPOOL_NODE_NAME") == {"fieldRef": {"fieldPath": "spec.nodeName"}}, "agent: SPIDERPOOL_NODE_NAME")
    expect(ae.get("POD_UID") == {"fieldRef": {"fieldPath": "metadata.uid"}}, "agent: POD_UID from the downward API")
    expect(af["socket"] == conf["ipamUnixSocketPath"], "agent --socket differs from conf.yml")
    expect(af["health-port"] == "5710" and af["config"] == "/etc/spiderpool/conf.yml", "agent health port / config")
    expect(af["agent-namespace"] == ns, "agent namespace")
    m = mounts(spec, agent)
    expect(m.get("/var/run/spidernet") == "/var/run/spidernet", "agent: IPAM socket dir not mounted from the host")
    expect(m.get("/etc/spiderpool") is None and "/etc/spiderpool" in m, "agent: conf.yml mount")
    for probe, path in (("startupProbe", "/v1/runtime/startup"), ("readinessProbe", "/v1/runtime/readiness")):
        p = agent.get(probe)
        expect(p and p["httpGet"]["path"] == path and p["httpGet"]["port"] == 5710, f"agent {probe}")
    init = container(spec, "install-cni", init=True)
    no_privileges(init)
    im = mounts(spec, init)
    ie = env(init)
    expect(im.get(ie["CNI_BIN_MOUNT"]) == "/opt/cni/bin" and ie["CNI_BIN_HOST_PATH"] == "/opt/cni/bin",
           "install-cni: host CNI bin dir")
    expect(init["command"] == ["/usr/lib/spiderpool/install-cni.sh"], "install-cni command")
    rolling = ds["spec"]["updateStrategy"]["rollingUpdate"]
    dra = case.get("dra", False)
    surge = dra and case.get("seamless", True)
    if surge:
        expect(rolling == {"maxSurge": 1, "maxUnavailable": 0}, f"agent rollout {rolling}, want maxSurge 1")
    else:
        expect(rolling["maxSurge"] == 0 and rolling["maxUnavailable"] == 2, f"agent rollout {rolling}")
    dra_flags = {"dra-enabled": "true", "dra-driver-name": DRIVER, "dra-cdi-dir": "/var/run/cdi",
                 "kubelet-registry-dir": "/var/lib/kubelet/plugins_registry",
                 "kubelet-plugins-dir": "/var/lib/kubelet/plugins", "dra-health-port": "5713",
                 "dra-slots-per-nic": "32"}
    dra_mounts = ("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi")
    live = agent["livenessProbe"]
    if dra:
        for k, v in dra_flags.items():
            expect(af.get(k) == v, f"agent --{k}={af.get(k)}, want {v}")
        for d in dra_mounts:
            expect(m.get(d) == d, f"agent: {d} not mounted from the same host path")
        expect(live.get("grpc", {}).get("port") == int(af["dra-health-port"]) and "httpGet" not in live,
               "agent liveness: not the plugin's gRPC health on --dra-health-port")
    else:
        for k in dra_flags:
            expect(k not in af, f"agent --{k} without dra.enabled")
        for d in dra_mounts:
            expect(d not in m, f"agent mounts {d} without dra.enabled")
        expect(live["httpGet"]["path"] == "/v1/runtime/liveness", "agent liveness")
    dp = case.get("device_plugin", False)
    expect((af.get("device-plugin-enabled") == "true") == dp, "agent --device-plugin-enabled")
    expect((m.get("/var/lib/kubelet/device-plugins") == "/var/lib/kubelet/device-plugins") == dp,
           "agent device-plugins mount")

    # ---- controller Deployment
    dep = r.one("Deployment", "spiderpool-controller")
    cspec = dep["spec"]["template"]["spec"]
    replicas = dep["spec"]["replicas"]
    expect(replicas == case.get("controller_replicas", 1), f"controller replicas {replicas}")
    expect(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0, "controller surges onto busy host ports")
    ctl = container(cspec, "spiderpool-controller")
    no_privileges(ctl)
    expect(ctl["securityContext"].get("runAsNonRoot") is True and ctl["securityContext"].get("runAsUser") != 0,
           "controller runs as root")
    cf = flags(ctl)
    expect(cf["leader-elect"] == "true" and cf["namespace"] == ns, "controller leader election / namespace")
    expect(cf["enable-ipv4"] == str(v4).lower() and cf["enable-ipv6"] == str(v6).lower(), "controller IP families")
    expect(cf["webhook-port"] == "5722" and cf["health-port"] == "5720", "controller ports")
    expect(cf["webhook-service-name"] == "spiderpool-controller", "controller webhook service name")
    if "pod_inject" in case:
        exclude, include = case["pod_inject"]
        expect(cf.get("pod-resource-inject") == "true", "controller --pod-resource-inject")
        expect(cf.get("pod-resource-inject-namespaces-exclude") == ",".join(exclude)
               and cf.get("pod-resource-inject-namespaces-include") == ",".join(include),
               "controller podResourceInject namespaces")
    else:
        expect("pod-resource-inject" not in cf, "controller --pod-resource-inject set by default")
    ports = {p["name"]: p["containerPort"] for p in ctl["ports"]}
    expect(ports == {"http": 5720, "webhook": 5722}, f"controller ports {ports}")
    expect(ctl["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 5720, "scheme": "HTTP"}, "controller liveness")
    expect(ctl["readinessProbe"]["httpGet"]["path"] == "/readyz", "controller readiness")
    expect(ctl["startupProbe"]["httpGet"]["path"] == "/readyz", "controller startup probe")
    anti = cspec["affinity"]["podAntiAffinity"]
    # A one-node cluster must run the defaults to Ready (helm install --wait, rollout status):
    # two replicas on host ports, or under a required anti-affinity by hostname, need two nodes.
    one_node = not cspec.get("hostNetwork") and "requiredDuringSchedulingIgnoredDuringExecution" not in anti
    expect(one_node or replicas == 1 or "controller_replicas" in case,
           f"{replicas} controller replicas need {replicas} nodes (host ports / anti-affinity)")
    if cspec.get("hostNetwork"):
        expect("requiredDuringSchedulingIgnoredDuringExecution" in anti, "controller: host ports need required anti-affinity")
    else:
        expect("preferredDuringSchedulingIgnoredDuringExecution" in anti, "controller: preferred anti-affinity")
    cm_ = mounts(cspec, ctl)
    expect(cf["webhook-cert-dir"] in cm_, "controller: certificate dir not mounted")
    cert_vol = [v for v in cspec["volumes"] if v["name"] == "webhook-certs"][0]
    secret_name = case.get("secret", "spiderpool-controller-server-certs")
    expect(cert_vol["secret"]["secretName"] == secret_name, "controller: certificate Secret name")

    # ---- Services
    svc = r.one("Service", "spiderpool-controller")
    sports = {p["name"]: (p["port"], p["targetPort"]) for p in svc["spec"]["ports"]}
    expect(sports["webhook"] == (5722, 5722), "controller Service webhook port")
    expect(svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(),
           "controller Service selects no controller pod")
    asvc = r.one("Service", "spiderpool-agent")
    expect(asvc["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
           "agent Service selects no agent pod")

    # ---- webhooks = the controller's definition (+ SpiderClaimParameter, served by main.cc)
    check_webhooks(r, case)
    check_tls(r, case, secret_name)
    check_rbac(r, case)
    check_dra(r, case)
    check_defaults(r, case)
    if bins:
        check_binaries(r, case, bins, agent, ctl, cm["data"]["conf.yml"])


def check_webhooks(r, case):
    with open(GOLDEN) as f:
        golden = json.load(f)
    want = {it["kind"]: it for it in golden["items"]}
    cp = want["ValidatingWebhookConfiguration"]["webhooks"][0]
    cp = copy.deepcopy(cp)
    cp["name"] = "spiderclaimparameter.spiderpool.spidernet.io"
    cp["clientConfig"]["service"]["path"] = "/validate-spiderpool-spidernet-io-v2beta1-spiderclaimparameter"
    cp["rules"][0]["operations"] = ["CREATE", "UPDATE"]
    cp["rules"][0]["resources"] = ["spiderclaimparameters"]
    want["ValidatingWebhookConfiguration"]["webhooks"].append(cp)
    # podResourceInject: the Pod webhook, last (operator/webhook/configurations.cc).
    if "pod_inject" in case:
        exclude, include = case["pod_inject"]
        pod = copy.deepcopy(want["MutatingWebhookConfiguration"]["webhooks"][0])
        pod["name"] = "pod.spiderpool.spidernet.io"
        pod["clientConfig"]["service"]["path"] = "/mutate--v1-pod"
        pod["rules"] = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                         "resources": ["pods"]}]
        exprs = []
        if exclude:
            exprs.append({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": exclude})
        if include:
            exprs.append({"key": "kubernetes.io/metadata.name", "operator": "In", "values": include})
        if exprs:
            pod["namespaceSelector"] = {"matchExpressions": exprs}
        want["MutatingWebhookConfiguration"]["webhooks"].append(pod)
    bundles = set()
    for kind, w in want.items():
        got = r.one(kind, "spiderpool-controller")
        hooks = copy.deepcopy(got["webhooks"])
        for h in hooks:
            b = h["clientConfig"].pop("caBundle", None)
            bundles.add(b)
        exp = copy.deepcopy(w["webhooks"])
        for h in exp:
            h["clientConfig"]["service"]["namespace"] = r.ns
        expect(hooks == exp, f"{kind} differs from the controller's definition:\n"
                             f"  got  {json.dumps(hooks, sort_keys=True)[:600]}\n"
                             f"  want {json.dumps(exp, sort_keys=True)[:600]}")
    expect(len(bundles) == 1, "the webhooks carry different caBundles")
    case["_ca_bundle"] = bundles.pop()


def openssl(args, data=None):
    p = run(["openssl"] + args, input=data)
    return p.returncode, p.stdout + p.stderr


def check_tls(r, case, secret_name):
    method = case.get("tls", "auto")
    ca_bundle = case["_ca_bundle"]
    secrets = [s for s in r.all("Secret") if s["metadata"]["name"] == secret_name]
    if method == "auto":
        s = r.one("Secret", secret_name)
        expect(s["type"] == "kubernetes.io/tls", "TLS Secret type")
        d = s["data"]
        expect(ca_bundle == d["ca.crt"], "auto: caBundle is not the Secret's ca.crt")
        with tempfile.TemporaryDirectory() as tmp:
            for k in ("ca.crt", "tls.crt"):
                with open(os.path.join(tmp, k), "wb") as f:
                    f.write(base64.b64decode(d[k]))
            rc, out = openssl(["verify", "-CAfile", os.path.join(tmp, "ca.crt"), os.path.join(tmp, "tls.crt")])
            expect(rc == 0, f"auto: serving certificate not signed by ca.crt: {out}")
            rc, out = openssl(["x509", "-noout", "-ext", "subjectAltName", "-in", os.path.join(tmp, "tls.crt")])
            expect(rc == 0, out)
            for name in (f"spiderpool-controller.{r.ns}.svc", f"spiderpool-controller.{r.ns}.svc.cluster.local"):
                expect(f"DNS:{name}" in out, f"auto: serving certificate lacks {name}: {out}")
        key = base64.b64decode(d["tls.key"]).decode()
        expect("PRIVATE KEY" in key, "auto: tls.key is not a PEM key")
        expect(not r.has("Certificate"), "auto: cert-manager objects present")
    elif method == "provided":
        given = case.get("provided")
        if given:
            s = r.one("Secret", secret_name)
            expect(s["data"] == {"ca.crt": given[2], "tls.crt": given[0], "tls.key": given[1]}, "provided: Secret data")
            expect(ca_bundle == given[2], "provided: caBundle is not tlsCa")
        else:
            expect(not secrets, "provided without values: the chart must not overwrite the existing Secret")
            expect(ca_bundle is None, "provided without values: caBundle set (the controller patches it)")
    elif method == "certmanager":
        expect(not secrets, "certmanager: the chart renders the Secret cert-manager owns")
        cert = r.one("Certificate")
        expect(cert["spec"]["secretName"] == secret_name, "certmanager: Certificate secretName")
        for name in (f"spiderpool-controller.{r.ns}.svc",):
            expect(name in cert["spec"]["dnsNames"], f"certmanager: {name} missing")
        issuer = cert["spec"]["issuerRef"]
        if case.get("issuer"):
            expect(issuer == {"kind": "ClusterIssuer", "name": case["issuer"]}, f"certmanager issuerRef {issuer}")
            expect(not r.has("Issuer"), "certmanager: self-signed Issuer rendered with issuerName")
        else:
            expect(r.one("Issuer", issuer["name"])["spec"] == {"selfSigned": {}}, "certmanager: self-signed Issuer")
        inject = f"{r.ns}/{cert['metadata']['name']}"
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            ann = r.one(kind, "spiderpool-controller")["metadata"].get("annotations", {})
            expect(ann.get("cert-manager.io/inject-ca-from") == inject, f"{kind}: inject-ca-from")
        expect(ca_bundle is None, "certmanager: static caBundle")


def check_rbac(r, case):
    ns = r.ns
    agent_rules = rules_for_subject(r, "ServiceAccount", "spiderpool-agent", ns)
    ctl_rules = rules_for_subject(r, "ServiceAccount", "spiderpool-controller", ns)
    # IPAM persona of the agent; the controller's leases and webhook configurations.
    expect(grants(agent_rules, "spiderpool.spidernet.io", "spiderippools/status", "update"), "agent: pool status")
    expect(grants(agent_rules, "spiderpool.spidernet.io", "spiderendpoints", "create"), "agent: endpoints")
    expect(not grants(agent_rules, "", "secrets", "get"), "agent reads Secrets")
    expect(grants(ctl_rules, "coordination.k8s.io", "leases", "update", "spiderpool-controller-leases"),
           "controller: leader election Lease")
    expect(grants(ctl_rules, "k8s.cni.cncf.io", "network-attachment-definitions", "create"), "controller: NADs")
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        expect(grants(ctl_rules, "admissionregistration.k8s.io", kind, "patch", "spiderpool-controller"),
               f"controller: caBundle of {kind}")
        expect(not grants(ctl_rules, "admissionregistration.k8s.io", kind, "patch", "someone-else"),
               f"controller may patch other {kind}")
    expect(not grants(ctl_rules, "", "secrets", "get"), "controller reads Secrets (certificates are files)")
    # resource.k8s.io: only the agent writes, only slices and its claims' status.
    for res in ("resourceslices", "resourceclaims", "resourceclaims/status", "deviceclasses"):
        for verb in WRITE:
            expect(not grants(ctl_rules, "resource.k8s.io", res, verb), f"controller may {verb} {res}")
    dra = case.get("dra", False)
    for verb in ("create", "update", "delete"):
        expect(grants(agent_rules, "resource.k8s.io", "resourceslices", verb) == dra,
               f"agent {verb} resourceslices: {not dra}")
    expect(not any(grants(agent_rules, "resource.k8s.io", "deviceclasses", v) for v in WRITE), "agent writes DeviceClasses")
    expect(not any(grants(agent_rules, "resource.k8s.io", "resourceclaims", v) for v in WRITE),
           "agent writes ResourceClaims (only their status)")
    for b in r.all("ClusterRoleBinding") + r.all("RoleBinding"):
        role = r.one(b["roleRef"]["kind"], b["roleRef"]["name"])
        if any(grants(role["rules"], "resource.k8s.io", "resourceslices", v) for v in WRITE):
            expect(all(s["kind"] == "ServiceAccount" and s["name"] == "spiderpool-agent" for s in b["subjects"]),
                   f"{b['metadata']['name']}: ResourceSlice writers other than the agent")
    if not dra:
        for name in ("spiderpool-dra-user", "spiderpool-dra-admin", "spiderpool-agent-dra"):
            expect(not r.has("ClusterRole", name), f"{name} without dra.enabled")
        return
    drv = [rule for rule in agent_rules if "resourceclaims/driver" in rule.get("resources", [])]
    expect(len(drv) == 1 and drv[0].get("resourceNames") == [DRIVER]
           and sorted(drv[0]["verbs"]) == ["associated-node:patch", "associated-node:update"],
           f"agent resourceclaims/driver rule {drv}")
    expect(grants(agent_rules, "resource.k8s.io", "resourceclaims/status", "update"), "agent: claim status")
    expect(grants(agent_rules, "spiderpool.spidernet.io", "spiderclaimparameters", "get"), "agent: claim parameters")
    user = r.one("ClusterRole", "spiderpool-dra-user")
    labels = user["metadata"]["labels"]
    expect(labels.get("rbac.authorization.k8s.io/aggregate-to-edit") == "true", "dra-user not aggregated to edit")
    granted = {(g, res) for rule in user["rules"] for g in rule["apiGroups"] for res in rule["resources"]}
    expect(granted == {("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates"),
                       ("spiderpool.spidernet.io", "spiderclaimparameters")}, f"dra-user grants {granted}")
    admin = r.one("ClusterRole", "spiderpool-dra-admin")
    expect(grants(admin["rules"], "resource.k8s.io", "deviceclasses", "create"), "dra-admin: DeviceClasses")
    for b in r.all("ClusterRoleBinding") + r.all("RoleBinding"):
        expect(b["roleRef"]["name"] not in ("spiderpool-dra-admin", "spiderpool-dra-user"),
               "persona roles are bound by the chart")


def check_dra(r, case):
    dra = case.get("dra", False)
    for kind in ("DeviceClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        if not dra:
            expect(not r.has(kind), f"{kind} without dra.enabled")
    if not dra:
        return
    dc = r.one("DeviceClass", DRIVER)
    expect(dc["apiVersion"] == case.get("resource_api", "resource.k8s.io/v1"), f"DeviceClass {dc['apiVersion']}")
    expect(dc["spec"]["selectors"] == [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
           f"DeviceClass selectors {dc['spec']['selectors']}")
    if not case.get("vap", True):
        expect(not r.has("ValidatingAdmissionPolicy"), "VAP rendered where the API is not served")
        return
    vap = r.one("ValidatingAdmissionPolicy")
    spec = vap["spec"]
    expect(spec["failurePolicy"] == "Fail", "VAP failurePolicy")
    rr = spec["matchConstraints"]["resourceRules"][0]
    expect(rr["resources"] == ["resourceslices"] and sorted(rr["operations"]) == ["CREATE", "DELETE", "UPDATE"],
           "VAP match")
    cond = " ".join(c["expression"] for c in spec["matchConditions"])
    expect(f"system:serviceaccount:{r.ns}:spiderpool-agent" in cond, f"VAP does not match the agent: {cond}")
    exprs = json.dumps(spec["variables"])
    expect("authentication.kubernetes.io/node-name" in exprs and "spec.?nodeName" in exprs, "VAP node comparison")
    expect(sorted(v["name"] for v in spec["variables"]) == ["objectNodeName", "userNodeName"], "VAP variables")
    expect([v["expression"] for v in spec["validations"]] ==
           ['variables.userNodeName != ""', "variables.userNodeName == variables.objectNodeName"],
           "VAP validations: a node in the token, equal to the slice's node")
    binding = r.one("ValidatingAdmissionPolicyBinding")
    expect(binding["spec"]["policyName"] == vap["metadata"]["name"] and binding["spec"]["validationActions"] == ["Deny"],
           "VAP binding")
    check_dra_claim_webhook(r)


def check_dra_claim_webhook(r):
    # operator/dra: the ResourceClaim webhook, as operator/dra/claim_webhook.h registers it.
    mwc = r.one("MutatingWebhookConfiguration", "spiderpool-controller-dra")
    hooks = mwc["webhooks"]
    expect([h["name"] for h in hooks] == ["resourceclaim.spiderpool.spidernet.io"], f"DRA webhooks {hooks}")
    h = hooks[0]
    svc = h["clientConfig"]["service"]
    expect(svc["name"] == "spiderpool-controller" and svc["namespace"] == r.ns and
           svc["path"] == "/mutate-resource-k8s-io-v1-resourceclaim", f"DRA webhook service {svc}")
    expect(h["rules"] == [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["resourceclaims"]}], f"DRA webhook rules {h['rules']}")
    expect(h["failurePolicy"] == "Fail" and h["sideEffects"] == "None", "DRA webhook policies")
    role = r.one("ClusterRole", "spiderpool-controller-dra")
    expect(any(x.get("resourceNames") == ["spiderpool-controller-dra"] and "update" in x["verbs"]
               for x in role["rules"]), "controller may not keep spiderpool-controller-dra's caBundle")


def check_defaults(r, case):
    crds = load_crds()
    want = case.get("defaults", [])
    for kind in ("SpiderIPPool", "SpiderMultusConfig", "SpiderCoordinator"):
        objs = r.all(kind)
        expect(len(objs) == sum(1 for k in want if k == kind), f"{len(objs)} {kind} rendered, want {want.count(kind)}")
        for o in objs:
            ann = o["metadata"].get("annotations", {})
            expect("post-install" in ann.get("helm.sh/hook", ""), f"{kind} {o['metadata']['name']} is not a hook")
            validate(crds[kind], {k: v for k, v in o.items() if k not in ("apiVersion", "kind")},
                     f"{kind}/{o['metadata']['name']}")
    if "SpiderMultusConfig" in want:
        smc = r.one("SpiderMultusConfig")
        pools = [p["metadata"]["name"] for p in r.all("SpiderIPPool")]
        expect(sorted(smc["spec"]["macvlan"]["ippools"].get("ipv4", []) + smc["spec"]["macvlan"]["ippools"].get("ipv6", []))
               == sorted(pools), "default SMC does not use the default pools")
        expect(int(smc["metadata"]["annotations"]["helm.sh/hook-weight"]) >
               int(r.all("SpiderIPPool")[0]["metadata"]["annotations"]["helm.sh/hook-weight"]), "SMC before its pools")


def check_binaries(r, case, bins, agent, ctl, conf_yml):
    for name, c, b in (("agent", agent, bins["agent"]), ("controller", ctl, bins["controller"])):
        p = run([b] + c["args"] + ["--version"])
        expect(p.returncode == 0, f"the {name} binary rejects its rendered flags:\n{(p.stdout + p.stderr).strip()}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        f.write(conf_yml)
        f.flush()
        p = run([bins["agent"], "--node-name=check", f"--config={f.name}", "--kubeconfig=/nonexistent/kubeconfig",
                 "--health-port=-1"], timeout=20)
        err = p.stdout + p.stderr
        expect(p.returncode != 0 and "kubeconfig" in err and f.name not in err,
               f"the agent does not accept the rendered conf.yml: {err.strip()}")


# ----------------------------------------------------------------------------- issue 19 point 1

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"


def check_cleanup(r, case, bins):
    """The pre-delete hook: a Job running `spiderpool-controller --cleanup` after its
    least-privilege identity, both hooks; absent with cleanup.enable=false."""
    ns = r.ns
    name = "spiderpool-controller-cleanup"
    jobs = [j for j in r.all("Job") if j["metadata"]["name"] == "spiderpool-controller-hook-pre-delete"]
    if not case.get("cleanup", True):
        expect(not jobs, "cleanup Job rendered with spiderpoolController.cleanup.enable=false")
        for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
            expect(not r.has(kind, name), f"{kind} {name} rendered without the cleanup hook")
        return
    expect(len(jobs) == 1, "no pre-delete Job spiderpool-controller-hook-pre-delete")
    job = jobs[0]
    ann = job["metadata"]["annotations"]
    expect(ann.get(HOOK) == "pre-delete", f"cleanup Job hook {ann.get(HOOK)}")
    expect("hook-succeeded" in ann.get("helm.sh/hook-delete-policy", ""), "cleanup Job kept after success")
    expect(job["metadata"]["namespace"] == ns, "cleanup Job namespace")
    spec = job["spec"]["template"]["spec"]
    expect(spec["serviceAccountName"] == name and spec["restartPolicy"] == "Never", "cleanup Job identity/restart")
    c = container(spec, "cleanup")
    no_privileges(c)
    dep = r.one("Deployment", "spiderpool-controller")
    expect(c["image"] == container(dep["spec"]["template"]["spec"], "spiderpool-controller")["image"],
           "cleanup Job does not use the controller's image")
    expect(c["command"] == ["/usr/bin/spiderpool-controller"], f"cleanup command {c['command']}")
    f = flags(c)
    expect(f.get("cleanup") == "true" and f.get("namespace") == ns, f"cleanup flags {f}")
    expect(f.get("cleanup-controller-deployment") == dep["metadata"]["name"], "cleanup: not the controller Deployment")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        expect(r.has(kind, f["cleanup-webhook-configuration"]), f"cleanup: no {kind} {f['cleanup-webhook-configuration']}")
    expect(f.get("cleanup-timeout") == f"{case.get('cleanup_timeout', 120)}s", f"cleanup timeout {f.get('cleanup-timeout')}")
    # The Job's pod is not one of the controller's (it waits for those to go).
    sel = dep["spec"]["selector"]["matchLabels"]
    expect(not sel.items() <= job["spec"]["template"]["metadata"].get("labels", {}).items(),
           "the cleanup pod matches the controller Deployment's selector: it would wait for itself")
    # Its identity: hooks created before the Job, gone after success.
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        o = r.one(kind, name)
        a = o["metadata"].get("annotations", {})
        expect(a.get(HOOK) == "pre-delete" and int(a.get(WEIGHT, "0")) < int(ann.get(WEIGHT, "0")),
               f"{kind} {name} is not a pre-delete hook created before the Job")
    rules = rules_for_subject(r, "ServiceAccount", name, ns)
    for res in ("spiderippools", "spidersubnets", "spiderendpoints", "spidercoordinators"):
        for verb in ("list", "get", "update"):
            expect(grants(rules, "spiderpool.spidernet.io", res, verb), f"cleanup may not {verb} {res}")
        for verb in ("create", "delete", "patch", "deletecollection"):
            expect(not grants(rules, "spiderpool.spidernet.io", res, verb), f"cleanup may {verb} {res}")
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        expect(grants(rules, "admissionregistration.k8s.io", kind, "delete", "spiderpool-controller"),
               f"cleanup may not delete {kind} spiderpool-controller")
        expect(not grants(rules, "admissionregistration.k8s.io", kind, "delete", "someone-else"),
               f"cleanup may delete other {kind}")
    expect(grants(rules, "apps", "deployments", "patch", "spiderpool-controller")
           and not grants(rules, "apps", "deployments", "patch", "someone-else"), "cleanup: Deployment patch scope")
    expect(grants(rules, "", "pods", "list") and not grants(rules, "", "pods", "delete"), "cleanup: pods")
    expect(not grants(rules, "", "secrets", "get"), "cleanup reads Secrets")
    expect(not any(grants(rules, "apiextensions.k8s.io", "customresourcedefinitions", v) for v in WRITE),
           "cleanup may change CRDs")
    if bins:
        p = run([bins["controller"]] + c["args"] + ["--version"])
        expect(p.returncode == 0, f"the controller binary rejects the cleanup Job's flags:\n{(p.stdout + p.stderr).strip()}")


def check_multus(r, case):
    """The Multus thin plugin: DaemonSet, RBAC and 00-multus.conf naming the cluster network."""
    ns = r.ns
    m = case.get("multus")
    agent = container(r.one("DaemonSet", "spiderpool-agent")["spec"]["template"]["spec"], "spiderpool-agent")
    net = flags(agent).get("multus-cluster-network")
    if m is None:
        expect(not r.has("DaemonSet", "spiderpool-multus") and not r.has("ClusterRole", "spiderpool-multus"),
               "Multus installed by default")
        expect(net == case.get("agent_cluster_network"), f"agent --multus-cluster-network={net}")
        return
    ds = r.one("DaemonSet", "spiderpool-multus")
    spec = ds["spec"]["template"]["spec"]
    expect(spec.get("hostNetwork") is True and spec["serviceAccountName"] == "spiderpool-multus", "multus pod")
    expect(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
           "multus selector does not match its pods")
    init = container(spec, "install-multus-binary", init=True)
    main = container(spec, "kube-multus")
    image = case.get("multus_image", "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.4")
    expect(init["image"] == image and main["image"] == image, f"multus image {main['image']}, want {image}")
    expect(init["command"] == ["/install_multus"] and init["args"] == ["--type", "thin"], "multus init: thin install")
    expect(main["command"] == ["/thin_entrypoint"], f"multus command {main['command']}")
    expect(mounts(spec, init).get("/host/opt/cni/bin") == "/opt/cni/bin", "multus binary not installed into /opt/cni/bin")
    mm = mounts(spec, main)
    expect(mm.get("/host/etc/cni/net.d") == "/etc/cni/net.d" and mm.get("/host/opt/cni/bin") == "/opt/cni/bin",
           "multus host CNI dirs")
    args = main["args"]
    expect("--cni-conf-dir=/host/etc/cni/net.d" in args, f"multus args {args}")
    cms = [c for c in r.all("ConfigMap") if c["metadata"]["name"] == "spiderpool-multus-config"]
    if m == "auto":
        expect("--multus-conf-file=auto" in args and not cms, "multus without a known cluster network: not auto")
        expect(net is None, f"agent --multus-cluster-network={net} without a known cluster network")
    else:
        want_ns, want_name = m
        expect("--multus-conf-file=/tmp/multus-conf/00-multus.conf" in args, f"multus args {args}")
        expect(len(cms) == 1, "no ConfigMap spiderpool-multus-config")
        conf = json.loads(cms[0]["data"]["00-multus.conf"])
        expect(conf["type"] == "multus" and conf["clusterNetwork"] == want_name and conf["multusNamespace"] == want_ns,
               f"00-multus.conf clusterNetwork {conf.get('multusNamespace')}/{conf.get('clusterNetwork')}, "
               f"want {want_ns}/{want_name}")
        expect(conf["kubeconfig"] == "/etc/cni/net.d/multus.d/multus.kubeconfig", "00-multus.conf kubeconfig")
        vol = [v for v in spec["volumes"] if v["name"] == "multus-cfg"][0]
        expect(vol["configMap"]["name"] == "spiderpool-multus-config" and "/tmp/multus-conf" in mm,
               "00-multus.conf not mounted")
        expect(net == f"{want_ns}/{want_name}", f"agent --multus-cluster-network={net}, want {want_ns}/{want_name}")
        if case.get("multus_is_default_smc"):
            smc = r.one("SpiderMultusConfig")
            expect((smc["metadata"]["namespace"], smc["metadata"]["name"]) == (want_ns, want_name),
                   "the cluster network is not the default SpiderMultusConfig's NAD")
    pre = main.get("lifecycle", {}).get("preStop")
    if case.get("multus_uninstall"):
        expect(pre and "00-multus.conf" in " ".join(pre["exec"]["command"]), "multus.uninstall: no preStop cleanup")
    else:
        expect(pre is None, "multus removes its files on every stop (uninstall=false)")
    rules = rules_for_subject(r, "ServiceAccount", "spiderpool-multus", ns)
    expect(grants(rules, "k8s.cni.cncf.io", "network-attachment-definitions", "get"), "multus: read NADs")
    expect(not any(grants(rules, "k8s.cni.cncf.io", "network-attachment-definitions", v) for v in WRITE),
           "multus may write NADs")
    expect(grants(rules, "", "pods/status", "update") and grants(rules, "", "events", "create"),
           "multus: network-status / events")
    expect(not grants(rules, "", "secrets", "get"), "multus reads Secrets")


METRIC_RE = re.compile(r"\b((?:spiderpool|dra|controller_runtime|workqueue)_[a-zA-Z0-9_]+)\b")
_SOURCE_LITERALS = None


def source_metric_literals():
    """Every string literal that can be a metric name in our binaries' C++ sources (tests
    and the loopback server excluded)."""
    global _SOURCE_LITERALS
    if _SOURCE_LITERALS is None:
        lits = set()
        for top in ("agent", "operator", "kube", "dra", "ipam", "multus"):
            for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
                if "/testing" in dirpath or "/fuzz" in dirpath:
                    continue
                for fn in files:
                    if fn.endswith((".cc", ".h")) and not fn.endswith(("_test.cc", "_bench.cc", "_fuzz.cc")):
                        with open(os.path.join(dirpath, fn), errors="replace") as f:
                            lits.update(re.findall(r'"([a-zA-Z_:][a-zA-Z0-9_:]*)"', f.read()))
        _SOURCE_LITERALS = lits
    return _SOURCE_LITERALS


def metric_family(name, known):
    """The exported family of a series name (histogram _bucket/_count/_sum), or None."""
    if name in known:
        return name
    for suffix in ("_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return name[: -len(suffix)]
    return None


def monitoring_metrics(r):
    """Metric names used by the rendered PrometheusRules and the Grafana dashboard."""
    names = set()
    for rule in r.all("PrometheusRule"):
        for g in rule["spec"]["groups"]:
            for x in g["rules"]:
                names.update(METRIC_RE.findall(x["expr"]))
    for cm in r.all("ConfigMap"):
        for k, v in cm.get("data", {}).items():
            if k.endswith(".json") and "grafana" in cm["metadata"]["name"]:
                for p in json.loads(v)["panels"]:
                    for t in p.get("targets", []):
                        names.update(METRIC_RE.findall(t["expr"]))
    return names


def check_monitoring(r, case):
    want = case.get("alerts", [])
    rules = r.all("PrometheusRule")
    alerts = sorted(x["alert"] for rule in rules for g in rule["spec"]["groups"] for x in g["rules"])
    expect(alerts == sorted(want), f"alerts {alerts}, want {sorted(want)}")
    expect(len(rules) == case.get("rules", 0), f"{len(rules)} PrometheusRules")
    for rule in rules:
        expect(rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["metadata"]["namespace"] == r.ns,
               f"PrometheusRule {rule['metadata']['name']}")
        for g in rule["spec"]["groups"]:
            for x in g["rules"]:
                expect(METRIC_RE.findall(x["expr"]), f"alert {x['alert']} uses no metric of ours")
                expect(x["labels"].get("severity") and x["annotations"].get("summary"), f"alert {x['alert']} labels")
                expect("{{ $labels" in json.dumps(x["annotations"]) or x["alert"] == "SpiderpoolIPGCFailure"
                       or "$value" in json.dumps(x["annotations"]), f"alert {x['alert']}: template not rendered literally")
    dash = [c for c in r.all("ConfigMap") if c["metadata"]["name"] == "spiderpool-grafana-dashboard"]
    expect(len(dash) == (1 if case.get("dashboard") else 0), "Grafana dashboard ConfigMap")
    if dash:
        expect(dash[0]["metadata"]["labels"].get("grafana_dashboard") == "1", "dashboard: no grafana sidecar label")
        d = json.loads(dash[0]["data"]["spiderpool.json"])
        expect(len(d["panels"]) >= 8 and all(p.get("targets") for p in d["panels"]), "dashboard panels")
    # Every metric used is one our binaries export (names found in the C++ sources; the
    # chart-run check also scrapes the running binaries).
    known = source_metric_literals()
    used = monitoring_metrics(r)
    expect(bool(used) == bool(rules or dash), f"metrics used: {sorted(used)}")
    missing = sorted(n for n in used if metric_family(n, known) is None)
    expect(not missing, f"metrics not exported by our binaries: {missing}")
    # ... and the check can fail.
    expect(metric_family("spiderpool_no_such_metric_total", known) is None, "metric check accepts anything")


# ----------------------------------------------------------------------------- cases

CASES = [
    ("default", {}, {}),
    ("dra", {"dra": {"enabled": True}}, {"dra": True, "api": [VAP_API]}),
    ("dra-cdi-rdma-nics", {"dra": {"enabled": True, "cdiVersion": "0.6.0", "rdmaLibraryPath": "/usr/lib/librdma.so",
                                   "nicInclude": ["eth*"], "nicExclude": ["veth*", "cali*"],
                                   "declaredSubnets": {"eth1": ["10.7.0.0/24", "fd00:7::/64"]},
                                   "resourceNames": {"ens1f0": "spidernet.io/sriov_a"}}},
     {"dra": True, "api": [VAP_API], "flags": {"dra-cdi-version": "0.6.0", "dra-rdma-library": "/usr/lib/librdma.so",
                                               "nic-include": "eth*", "nic-exclude": "veth*,cali*",
                                               "dra-declared-subnets": "eth1=10.7.0.0/24,eth1=fd00:7::/64",
                                               "dra-resource-names": "ens1f0=spidernet.io/sriov_a"}}),
    ("dra-v1beta1-no-vap", {"dra": {"enabled": True, "resourceApiVersion": "resource.k8s.io/v1beta1"}},
     {"dra": True, "vap": False, "resource_api": "resource.k8s.io/v1beta1", "kube_version": "1.32.0"}),
    ("dra-no-seamless-upgrade", {"dra": {"enabled": True, "seamlessUpgrade": False}},
     {"dra": True, "seamless": False, "api": [VAP_API]}),
    ("ipv6", {"ipam": {"enableIPv4": False, "enableIPv6": True}}, {"ipv4": False, "ipv6": True}),
    ("dual-stack-dra", {"ipam": {"enableIPv6": True}, "dra": {"enabled": True}},
     {"ipv6": True, "dra": True, "api": [VAP_API]}),
    ("no-ip-family", {"ipam": {"enableIPv4": False}}, {"fail": "enableIPv"}),
    ("tls-provided", {"spiderpoolController": {"tls": {"method": "provided", "provided": {
        "tlsCert": "Y2VydA==", "tlsKey": "a2V5", "tlsCa": "Y2E="}}}},
     {"tls": "provided", "provided": ("Y2VydA==", "a2V5", "Y2E=")}),
    ("tls-provided-existing-secret", {"spiderpoolController": {"tls": {"method": "provided", "secretName": "my-certs"}}},
     {"tls": "provided", "secret": "my-certs"}),
    ("tls-provided-partial", {"spiderpoolController": {"tls": {"method": "provided", "provided": {"tlsCert": "eA=="}}}},
     {"fail": "set all of tlsCert, tlsKey and tlsCa"}),
    ("tls-certmanager", {"spiderpoolController": {"tls": {"method": "certmanager"}}, "dra": {"enabled": True}},
     {"tls": "certmanager", "dra": True, "api": [VAP_API]}),
    ("tls-certmanager-clusterissuer", {"spiderpoolController": {"tls": {"method": "certmanager", "certmanager": {
        "issuerName": "corp-ca", "issuerKind": "ClusterIssuer"}}}},
     {"tls": "certmanager", "issuer": "corp-ca"}),
    ("pod-resource-inject", {"spiderpoolController": {"podResourceInject": {"enabled": True}}},
     {"pod_inject": (["kube-system", "spiderpool", "metallb-system", "istio-system"], [])}),
    ("pod-resource-inject-include", {"spiderpoolController": {"podResourceInject": {
        "enabled": True, "namespacesExclude": [], "namespacesInclude": ["ai", "gpu"]}}},
     {"pod_inject": ([], ["ai", "gpu"])}),
    ("tls-bad-method", {"spiderpoolController": {"tls": {"method": "selfmade"}}}, {"fail": "method"}),
    ("default-pools-and-smc", {
        "ipam": {"enableIPv6": True},
        "clusterDefaultPool": {"installIPv4IPPool": True, "installIPv6IPPool": True,
                               "ipv4Subnet": "172.18.0.0/16", "ipv4IPRanges": ["172.18.30.131-172.18.30.140"],
                               "ipv4Gateway": "172.18.0.1", "ipv6Subnet": "fc00:f853:ccd:e793::/64",
                               "ipv6IPRanges": ["fc00:f853:ccd:e793::131-fc00:f853:ccd:e793::140"],
                               "multusName": ["kube-system/macvlan-conf"]},
        "defaultMultusConfig": {"install": True},
        "coordinator": {"installDefault": True}},
     {"ipv6": True, "defaults": ["SpiderIPPool", "SpiderIPPool", "SpiderMultusConfig", "SpiderCoordinator"]}),
    ("default-pool-without-subnet", {"clusterDefaultPool": {"installIPv4IPPool": True}}, {"fail": "ipv4Subnet"}),
    ("other-namespace-metrics-pdb", {
        "spiderpoolAgent": {"prometheus": {"enabled": True, "serviceMonitor": {"install": True}}},
        "spiderpoolController": {"prometheus": {"enabled": True, "serviceMonitor": {"install": True}},
                                 "podDisruptionBudget": {"enabled": True}, "hostnetwork": False,
                                 "replicas": 2},
        "dra": {"enabled": True}},
     {"namespace": "spiderpool", "dra": True, "api": [VAP_API], "monitors": 2, "pdb": True,
      "controller_replicas": 2}),
    ("pdb-blocks-drain", {"spiderpoolController": {"podDisruptionBudget": {"enabled": True}}},
     {"fail": "podDisruptionBudget.minAvailable"}),
    ("device-plugin", {"devicePlugin": {"enabled": True}, "dra": {"nicInclude": ["eth*", "ens*"]}},
     {"device_plugin": True, "nic_include": "eth*,ens*"}),
    ("ha-controller", {"spiderpoolController": {"replicas": 3}}, {"controller_replicas": 3}),
    ("unknown-value", {"spiderpoolAgent": {"imageTypo": "x"}}, {"fail": "imageTypo"}),
    # Issue 19 point 1: Multus, the pre-delete hook, PrometheusRules and the dashboard.
    ("multus-default-smc", {
        "multus": {"multusCNI": {"install": True}},
        "clusterDefaultPool": {"installIPv4IPPool": True, "ipv4Subnet": "172.18.0.0/16",
                               "ipv4IPRanges": ["172.18.30.131-172.18.30.140"]},
        "defaultMultusConfig": {"install": True, "namespace": "spiderpool-nets", "name": "underlay"}},
     {"multus": ("spiderpool-nets", "underlay"), "multus_is_default_smc": True,
      "smc_ns": "spiderpool-nets", "defaults": ["SpiderIPPool", "SpiderMultusConfig"]}),
    ("multus-cr-name", {"multus": {"multusCNI": {"install": True, "defaultCniCRName": "calico",
                                                 "image": {"tag": "v4.1.3"}}},
                        "global": {"imageRegistryOverride": "mirror.example.com"},
                        "clusterDefaultPool": {"installIPv4IPPool": True, "ipv4Subnet": "172.18.0.0/16",
                                               "ipv4IPRanges": ["172.18.30.131-172.18.30.140"]},
                        "defaultMultusConfig": {"install": True}, "dra": {"enabled": True}},
     {"multus": ("kube-system", "calico"), "multus_image": "mirror.example.com/k8snetworkplumbingwg/multus-cni:v4.1.3",
      "dra": True, "api": [VAP_API], "defaults": ["SpiderIPPool", "SpiderMultusConfig"]}),
    ("multus-auto-uninstall", {"multus": {"multusCNI": {"install": True, "uninstall": True}}},
     {"multus": "auto", "multus_uninstall": True}),
    ("cluster-network-without-multus", {"multus": {"multusCNI": {"defaultCniCRName": "net-ns/macvlan"}}},
     {"agent_cluster_network": "net-ns/macvlan"}),
    ("multus-bad-log-level", {"multus": {"multusCNI": {"install": True, "log": {"logLevel": "info"}}}},
     {"fail": "logLevel"}),
    ("cleanup-disabled", {"spiderpoolController": {"cleanup": {"enable": False}}}, {"cleanup": False}),
    ("cleanup-timeout", {"spiderpoolController": {"cleanup": {"timeoutSeconds": 300}}}, {"cleanup_timeout": 300}),
    ("monitoring-all", {
        "spiderpoolAgent": {"prometheus": {"enabled": True, "serviceMonitor": {"install": True},
                                           "prometheusRule": {"install": True}}},
        "spiderpoolController": {"prometheus": {"enabled": True, "serviceMonitor": {"install": True},
                                                "prometheusRule": {"install": True}}},
        "grafanaDashboard": {"install": True}, "dra": {"enabled": True}},
     {"dra": True, "api": [VAP_API], "monitors": 2, "rules": 2, "dashboard": True,
      "alerts": ["SpiderpoolIPAMAllocationFailure", "SpiderpoolIPAMHighAllocationDurations",
                 "SpiderpoolIPAMReleaseFailure", "SpiderpoolDRAPrepareFailure", "SpiderpoolIPGCFailure",
                 "SpiderpoolIPPoolNearlyExhausted", "SpiderpoolWebhookErrors"]}),
    ("monitoring-some-alerts", {
        "spiderpoolAgent": {"prometheus": {"prometheusRule": {
            "install": True, "enableWarningIPAMHighAllocationDurations": False}}},
        "spiderpoolController": {"prometheus": {"prometheusRule": {
            "install": True, "enableWarningWebhookErrors": False, "ipPoolExhaustedRatio": 0.8}}}},
     {"rules": 2, "alerts": ["SpiderpoolIPAMAllocationFailure", "SpiderpoolIPAMReleaseFailure",
                             "SpiderpoolIPGCFailure", "SpiderpoolIPPoolNearlyExhausted"]}),
    ("monitoring-bad-ratio", {"spiderpoolController": {"prometheus": {"prometheusRule": {"ipPoolExhaustedRatio": 2}}}},
     {"fail": "ipPoolExhaustedRatio"}),
]


def check_case(helm, name, values, case, bins):
    ns = case.get("namespace", "kube-system")
    with tempfile.TemporaryDirectory() as tmp:
        lint, out = helm_render(helm, values, ns, case.get("api", []), case.get("kube_version"), tmp)
    if "fail" in case:
        expect(out.returncode != 0, "rendered, but these values must be refused")
        expect(case["fail"] in out.stderr, f"refused without naming {case['fail']!r}: {out.stderr.strip()}")
        # (helm lint only logs a template's `fail`: the schema cases fail lint too, the others not.)
        return
    expect(lint.returncode == 0, f"helm lint --strict failed:\n{lint.stdout}{lint.stderr}")
    expect(out.returncode == 0, f"helm template failed:\n{out.stderr}")
    r = Rendered(out.stdout, ns)
    always = {"ConfigMap", "DaemonSet", "Deployment", "Service", "ServiceAccount", "ClusterRole",
              "ClusterRoleBinding", "Role", "RoleBinding", "MutatingWebhookConfiguration",
              "ValidatingWebhookConfiguration"}
    missing = always - set(r.kinds())
    expect(not missing, f"kinds missing: {sorted(missing)}")
    expect(len(r.all("ServiceMonitor")) == case.get("monitors", 0), "ServiceMonitors")
    expect(r.has("PodDisruptionBudget") == case.get("pdb", False), "PodDisruptionBudget")
    for sm in r.all("ServiceMonitor"):
        comp = sm["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
        svc = r.one("Service", comp)
        expect(svc["metadata"]["labels"].items() >= sm["spec"]["selector"]["matchLabels"].items(),
               f"ServiceMonitor {comp} selects no Service")
        expect(any(p["name"] == "metrics" for p in svc["spec"]["ports"]), f"Service {comp}: no metrics port")
    if "nic_include" in case:
        case.setdefault("flags", {})["nic-include"] = case["nic_include"]
    af = flags(container(r.one("DaemonSet", "spiderpool-agent")["spec"]["template"]["spec"], "spiderpool-agent"))
    for k, v in case.get("flags", {}).items():
        expect(af.get(k) == v, f"agent --{k}={af.get(k)}, want {v}")
    if not case.get("flags"):
        for k in ("dra-cdi-version", "dra-rdma-library", "nic-include", "nic-exclude"):
            expect(k not in af, f"agent --{k} set by default")
    check_common(r, case, bins)
    check_rbac_table(r, name)
    check_cleanup(r, case, bins)
    check_multus(r, case)
    check_monitoring(r, case)


def check_package(helm):
    with tempfile.TemporaryDirectory() as tmp:
        p = run([helm, "package", CHART, "-d", tmp])
        expect(p.returncode == 0, f"helm package: {p.stderr}")
        out = run([helm, "template", "spiderpool", glob.glob(os.path.join(tmp, "*.tgz"))[0], "--include-crds",
                   "-n", "kube-system", "--set", "dra.enabled=true"])
        expect(out.returncode == 0, f"template of the package: {out.stderr}")
        crds = [o for o in yaml.safe_load_all(out.stdout) if o and o["kind"] == "CustomResourceDefinition"]
        files = glob.glob(os.path.join(CHART, "crds", "*.yaml"))
        expect(len(crds) == len(files), f"{len(crds)} CRDs in the package, {len(files)} files in crds/")
        idx = run([helm, "repo", "index", tmp, "--url", "https://example.invalid/charts"])
        expect(idx.returncode == 0, f"helm repo index: {idx.stderr}")
        with open(os.path.join(tmp, "index.yaml")) as f:
            entries = yaml.safe_load(f)["entries"]
        expect(list(entries) == ["spiderpool"], f"repository index entries {list(entries)}")
        notes = run([helm, "install", "spiderpool", CHART, "--dry-run=client", "-n", "kube-system",
                     "--set", "dra.enabled=true"])
        expect(notes.returncode == 0 and "kubectl get resourceslices" in notes.stdout,
               f"NOTES.txt: {notes.stderr[-500:]}")
        expect("the controller (1 replica)" in notes.stdout and "node of its own" not in notes.stdout,
               "NOTES.txt does not say the controller runs 1 replica")
        ha = run([helm, "install", "spiderpool", CHART, "--dry-run=client", "-n", "kube-system",
                  "--set", "spiderpoolController.replicas=3"])
        expect(ha.returncode == 0 and "the controller (3 replicas, one leader)" in ha.stdout
               and "each controller replica needs a node of its own" in ha.stdout,
               f"NOTES.txt with 3 host-network replicas: {ha.stdout[-800:]}{ha.stderr[-300:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--agent")
    ap.add_argument("--controller")
    ap.add_argument("--only")
    a = ap.parse_args()
    bins = {"agent": a.agent, "controller": a.controller} if a.agent and a.controller else None
    failed = 0
    total = 0
    cases = [(n, v, c) for n, v, c in CASES if not a.only or a.only == n]
    checks = [(f"values:{n}", lambda n=n, v=v, c=c: check_case(a.helm, n, v, dict(c), bins)) for n, v, c in cases]
    if not a.only:
        checks.append(("package+repo-index+crds+notes", lambda: check_package(a.helm)))
        checks.append(("rbac-table: every README.md row rendered", check_rbac_rows_rendered))
    for name, fn in checks:
        total += 1
        try:
            fn()
            print(f"PASS {name}")
        except CheckError as e:
            failed += 1
            print(f"FAIL {name}: {e}")
    print(f"chart checks: {total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
