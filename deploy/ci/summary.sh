#!/bin/sh
# deploy/ci/summary.sh RUN_DIR: markdown for a CI job's summary from a soak
# run's report.json: the totals, then each distinct failure (fingerprint)
# with its smallest seed, the first line of its reason and the command that
# replays it.  GitHub: >>"$GITHUB_STEP_SUMMARY"; GitLab: into the log.
set -eu
report=${1:?usage: summary.sh RUN_DIR}/report.json
if [ ! -f "$report" ]; then
	echo "### soak: no report"
	echo
	echo "No \`$report\`: soak did not get as far as a run (a usage or config error: see the log)."
	exit 0
fi
jq -r '
  "### soak: \(.config.name // "run") — \(.totals.pass) pass, \(.totals.fail) fail, \(.totals.infra) infra, \(.totals.missing) missing",
  "",
  ( [.results[] | select(.verdict != "pass")] | group_by(.fingerprint)
    | map(sort_by(.seed) | {first: .[0], n: length}) | sort_by(.first.seed) | .[]
    | "- **\(.first.verdict) \(.first.reason // "")** — \(.n) seed(s), smallest \(.first.seed): \((.first.message // "") | split("\n")[0])\n\n  ```sh\n  \(.first.replay)\n  ```" )
' "$report"
