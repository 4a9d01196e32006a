#!/usr/bin/env bash
# apt_install.sh WHO PACKAGE... : install Debian packages for a set-up step (WHO names it in
# messages), as root or through sudo; says what to run when neither is possible. The callers
# check first that what they need is missing.
set -euo pipefail

who="$1"
shift
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "$who: installing $* needs root (apt-get install $*)" >&2
        exit 1
    fi
fi
echo "$who: installing Debian's $* (apt-get)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
