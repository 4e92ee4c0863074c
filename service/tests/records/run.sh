#!/usr/bin/env bash
# run.sh: ctest scenario_records_under_run: a run of `make experiments SCENARIO=wrong_unlock` (the
# shortest scenario) writes its result under run/results/ and leaves every committed file as it
# was: `git status` and the diff of the tree are the same before and after. (RECORD=1 is the one
# way to update loadtest/results/; make bench and make bench-cluster follow the same rule.) Exit 77
# (skipped) outside a git checkout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "scenario_records_under_run: SKIPPED (not a git checkout)"
    exit 77
fi
# The tree's state: what git says has changed, and the content of those changes.
state() { { git status --porcelain=v1 --untracked-files=all; git diff HEAD; } | sha256sum; }

result=run/results/scenario-wrong_unlock.md
before=$(state)
rm -f "$result"
env -u RECORD SCENARIO=wrong_unlock loadtest/seckill-lab experiments >/dev/null
after=$(state)
[[ -s $result ]] || { echo "scenario_records_under_run: no $result" >&2; exit 1; }
grep -q '^# Scenario wrong_unlock' "$result" || { echo "$result is not the scenario's" >&2; exit 1; }
if [[ $before != "$after" ]]; then
    echo "scenario_records_under_run: the run changed committed files:" >&2
    git status --porcelain >&2
    exit 1
fi
echo "scenario_records_under_run: wrote $result; the tree is as it was"
