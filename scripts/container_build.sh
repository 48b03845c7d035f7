#!/bin/sh
# Builds and runs the project's Dockerfile without a Docker engine or a container registry, from
# Debian's packages only (buildah, podman, debootstrap), then fetches the page from the container.
# Not run in CI: it needs root, ~30 GB of disk and 10-20 minutes (docs/spaces.md has the figures).
#
#   apt-get install -y debootstrap buildah podman
#   sh scripts/container_build.sh            # from the repository root, as root
#
# Steps: 1. debootstrap a minimal Debian bookworm with python3 and import it as a local base image
# (no registry needed); 2. build the Dockerfile FROM it with buildah; 3. run it with podman;
# 4. wait until the page answers, and report the times, the image size and the app's memory.
# Settings (environment):
#   WORK=/var/tmp/specviz-container   where the debootstrapped folder and the logs go
#   BASE_IMAGE=localhost/debian-bookworm-python3   the local base image (made once, then reused)
#   IMAGE=localhost/specviz           the image built
#   WHEELS=/opt/wheels                a folder holding torch's CPU wheel, mounted into the build, for
#                                     machines that cannot reach download.pytorch.org; empty: use that index
#   CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt   the host's CA certificates, mounted into the build for
#                                     pip (a proxy that re-signs TLS has its CA there); empty: the image's own
#   PORT=7860                         the host port the page is fetched on
#   ISOLATION=chroot                  buildah's isolation: chroot needs no user namespaces
#   BUILD=1                           0: skip steps 1-2 and run the image already built
#   KEEP_RUNNING=0                    1: leave the app running after the check
set -eu

WORK=${WORK:-/var/tmp/specviz-container}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-bookworm-python3}
IMAGE=${IMAGE:-localhost/specviz}
WHEELS=${WHEELS-/opt/wheels}
CA_BUNDLE=${CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}
PORT=${PORT:-7860}
ISOLATION=${ISOLATION:-chroot}
BUILD=${BUILD:-1}
KEEP_RUNNING=${KEEP_RUNNING:-0}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CONTAINER=specviz-check

say() { printf '\n== %s\n' "$*"; }
now() { date +%s; }
die() { echo "container_build.sh: $*" >&2; exit 1; }

[ -f Dockerfile ] && [ -d specviz ] || die "run me from the repository root"
[ "$(id -u)" = 0 ] || die "run me as root (debootstrap and the builder need it)"
for tool in debootstrap buildah podman curl; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install -y debootstrap buildah podman curl"
done
mkdir -p "$WORK"

build_s=0
if [ "$BUILD" = 1 ]; then
    say "1. base image $BASE_IMAGE from Debian's mirror"
    if podman image exists "$BASE_IMAGE"; then
        echo "already there (podman rmi $BASE_IMAGE to remake it)"
    else
        t0=$(now)
        rm -rf "$WORK/rootfs"
        nice -n 10 debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$WORK/rootfs" "$MIRROR"
        rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
        tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE"
        rm -rf "$WORK/rootfs"
        echo "base image made in $(( $(now) - t0 )) s"
    fi

    say "2. build $IMAGE (buildah, isolation $ISOLATION)"
    set -- --build-arg "BASE=$BASE_IMAGE"
    pip_options=""
    if [ -n "$WHEELS" ]; then   # the CPU wheel from a local folder instead of download.pytorch.org
        set -- "$@" --build-arg TORCH_INDEX= --volume "$WHEELS:/run/wheels:ro"
        pip_options="--find-links /run/wheels"
    fi
    if [ -n "$CA_BUNDLE" ]; then
        set -- "$@" --volume "$CA_BUNDLE:/run/host-ca.crt:ro"
        pip_options="$pip_options --cert /run/host-ca.crt"
    fi
    t0=$(now)
    { nice -n 10 buildah bud --isolation "$ISOLATION" --layers=false "$@" --build-arg "PIP_OPTIONS=$pip_options" \
          -t "$IMAGE" . 2>&1; echo $? > "$WORK/build.rc"; } | tee "$WORK/build.log"
    [ "$(cat "$WORK/build.rc")" = 0 ] || die "the build failed (log: $WORK/build.log)"
    build_s=$(( $(now) - t0 ))
fi
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")

say "3. run it"
stop_app() {
    podman rm -f "$CONTAINER" >/dev/null 2>&1 || true
    if [ -n "${runner_pid:-}" ]; then kill "$runner_pid" 2>/dev/null || true; wait "$runner_pid" 2>/dev/null || true; fi
    buildah rm "$CONTAINER" >/dev/null 2>&1 || true
}
stop_app
t0=$(now)
if podman run -d --name "$CONTAINER" -p "$PORT:7860" "$IMAGE" >/dev/null 2>"$WORK/podman.err"; then
    runner="podman run -p $PORT:7860"
else
    # A sandbox without CAP_SYS_RESOURCE makes crun fail on setrlimit; buildah's chroot isolation
    # runs the same image (its user, folder, environment and command) on the host's network.
    echo "podman run failed ($(tail -1 "$WORK/podman.err")); running it with buildah run instead"
    podman rm -f "$CONTAINER" >/dev/null 2>&1 || true
    buildah from --name "$CONTAINER" "$IMAGE" >/dev/null
    buildah run --isolation "$ISOLATION" --env "GRADIO_SERVER_PORT=$PORT" "$CONTAINER" -- python app.py \
        > "$WORK/run.log" 2>&1 &
    runner_pid=$!
    runner="buildah run --isolation $ISOLATION (host network)"
fi
trap 'if [ "$KEEP_RUNNING" != 1 ]; then stop_app; fi' EXIT

say "4. fetch the page on http://127.0.0.1:$PORT/"
until curl -fsS -o "$WORK/page.html" "http://127.0.0.1:$PORT/" 2>/dev/null; do
    if [ -n "${runner_pid:-}" ]; then
        kill -0 "$runner_pid" 2>/dev/null || { tail -20 "$WORK/run.log"; die "the app stopped before the page answered"; }
    elif [ "$(podman inspect --format '{{.State.Running}}' "$CONTAINER")" != true ]; then
        podman logs "$CONTAINER" | tail -20; die "the container stopped before the page answered"
    fi
    [ $(( $(now) - t0 )) -lt 600 ] || die "no page after 600 s"
    sleep 1
done
answer_s=$(( $(now) - t0 ))
grep -q "gradio" "$WORK/page.html" || die "the answer is not the Gradio page (see $WORK/page.html)"
app_pid=$(ss -Hltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
rss_kb=$(ps -o rss= -p "$app_pid")

echo "runner:       $runner"
echo "build:        ${build_s} s (log: $WORK/build.log)"
echo "image size:   $(( size / 1000000 )) MB ($IMAGE)"
echo "page after:   ${answer_s} s from the start ($(wc -c < "$WORK/page.html") bytes in $WORK/page.html)"
echo "app RSS:      $(( rss_kb / 1024 )) MiB (pid $app_pid), the page served, no model loaded yet"
if [ "$KEEP_RUNNING" = 1 ]; then
    echo "left running on http://127.0.0.1:$PORT/ (stop: podman rm -f $CONTAINER, or kill ${runner_pid:-} and buildah rm $CONTAINER)"
fi
