#!/usr/bin/env bash
# Debian's Chromium for the app's browser tests (tests/app/test_browser.py) and
# scripts/bench_app.py. Idempotent: does nothing when it is already there. Playwright drives
# this browser through executable_path; `playwright install` (a download) is never needed.
set -euo pipefail

CHROMIUM="${G2PO_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
"$(dirname "$0")/apt_install.sh" install_chromium.sh chromium
test -x "$CHROMIUM"
