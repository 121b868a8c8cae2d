#!/usr/bin/env bash
# make test's pytest: the tests that start Ray run in one pytest process, one after another (two
# Ray sessions at once would see, and count, each other's processes), and every other test in a
# second process beside it, so that the two cores are used. The Ray half's report follows the
# other's; the exit status is non-zero if either half failed. Usage: tests/run_suite.sh PYTHON
set -u
# job control: a command started in the background otherwise ignores SIGINT, and so would every
# process it starts (the tests stop servers with Ctrl-C, as a user does)
set -m
py=${1:-.venv/bin/python}
log=$(mktemp)
"$py" -m pytest -q -m "ray and not long" --durations=15 -p no:cacheprovider >"$log" 2>&1 &
ray_pid=$!
trap 'kill -- -"$ray_pid" 2>/dev/null' INT TERM
"$py" -m pytest -q -m "not ray and not long" --durations=25
local_status=$?
wait "$ray_pid"
ray_status=$?
echo
echo "==== the tests that start Ray (run beside the others) ===="
cat "$log"
rm -f "$log"
[ "$local_status" -eq 0 ] && [ "$ray_status" -eq 0 ]
