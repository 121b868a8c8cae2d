#!/usr/bin/env bash
# Run short hopsim scenarios on x86-64 (this machine) and on emulated aarch64 (qemu-user in a
# Debian arm64 chroot), and compare the recorded streams' SHA-256s, which hopsim promises equal
# on every CPU. On a difference, the x86-64 recording is replayed inside the chroot
# (`hopsim replay`), which names the first envelope that differs.
#
# Not part of `make test`: it needs root, Debian's apt mirrors and PyPI, and takes minutes
# (the first time, ~15 min to build the root file system; afterwards ~1-3 min per scenario).
#
# Usage (as root, on a Debian/Ubuntu x86-64 host, from anywhere):
#     tests/aarch64/run_emulated.sh                 # the default scenarios below
#     tests/aarch64/run_emulated.sh "lander 10"     # one or more "NAME SECONDS [KEY=VALUE ...]"
# Exit status: 0 all streams identical, 1 some stream differs, 2 a run failed / setup error.
#
# Environment (all optional):
#     AARCH64_ROOT    the arm64 root file system        (default /work/aarch64-root; reused if there)
#     AARCH64_WHEELS  aarch64 wheels, downloaded once   (default /work/aarch64-wheels)
#     AARCH64_OUT     recordings, logs, summary.tsv     (default /work/aarch64-out)
#     HOST_PYTHON     the host venv's python            (default <repo>/.venv/bin/python)
#     DEBIAN_MIRROR   (default http://deb.debian.org/debian), SUITE (default bookworm)
#     NICE            prefix for heavy commands         (default "nice -n 19")
#     COLD_CACHE=1    empty numba's cache in the chroot before each scenario (default: kept, in
#                     ROOT/var/tmp/numba-cache: compiling the kernels under emulation takes ~10 min
#                     the first time; a scenario's log says what it compiled and how long it took)
#
# What it does, each step skipped when already done:
#   1. apt-get install qemu-user-static binfmt-support debootstrap; mount binfmt_misc and
#      enable qemu-aarch64 (if binfmt_misc cannot be used, the chroot's programs are started
#      through qemu-aarch64-static explicitly: see QEMU_PREFIX).
#   2. debootstrap --arch=arm64 --foreign SUITE, then its second stage inside the chroot,
#      with python3 and python3-venv.
#   3. pip download (on the host) the aarch64 cp311 wheels of hopsim's runtime dependency
#      closure, pinned to the versions installed in the host venv (so both sides run the same
#      numpy/numba/llvmlite/protobuf...), plus a wheel of the working tree of hopsim.
#   4. Inside the chroot: a venv at /opt/hopsim-venv, those wheels installed offline
#      (--no-index), hopsim reinstalled from the fresh wheel every time.
#   5. Each scenario run on both sides with `hopsim run NAME --duration S --set ... --out F`
#      (numba's cache in /var/tmp/numba-cache inside the chroot, kept between runs); stream_sha256 read from
#      `hopsim inspect F`; compared; on a difference `hopsim replay` of the x86-64 file in the chroot.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ROOT=${AARCH64_ROOT:-/work/aarch64-root}
WHEELS=${AARCH64_WHEELS:-/work/aarch64-wheels}
OUT=${AARCH64_OUT:-/work/aarch64-out}
HOST_PYTHON=${HOST_PYTHON:-$REPO/.venv/bin/python}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}
NICE=${NICE:-nice -n 19}
VENV=/opt/hopsim-venv   # inside the chroot
if [ $# -gt 0 ]; then
    SCENARIOS=("$@")
else
    SCENARIOS=("leader_follower 5" "lander 10" "formation 10 n_vehicles=4")
fi

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot, mount)"
[ "$(uname -m)" = x86_64 ] || die "this compares an x86-64 host with emulated aarch64"
[ -x "$HOST_PYTHON" ] || die "no host python at $HOST_PYTHON (make the venv first)"

# ---- 1. qemu-user and binfmt_misc -------------------------------------------------------------
need=()
for cmd in qemu-aarch64-static:qemu-user-static update-binfmts:binfmt-support debootstrap:debootstrap; do
    command -v "${cmd%%:*}" >/dev/null || need+=("${cmd#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    log "apt-get install ${need[*]}"
    $NICE apt-get install -y "${need[@]}" >/dev/null
fi
QEMU_PREFIX=()
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
fi
if [ -e /proc/sys/fs/binfmt_misc/register ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    update-binfmts --enable qemu-aarch64 2>/dev/null || true
fi
if ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
    log "binfmt_misc unavailable: starting the chroot's programs through qemu-aarch64-static"
    QEMU_PREFIX=(/usr/bin/qemu-aarch64-static)
fi

# ---- 2. the arm64 root file system ------------------------------------------------------------
install_qemu_in_root() {
    # the binfmt entry (flags PF, no F) opens its interpreter by path inside the chroot
    mkdir -p "$ROOT/usr/bin" "$ROOT/usr/libexec/qemu-binfmt"
    cp -u /usr/bin/qemu-aarch64-static "$ROOT/usr/bin/"
    ln -sfn ../../bin/qemu-aarch64-static "$ROOT/usr/libexec/qemu-binfmt/aarch64-binfmt-P"
}
MOUNTS=()
cleanup() {
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() {  # bind SRC DEST [ro]
    mkdir -p "$2"
    mountpoint -q "$2" && return 0
    mount --bind "$1" "$2"
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
    MOUNTS+=("$2")
}
in_root() {  # run a command inside the chroot (niced), with a clean environment
    $NICE chroot "$ROOT" "${QEMU_PREFIX[@]}" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=$VENV/bin:/usr/local/bin:/usr/bin:/bin NUMBA_CACHE_DIR=/var/tmp/numba-cache \
        COLUMNS=400 TERM=dumb "$@"
}

if [ ! -e "$ROOT/.hopsim-rootfs-done" ]; then
    if [ ! -e "$ROOT/debootstrap/debootstrap" ] && [ ! -e "$ROOT/etc/debian_version" ]; then
        log "debootstrap --foreign arm64 $SUITE into $ROOT"
        $NICE debootstrap --arch=arm64 --foreign --variant=minbase \
            --include=python3,python3-venv,python3-pip,ca-certificates "$SUITE" "$ROOT" "$MIRROR" >/dev/null
    fi
    install_qemu_in_root
    if [ -e "$ROOT/debootstrap/debootstrap" ]; then
        log "debootstrap second stage (emulated; several minutes)"
        $NICE chroot "$ROOT" "${QEMU_PREFIX[@]}" /debootstrap/debootstrap --second-stage >/dev/null
    fi
    touch "$ROOT/.hopsim-rootfs-done"
fi
install_qemu_in_root
bind /proc "$ROOT/proc"
bind /dev "$ROOT/dev"
mountpoint -q "$ROOT/tmp" || { mount -t tmpfs tmpfs "$ROOT/tmp" && MOUNTS+=("$ROOT/tmp"); }
[ -e "$ROOT/dev/shm" ] || mkdir -p "$ROOT/dev/shm"

# ---- 3. aarch64 wheels, pinned to the host venv -------------------------------------------------
mkdir -p "$WHEELS" "$OUT/x86_64" "$OUT/aarch64"
"$HOST_PYTHON" - >"$WHEELS/runtime-requirements.txt" <<'EOF'
"""name==version for the runtime dependency closure of hopsim ([project] dependencies, extras
followed), as installed in this venv; markers evaluated for linux aarch64, Python 3.11."""
import importlib.metadata as md
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as cn

env = {"python_version": "3.11", "python_full_version": "3.11.2", "platform_machine": "aarch64",
       "sys_platform": "linux", "os_name": "posix", "platform_system": "Linux",
       "implementation_name": "cpython", "platform_python_implementation": "CPython"}
seen: dict[str, set[str]] = {}
todo = [Requirement(r) for r in md.requires("hopsim") if "extra ==" not in r]
while todo:
    req = todo.pop()
    name = cn(req.name)
    if name in seen and set(req.extras) <= seen[name]:
        continue
    seen[name] = seen.get(name, set()) | set(req.extras)
    for r in md.distribution(req.name).requires or []:
        rr = Requirement(r)
        if rr.marker is None or any(rr.marker.evaluate(dict(env, extra=e)) for e in ["", *sorted(seen[name])]):
            todo.append(rr)
for n in sorted(seen):
    print(f"{n}=={md.version(n)}")
EOF
PLATFORMS=()
for v in 17 24 26 27 28 31 34 35 36; do PLATFORMS+=(--platform "manylinux_2_${v}_aarch64"); done
log "pip download aarch64 wheels ($(wc -l <"$WHEELS/runtime-requirements.txt") packages; cached in $WHEELS)"
$NICE "$HOST_PYTHON" -m pip download -q -d "$WHEELS" "${PLATFORMS[@]}" --platform manylinux2014_aarch64 \
    --platform linux_aarch64 --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
    --only-binary=:all: --no-deps -r "$WHEELS/runtime-requirements.txt" 2>&1 | grep -v '^WARNING: Location' >&2 || true

# hopsim itself: a wheel of the working tree, built from a copy (the tree is not written to)
SRC=$(mktemp -d)
tar -C "$REPO" --exclude='__pycache__' -cf - pyproject.toml README.md hopsim | tar -C "$SRC" -xf -
rm -rf "$WHEELS/hopsim"
$NICE "$HOST_PYTHON" -m pip wheel -q --no-deps --no-build-isolation -w "$WHEELS/hopsim" "$SRC" >/dev/null
rm -rf "$SRC"

# ---- 4. the chroot's venv ----------------------------------------------------------------------
bind "$WHEELS" "$ROOT/mnt/wheels" ro
if [ ! -x "$ROOT$VENV/bin/python" ]; then
    log "python3 -m venv $VENV (inside the chroot)"
    in_root /usr/bin/python3 -m venv "$VENV"
fi
if ! cmp -s "$WHEELS/runtime-requirements.txt" "$ROOT$VENV/.installed-requirements.txt"; then
    log "pip install the aarch64 wheels inside the chroot (emulated; a few minutes)"
    in_root "$VENV/bin/python" -m pip install -q --no-index --find-links /mnt/wheels \
        -r /mnt/wheels/runtime-requirements.txt
    cp "$WHEELS/runtime-requirements.txt" "$ROOT$VENV/.installed-requirements.txt"
fi
wheel=$(cd "$WHEELS/hopsim" && ls hopsim-*.whl)
in_root "$VENV/bin/python" -m pip install -q --no-index --no-deps --force-reinstall "/mnt/wheels/hopsim/$wheel"

# ---- 5. run, compare ---------------------------------------------------------------------------
bind "$OUT" "$ROOT/mnt/out"
sha_of() {  # sha_of WHERE FILE: the stream SHA-256 `hopsim inspect` reads from the recording
    local text
    if [ "$1" = host ]; then
        text=$(cd /tmp && COLUMNS=400 "$REPO/.venv/bin/hopsim" inspect "$2")
    else
        text=$(in_root "$VENV/bin/hopsim" inspect "$2")
    fi
    grep -o 'stream_sha256=[0-9a-f]*' <<<"$text" | head -1 | cut -d= -f2
}
status=0
printf 'scenario\tx86_64_sha256\taarch64_sha256\tx86_64_wall_s\taarch64_wall_s\tresult\n' >"$OUT/summary.tsv"
for spec in "${SCENARIOS[@]}"; do
    read -r -a words <<<"$spec"
    name=${words[0]}
    duration=${words[1]}
    sets=()
    tag=$name
    for kv in "${words[@]:2}"; do sets+=(--set "$kv"); tag+="-${kv//=/_}"; done
    args=(run "$name" --duration "$duration" "${sets[@]}" --no-progress --force)

    log "$tag: x86-64"
    t0=$(date +%s.%N)
    (cd /tmp && $NICE "$REPO/.venv/bin/hopsim" "${args[@]}" --out "$OUT/x86_64/$tag.mcap") >"$OUT/x86_64/$tag.log" 2>&1 ||
        { log "$tag: the x86-64 run failed (see $OUT/x86_64/$tag.log)"; status=2; continue; }
    t_x86=$(echo "$(date +%s.%N) - $t0" | bc)

    log "$tag: aarch64 (emulated)"
    [ "${COLD_CACHE:-0}" = 1 ] && rm -rf "$ROOT/var/tmp/numba-cache"
    t0=$(date +%s.%N)
    in_root "$VENV/bin/hopsim" "${args[@]}" --out "/mnt/out/aarch64/$tag.mcap" >"$OUT/aarch64/$tag.log" 2>&1 ||
        { log "$tag: the aarch64 run failed (see $OUT/aarch64/$tag.log)"; status=2; continue; }
    t_arm=$(echo "$(date +%s.%N) - $t0" | bc)

    sha_x86=$(sha_of host "$OUT/x86_64/$tag.mcap")
    sha_arm=$(sha_of root "/mnt/out/aarch64/$tag.mcap")
    if [ -n "$sha_x86" ] && [ "$sha_x86" = "$sha_arm" ]; then
        result=identical
    else
        result=DIFFERENT
        [ $status = 0 ] && status=1
        log "$tag: streams differ; replaying the x86-64 recording inside the chroot"
        in_root "$VENV/bin/hopsim" replay "/mnt/out/x86_64/$tag.mcap" >"$OUT/aarch64/$tag.replay.txt" 2>&1 || true
        cat "$OUT/aarch64/$tag.replay.txt" >&2
    fi
    printf '%s\t%s\t%s\t%.1f\t%.1f\t%s\n' "$tag" "$sha_x86" "$sha_arm" "$t_x86" "$t_arm" "$result" | tee -a "$OUT/summary.tsv"
done
log "summary: $OUT/summary.tsv"
exit $status
