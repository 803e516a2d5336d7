#!/usr/bin/env bash
# Builds and tags the two images from images/Dockerfile (one build stage: the same Bazel targets
# the tests use, -c opt):
#   <registry/>spiderpool-cpp/spiderpool-controller:<tag>
#   <registry/>spiderpool-cpp/spiderpool-agent:<tag>
# The chart's defaults (spiderpoolAgent.image / spiderpoolController.image, tag = appVersion)
# name exactly these.
#
#   tools/build-images.sh [--tag TAG] [--registry REGISTRY] [--push] [--print]
#     --tag       image tag (default: appVersion of charts/spiderpool/Chart.yaml)
#     --registry  prefix, e.g. ghcr.io/me (default: none, i.e. local images)
#     --push      push both images after building
#     --print     only print the two image references
# Environment: CONTAINER_TOOL=docker|podman (default: docker, else podman).
set -euo pipefail
cd "$(dirname "$0")/.."

tag=""
registry=""
push=0
print_only=0
while (($#)); do
  case $1 in
    --tag) tag=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --push) push=1; shift ;;
    --print) print_only=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build-images: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ -z $tag ]]; then
  tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' charts/spiderpool/Chart.yaml)
fi
[[ -n $tag ]] || { echo "build-images: no tag (appVersion missing in Chart.yaml?)" >&2; exit 1; }
prefix=${registry:+${registry%/}/}spiderpool-cpp

images=()
for component in spiderpool-controller spiderpool-agent; do
  images+=("$prefix/$component:$tag")
done
if ((print_only)); then
  printf '%s\n' "${images[@]}"
  exit 0
fi

tool=${CONTAINER_TOOL:-}
if [[ -z $tool ]]; then
  if command -v docker >/dev/null; then tool=docker
  elif command -v podman >/dev/null; then tool=podman
  else echo "build-images: needs docker or podman" >&2; exit 1
  fi
fi

export DOCKER_BUILDKIT=1
for component in spiderpool-controller spiderpool-agent; do
  ref="$prefix/$component:$tag"
  echo "=== building $ref"
  "$tool" build -f images/Dockerfile --target "$component" -t "$ref" .
  if ((push)); then
    "$tool" push "$ref"
  fi
done
printf 'built %s\n' "${images[@]}"
