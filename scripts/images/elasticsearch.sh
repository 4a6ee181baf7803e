#!/usr/bin/env bash
# An Elasticsearch image without a registry: Debian bookworm + OpenJDK 17 (headless JRE) +
# the integ-test-zip distribution of Elasticsearch from Maven Central (SHA-1 verified), packed
# as docker.io/local/elasticsearch:VERSION. The integ-test-zip is the minimal distribution
# (transport-netty4, x-pack-core, x-pack-security): enough for the bundled tracks, and its
# security module gives the HTTPS + basic-auth endpoint that ECK gives in production.
# Usage: scripts/images/elasticsearch.sh [VERSION]  (default 8.7.1; 8.19.x lacks `GET /`, which Rally needs)
# Runs as uid 1000. Entrypoint es-entrypoint.sh: puts $ELASTIC_PASSWORD into the keystore as
# bootstrap.password (the elastic user's password until one is set), then starts Elasticsearch.
# Prints the archive's path. Cached by content hash; the zip is cached in $ESBENCH_CACHE/elasticsearch.
source "$(dirname "$0")/lib.sh"
version=${1:-8.7.1}
name=docker.io/local/elasticsearch:$version
zip_dir="$cache/elasticsearch"
zip="$zip_dir/elasticsearch-$version.zip"
url="https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch/$version/elasticsearch-$version.zip"

mkdir -p "$zip_dir"
if [ ! -s "$zip.sha1" ]; then
  curl -fsSL "$url.sha1" -o "$zip.sha1.tmp" && mv "$zip.sha1.tmp" "$zip.sha1"
fi
if [ ! -s "$zip" ]; then
  echo "downloading $url" >&2
  curl -fsSL "$url" -o "$zip.tmp" && mv "$zip.tmp" "$zip"
fi
expected=$(cut -c1-40 "$zip.sha1")
actual=$(sha1sum "$zip" | cut -c1-40)
[ "$expected" = "$actual" ] || { echo "elasticsearch.sh: SHA-1 mismatch for $zip ($actual, expected $expected)" >&2; rm -f "$zip"; exit 1; }

hash=$(content_hash "$images_dir/elasticsearch.sh" "$images_dir/lib.sh" "$images_dir/oci-pack.py" "$zip.sha1")
archive="$image_cache/elasticsearch-$version-$hash.tar"
[ -s "$archive" ] && { echo "$archive"; exit 0; }

work=$(mktemp -d "$image_cache/.elasticsearch.XXXXXX")
trap 'rm -rf "$work"' EXIT
unzip -q "$zip" -d "$work"
cat > "$work/es-entrypoint.sh" <<'SH'
#!/bin/sh
# The Elasticsearch container's entrypoint (image built by scripts/images/elasticsearch.sh).
set -eu
cd /usr/share/elasticsearch
if [ -n "${ELASTIC_PASSWORD:-}" ] && [ ! -f config/elasticsearch.keystore ]; then
  bin/elasticsearch-keystore create >/dev/null
  printf '%s' "$ELASTIC_PASSWORD" | bin/elasticsearch-keystore add -x -f bootstrap.password
fi
exec bin/elasticsearch "$@"
SH

debian_rootfs_hooks=(
  --customize-hook="copy-in $work/elasticsearch-$version /usr/share"
  --customize-hook="copy-in $work/es-entrypoint.sh /usr/local/bin"
  --customize-hook='chroot "$1" '"${CHROOT_ENV[*]}"' sh -ec "
      mv /usr/share/elasticsearch-'"$version"' /usr/share/elasticsearch
      chmod 0755 /usr/local/bin/es-entrypoint.sh
      useradd --uid 1000 --gid 0 --home-dir /usr/share/elasticsearch --no-create-home elasticsearch
      mkdir -p /usr/share/elasticsearch/data /usr/share/elasticsearch/logs
      chown -R 1000:0 /usr/share/elasticsearch
      chmod -R g=u /usr/share/elasticsearch"'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
)
mmdebstrap --quiet --variant=apt --include=openjdk-17-jre-headless "${debian_rootfs_hooks[@]}" \
  "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >&2

python3 "$images_dir/oci-pack.py" --rootfs "$work/rootfs" --name "$name" --out "$archive" \
  --entrypoint '["/usr/local/bin/es-entrypoint.sh"]' --user 1000:0 --workdir /usr/share/elasticsearch \
  --env PATH=/usr/share/elasticsearch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env ES_JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 \
  --env ES_PATH_CONF=/usr/share/elasticsearch/config >/dev/null
prune_older "elasticsearch-$version" "$archive"
echo "$archive"
