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
