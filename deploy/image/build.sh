#!/usr/bin/env bash
# Builds the ratelab image (deploy/image/Dockerfile) without pulling anything: ratelab is compiled
# on the host as a static binary (CGO off), and the context holds only what the image copies.
#   usage: deploy/image/build.sh [IMAGE]     (default ratelab:dev; GO and VERSION from the env)
set -euo pipefail
cd "$(dirname "$0")/../.."
image="${1:-ratelab:dev}"
go="${GO:-go}"
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
certs=/etc/ssl/certs/ca-certificates.crt
[ -r "$certs" ] || { echo "image: $certs not found: install the ca-certificates package (TLS to rediss:// clusters needs it)" >&2; exit 1; }
command -v docker >/dev/null || { echo "image: docker not found: install a Docker engine to build the image" >&2; exit 1; }

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
# -buildvcs=auto records the commit for `ratelab version` even where GOFLAGS turns it off.
CGO_ENABLED=0 "$go" build -trimpath -buildvcs=auto -ldflags "-s -w -X main.version=$version" \
	-o "$ctx/ratelab" ./cmd/ratelab
cp deploy/image/Dockerfile "$certs" "$ctx/"
printf 'root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' >"$ctx/passwd"
mkdir -m 1777 "$ctx/tmp"
mkdir -m 0755 "$ctx/work"
docker build --quiet --build-arg "VERSION=$version" --build-arg "REVISION=$revision" -t "$image" "$ctx" >/dev/null
echo "built $image ($version, $(du -h "$ctx/ratelab" | cut -f1) binary): docker run --rm $image version"
