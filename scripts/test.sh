#!/usr/bin/env bash
# The whole suite (make test), in two phases. Each pytest run prints its slowest tests and
# writes its JUnit XML and its output under test-results/.
# 1. Everything but the `measures` tests, in four pytest runs side by side: the suite mostly
#    waits (API round trips, node starts, Rally's polling, the API's 30-second minimums), and
#    each run owns what its tests share: the local node (e2e); the local Elasticsearch nodes and
#    esrally, one race at a time (runner, cli); a control plane of its own (the two others).
# 2. The `measures` tests alone, so that nothing else is busy while they measure (pytest.ini).
set -uo pipefail
cd "$(dirname "$0")/.." || exit
python=${1:-.venv/bin/python}
out=test-results
rm -rf "$out"
mkdir -p "$out"
trap 'kill $(jobs -p) 2>/dev/null' EXIT

# Files that go with the unit and chart tests, out of the runs of their own directories: the
# sweeps' and the results store's integration tests (the two runs with a control plane then take
# about as long), and the CLI tests that race nothing (out of the run that races one at a time).
# Any other file, a new one too, runs with its directory.
moved=(tests/integration/test_sweeps.py tests/integration/test_results_store.py
       tests/cli/test_compare_report.py tests/cli/test_admission_parity.py tests/cli/test_validation.py
       tests/cli/test_sweep_command.py tests/cli/test_history_page.py tests/cli/test_history_store.py)
ignored="${moved[*]/#/--ignore=}"
declare -A runs=([e2e]="tests/e2e" [elasticsearch]="tests/runner tests/cli $ignored"
                 [integration]="tests/integration $ignored" [control-plane]="tests/unit tests/chart ${moved[*]}")
# Rally will not race while it sees another Rally process on the machine, and the e2e suite's
# Rally pods are processes of this machine: the local races run in a PID namespace of their own
# (root only, as the e2e suite), where the pods are out of sight. Its PID 1 is a shell, which
# reaps the orphans Rally's daemons leave (pytest would not, and their zombies count as Rally
# processes); when it ends, the kernel ends whatever the tests left running in the namespace.
declare -A isolated=([elasticsearch]=1)
declare -A names=()
for name in "${!runs[@]}"; do
  prefix=()
  if [ -n "${isolated[$name]:-}" ] && [ "$(id -u)" -eq 0 ]; then
    prefix=(unshare --pid --mount-proc --kill-child -- bash -c '"$@" & wait $!' init)
  fi
  # shellcheck disable=SC2086  # the run's directories, split into arguments on purpose
  "${prefix[@]}" "$python" -m pytest ${runs[$name]} -m "not measures" --durations=15 \
    --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1 &
  names[$!]=$name
  echo "started: ${runs[$name]} (output in $out/$name.log)"
done
status=0
for _ in "${!runs[@]}"; do
  wait -n -p finished
  code=$?
  echo "=== ${runs[${names[$finished]}]} (exit $code)"
  cat "$out/${names[$finished]}.log"
  # 1 is a failed test; above 1 the run itself was cut short, and the measures would not run alone.
  [ "$code" -le "$status" ] || status=$code
done
[ "$status" -le 1 ] || exit "$status"

"$python" -m pytest tests -m measures --durations=10 --junitxml="$out/measures.xml"
code=$?
[ "$code" -le "$status" ] || status=$code
exit "$status"
