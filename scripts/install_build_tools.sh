#!/usr/bin/env bash
# The compilers `make setup` needs to build Fast Downward (fast-downward-textworld, the planner
# under TextWorld's PDDL engine that ALFWorld's games run on; PyPI has only its source): cmake,
# make and g++. Idempotent: does nothing when they are there; else installs Debian's packages.
set -euo pipefail

missing=()
for tool in cmake make g++; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install_build_tools.sh: ${missing[*]} missing and installing them needs root" \
             "(apt-get install cmake make g++)" >&2
        exit 1
    fi
fi
echo "install_build_tools.sh: installing Debian's cmake make g++ (apt-get) for Fast Downward"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake make g++ >/dev/null
command -v cmake >/dev/null && command -v g++ >/dev/null
