#!/usr/bin/env bash
# An Elasticsearch image without a registry: Debian bookworm + OpenJDK 17 (headless JRE) +
# the integ-test-zip distribution of Elasticsearch from Maven Central (SHA-1 verified), packed
# as docker.io/local/elasticsearch:VERSION. The integ-test-zip is the minimal distribution
# (transport-netty4, x-pack-core, x-pack-security): enough for the bundled tracks, and its
# security module gives the HTTPS + basic-auth endpoint that ECK gives in production.
# Usage: scripts/images/elasticsearch.sh [VERSION]  (default 8.7.1; also 7.17.x and 8.19.x)
# Runs as uid 1000. Entrypoint es-entrypoint.sh: puts $ELASTIC_PASSWORD into the keystore as
# bootstrap.password (the elastic user's password until one is set), then starts Elasticsearch.
#
# What the real ECK operator needs besides, in these offline test images only (official
# images have all of it; neither esbench's chart nor its operator depends on any of it):
# - bash, curl and nc for ECK's init script and probes;
# - eck-shim/: a module of ours, compiled here against the distribution's own jars, with the
#   node shutdown API ECK reads (x-pack-shutdown) and empty `ilm`/`slm` reserved-state
#   handlers, which ECK's file-based settings name (x-pack-ilm, x-pack-slm): the minimal zip
#   has neither, and ECK then never finishes reconciling (7.17) or ES never turns ready (8.x).
#   Its entry point comes in two plugin APIs, v8.7/ (also used for 7.17, whose REST handler
#   takes 7.x's class names and which has no file-based settings, so no reserved-state
#   handlers) and v8.19/. Built and run under ECK here: 7.17.29, 8.7.1, 8.19.21; other 8.x
#   minors take v8.7/ and may need a variant.
# - `GET /` where the minimal distribution lacks it (8.19 on): the module `esbench run` adds to
#   its local nodes too (operator/esbench/localnode/rootendpoint.py). Rally reads the version from it,
#   ECK the cluster's UUID. Official images have it (their rest-root module).
# - eck-shim/nofile.c, preloaded (LD_PRELOAD): the open-files hard limit of these machines
#   (20000, not raisable without CAP_SYS_RESOURCE) fails the bootstrap checks that ES enforces
#   under ECK's multi-node discovery (65535); it reports 65535 instead.
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

hash=$(content_hash "$images_dir/elasticsearch.sh" "$images_dir/lib.sh" "$images_dir/oci-pack.py" "$zip.sha1" \
  "$images_dir/eck-shim" "$repo_root/operator/esbench/localnode/rootendpoint.py" \
  "$repo_root/operator/esbench/localnode/root_endpoint_module")
archive="$image_cache/elasticsearch-$version-$hash.tar"
[ -s "$archive" ] && { echo "$archive"; exit 0; }

work=$(mktemp -d "$image_cache/.elasticsearch.XXXXXX")
trap 'rm -rf "$work"' EXIT
unzip -q "$zip" -d "$work"
es_dir="$work/elasticsearch-$version"
shim="$es_dir/modules/esbench-eck-shim"
mkdir -p "$work/classes" "$shim"
shim_src="$images_dir/eck-shim"
case $version in
  8.19.*) plugin_api=v8.19 ;;
  *) plugin_api=v8.7 ;;
esac
if [ "${version%%.*}" = 7 ]; then
  # 7.x: the same REST handler under 7.x's class names (NodeClient's package, BytesRestResponse);
  # no reserved-state handlers, as 7.x has no file-based settings for ECK to write.
  mkdir -p "$work/src7"
  sed -e 's/client\.internal\.node\.NodeClient/client.node.NodeClient/' -e 's/\bRestResponse\b/BytesRestResponse/g' \
    "$shim_src/src/io/esbench/eckshim/NoNodeShutdowns.java" > "$work/src7/NoNodeShutdowns.java"
  sources=("$work/src7/NoNodeShutdowns.java" "$shim_src/$plugin_api/io/esbench/eckshim/EckShimPlugin.java")
else
  mapfile -t sources < <(find "$shim_src/src" "$shim_src/$plugin_api" -name '*.java')
  cp -r "$shim_src/META-INF" "$work/classes/"
fi
javac --release 17 -nowarn -cp "$es_dir/lib/*" -d "$work/classes" "${sources[@]}" >&2
jar --create --file "$shim/esbench-eck-shim.jar" -C "$work/classes" .
cat > "$shim/plugin-descriptor.properties" <<PROPERTIES
description=esbench's stand-ins for the x-pack APIs that ECK calls (offline test images only)
version=$version
name=esbench-eck-shim
classname=io.esbench.eckshim.EckShimPlugin
java.version=17
elasticsearch.version=$version
PROPERTIES
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
PYTHONPATH="$repo_root/operator" python3 -m esbench.localnode.rootendpoint "$es_dir" "$jdk"
gcc -shared -fPIC -O2 -Wall -o "$work/esbench-nofile.so" "$images_dir/eck-shim/nofile.c" -ldl
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
  --customize-hook="copy-in $work/esbench-nofile.so /usr/local/lib"
  --customize-hook='chroot "$1" '"${CHROOT_ENV[*]}"' sh -ec "
      mv /usr/share/elasticsearch-'"$version"' /usr/share/elasticsearch
      chmod 0755 /usr/local/bin/es-entrypoint.sh
      useradd --uid 1000 --gid 0 --home-dir /usr/share/elasticsearch --no-create-home elasticsearch
      mkdir -p /usr/share/elasticsearch/data /usr/share/elasticsearch/logs
      chown -R 1000:0 /usr/share/elasticsearch
      chmod -R g=u /usr/share/elasticsearch"'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
)
mmdebstrap --quiet --variant=apt --include=openjdk-17-jre-headless,curl,netcat-openbsd "${debian_rootfs_hooks[@]}" \
  "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >&2

python3 "$images_dir/oci-pack.py" --layer "$work/rootfs" --name "$name" --out "$archive" \
  --entrypoint '["/usr/local/bin/es-entrypoint.sh"]' --user 1000:0 --workdir /usr/share/elasticsearch \
  --env PATH=/usr/share/elasticsearch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env ES_JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 \
  --env ES_PATH_CONF=/usr/share/elasticsearch/config --env LD_PRELOAD=/usr/local/lib/esbench-nofile.so >/dev/null
prune_older "elasticsearch-$version" "$archive"
echo "$archive"
