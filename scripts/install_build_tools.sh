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
"$(dirname "$0")/apt_install.sh" install_build_tools.sh cmake make g++
command -v cmake >/dev/null && command -v g++ >/dev/null
