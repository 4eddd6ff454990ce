#!/usr/bin/env bash
# Regenerate the pictures in docs/img/. Not run by the tests; review the pictures like code.
# - report-*.png and fleet-*.png: this tool's own HTML pages (`report`, `fleet --html`) of
#   tests/data, rendered by headless Chromium (`make browser` installs Debian's), made
#   smaller by pngquant when it is installed;
# - ui-*.png: the real Perfetto UI, with a `shot.sh` of yours that opens a trace in it and
#   saves the page (PERFETTO_UI=<its folder>; skipped without it: no Perfetto build is kept
#   here).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p docs/img

# Our own pages, in Chromium at a fixed size (the top of each page).
command -v chromium >/dev/null || { echo "screenshots: chromium not found (make browser)" >&2; exit 1; }
page() {  # page.html out.png WIDTH,HEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$TMP/profile" --screenshot="$2" --window-size="$3" "file://$(realpath "$1")" \
    2>/dev/null
  if command -v pngquant >/dev/null; then pngquant --quality 70-90 --speed 1 --force --output "$2" "$2"; fi
}
REPORTED=tests/data/journals/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz
"$BIN/agent-profiler" report "$REPORTED" -o "$TMP/report.html" >/dev/null 2>&1
page "$TMP/report.html" docs/img/report-codex.png 1000,1120
"$BIN/agent-profiler" collect tests/data/journals --to "$TMP/dataset" >/dev/null 2>&1
"$BIN/agent-profiler" fleet "$TMP/dataset" -o "$TMP/fleet.html" >/dev/null 2>&1
page "$TMP/fleet.html" docs/img/fleet-tests-data.png 1000,1000
ls -l docs/img/report-*.png docs/img/fleet-*.png

# The Perfetto UI's pictures, with a shot.sh of yours.
UI="${PERFETTO_UI:-}"
if [ -z "$UI" ] || [ ! -f "$UI/shot.sh" ]; then
  echo "screenshots: ui-*.png left as they are (set PERFETTO_UI=<folder with shot.sh>)" >&2
  exit 0
fi
CLAUDE=tests/data/journals/claude-code/entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl
CODEX=tests/data/journals/codex/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl
ADDITION="SELECT f.slice_in FROM flow f JOIN slice s ON s.id = f.slice_in \
JOIN track t ON t.id = s.track_id WHERE t.name = 'Largest additions' ORDER BY s.ts, s.id LIMIT 1"
SIZE=1000x560  # a small viewport keeps each picture well under 150 KB

# shot.sh polls its static server's log for the port and fails ("sed: can't read
# OUT.serve.log") when that starts before the server's redirect creates the file: create it
# first (the redirect truncates it); one retry stays for anything else.
shot() {
  : >"${2%.png}.serve.log"
  bash "$UI/shot.sh" "$@" >/dev/null || bash "$UI/shot.sh" "$@" >/dev/null
}

"$BIN/agent-profiler" export "$CLAUDE" -o "$TMP/claude.pftrace" >/dev/null 2>&1
"$BIN/agent-profiler" export "$CODEX" -o "$TMP/codex.pftrace" >/dev/null 2>&1
# 1. A capture's tracks, Context group collapsed as on load.
shot "$TMP/claude.pftrace" "$TMP/a.png" --expand '^agentprof\.capture$' \
  --no-select --size "$SIZE"
# 2. The Context group open, a Largest additions instant selected: the arrow from its tool.
shot "$TMP/claude.pftrace" "$TMP/b.png" --expand '^Context$' \
  --select-sql "$ADDITION" --size 800x420
# 3. A Codex rollout with the Context group open.
shot "$TMP/codex.pftrace" "$TMP/c.png" --expand '^Context$' \
  --no-select --size "$SIZE"
cp "$TMP/a.expanded.png" docs/img/ui-claude-code-tracks.png
cp "$TMP/b.selected.png" docs/img/ui-claude-code-largest-addition.png
cp "$TMP/c.expanded.png" docs/img/ui-codex-context.png
ls -l docs/img/ui-*.png
