#!/usr/bin/env bash
# Refresh cases/*/expected from the real elizaOS code (needs node and npm; see ../../README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
reference="${REFERENCE:-$here/../../../shared/reference/run-reference.sh}"
for case in "$here"/cases/*/; do
  rm -rf "$case/expected"
  # the case's env.json becomes the reference's REFERENCE_SECRET_* environment
  mapfile -t assignments < <(python3 -c 'import json,sys; [print(f"{k}={v}") for k, v in json.load(open(sys.argv[1])).items()]' "$case/env.json")
  line="$(env "${assignments[@]}" bash "$reference" "$case/input.jsonl" "$case/expected" "$case/anon.json")"
  echo "$(basename "$case"): $line"
  # keep the counts (not the timings) so tests compare the privacy filter's counts too
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(json.dumps({k: r[k] for k in ("trajectories","kept","dropped","redactionCount","anonymizationCount","counts")}, indent=1))' "$line" > "$case/expected/reference-counts.json"
done
