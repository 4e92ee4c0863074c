#!/usr/bin/env bash
# screenshots.sh: `make screenshots`: renews the README's screenshots (docs/screenshot-sale.png,
# docs/screenshot-lab.png, docs/screenshot-admin.png, docs/screenshot-draw.png) from a run of the
# browser tests (ctest browser_pages, browser_admin, browser_draw), which take them
# into run/screenshots/ on every run and never writes docs/ itself. FROM_LAST_RUN=1 copies the
# last run's screenshots without running the test again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shots=run/screenshots
if [[ ${FROM_LAST_RUN:-0} != 1 ]]; then
    rm -f "$shots"/screenshot-*.png
    scripts/test.sh -R '^browser_(pages|admin|draw)$'
fi
for f in screenshot-sale.png screenshot-lab.png screenshot-admin.png screenshot-draw.png; do
    if [[ ! -f $shots/$f ]]; then
        echo "screenshots: no $shots/$f: run \`make screenshots\` (the browser test takes it)" >&2
        exit 1
    fi
    cp "$shots/$f" "docs/$f"
done
echo "screenshots: docs/screenshot-sale.png, screenshot-lab.png, screenshot-admin.png and screenshot-draw.png renewed from $shots/"
