#!/usr/bin/env bash
# Regenerate the screenshots in docs/img/ from the real Perfetto UI (v58.2, headless
# Chromium) with ../shared/tools/perfetto-ui/shot.sh (PERFETTO_UI=<folder> to point
# elsewhere). Not run by the tests; review the pictures like code.
set -euo pipefail
cd "$(dirname "$0")/.."
UI="${PERFETTO_UI:-../shared/tools/perfetto-ui}"
[ -f "$UI/shot.sh" ] || { echo "screenshots: $UI/shot.sh not found (set PERFETTO_UI=)" >&2; exit 1; }
BIN=.venv/bin
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
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
mkdir -p docs/img
cp "$TMP/a.expanded.png" docs/img/ui-claude-code-tracks.png
cp "$TMP/b.selected.png" docs/img/ui-claude-code-largest-addition.png
cp "$TMP/c.expanded.png" docs/img/ui-codex-context.png
ls -l docs/img/ui-*.png
