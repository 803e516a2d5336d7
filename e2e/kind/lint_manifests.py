#!/usr/bin/env python3
"""Parses every e2e manifest (e2e/**/*.yaml) the way the scripts use it: the __PLACEHOLDERS__ of
e2e/kind/manifests filled with sample values, the seed's samples as they are. Each document
needs apiVersion, kind and metadata.name; Spider* objects are checked against the CRD schemas
in charts/spiderpool/crds (charts/spiderpool/tests/check_chart.py's validator); the claim
manifests must carry the SpiderClaimParameter reference the driver reads. Exit 1 on any error.
"""

import glob
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ inside the chart
sys.path.insert(0, os.path.join(ROOT, "charts", "spiderpool", "tests"))
import check_chart  # noqa: E402

SAMPLE = {
    "NS": "e2e-x", "NAME": "x", "SMC": "macvlan-conf", "SMC_NS": "kube-system", "MASTER": "eth0",
    "REPLICAS": "2", "RCT": "x", "NETWORK": "kube-system/macvlan-conf", "IMAGE": "busybox:1.36.1",
    "MTU": "1400", "RESOURCE_API": "resource.k8s.io/v1", "NODE_SELECTOR": '{"kubernetes.io/hostname": "n1"}',
    "SELECTORS": '[{"cel": {"expression": "device.driver == \\"netresources.spidernet.io\\""}}]',
}


def main():
    crds = check_chart.load_crds()
    errors = []
    files = sorted(glob.glob(os.path.join(ROOT, "e2e", "**", "*.yaml"), recursive=True))
    for path in files:
        rel = os.path.relpath(path, ROOT)
        with open(path) as f:
            text = f.read()
        for k, v in SAMPLE.items():
            text = text.replace(f"__{k}__", v)
        if "__" in text.replace("__init__", ""):
            left = [w for w in text.split() if w.startswith("__") or "__" in w]
            errors.append(f"{rel}: placeholder without a sample value: {left[:3]}")
        try:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as e:
            errors.append(f"{rel}: {e}")
            continue
        if not docs:
            errors.append(f"{rel}: no objects")
        for d in docs:
            where = f"{rel}: {d.get('kind')}/{d.get('metadata', {}).get('name')}"
            if not (d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name")):
                errors.append(f"{where}: apiVersion, kind and metadata.name are required")
                continue
            if d["kind"] in crds:
                try:
                    check_chart.validate(crds[d["kind"]], {k: v for k, v in d.items() if k not in ("apiVersion", "kind")},
                                         where)
                except check_chart.CheckError as e:
                    errors.append(str(e))
            if d["kind"] == "ResourceClaimTemplate":
                spec = d["spec"]["spec"]["devices"]
                req = spec["requests"][0]
                cls = req.get("exactly", req).get("deviceClassName")
                cfg = spec["config"][0]["opaque"]
                if cls != "netresources.spidernet.io" or cfg["driver"] != "netresources.spidernet.io":
                    errors.append(f"{where}: not our DeviceClass/driver")
                if cfg["parameters"].get("kind") != "SpiderClaimParameter" or \
                        cfg["parameters"].get("apiVersion") != "spiderpool.spidernet.io/v2beta1":
                    errors.append(f"{where}: opaque parameters do not reference a SpiderClaimParameter")
        print(f"ok   {rel} ({len(docs)} objects)")
    for e in errors:
        print(f"FAIL {e}")
    print(f"e2e manifests: {len(files)} files, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
