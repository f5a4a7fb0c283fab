#!/usr/bin/env bash
# Installs what rdmasim needs to build and test, from Debian 12's package archive.
set -euo pipefail
pkgs=(g++ meson ninja-build pkg-config libboost-context-dev libspdlog-dev nlohmann-json3-dev
      doctest-dev libcli11-dev libibverbs-dev ibverbs-utils perftest rdmacm-utils librdmacm-dev
      iproute2 procps
      tshark zlib1g-dev chromium)  # tshark decodes captures (pcap_check.sh); zlib checks ICRCs
      # (unit_trace); chromium renders lesson pages and study reports headless (tests/learn, tests/results)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "rdmasim: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
