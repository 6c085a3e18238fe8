#!/usr/bin/env bash
# CI step: scripts/slurm-array.sh run by a real Slurm (a one-node cluster on localhost from
# scripts/slurm-local.sh, 2 CPUs). (a) sweeps/edge.csv as 4 shards merges to the unsharded run's
# records; (b) one task killed by scancel and one failing: the merge names both shards and fails,
# the re-run it prints completes the file; (c) two arrays over different sweeps at once stay apart.
# Usage: scripts/slurm-test.sh BUILD_DIR   (root; installs Slurm through scripts/setup.sh --slurm)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:?usage: scripts/slurm-test.sh BUILD_DIR}/fa-bench")
[[ -x "$bin" ]] || { echo "slurm-test: no fa-bench in $1" >&2; exit 2; }
# cpu-flash without timing: each record is validated exactly as on a GPU, in ~0.1 s.
flags=(--paths cpu-flash --no-timing)
whisper_flags=(--paths cpu-flash --no-timing --dtype fp16 --G '0,4' --filter 'Sk<=448')
# (b) must kill a task while it runs, on a machine of any speed; untimed, a shard of edge.csv ends in
# 0.13 s. Timed, each record samples for the whole --time-cap (--spread 0 never stops it early), so
# a shard lasts 16 x 0.05 s at least (3-7 s measured on 2 busy cores, hot; cold took 12 s).
slow_flags=(--paths cpu-flash --timing hot --time-cap 0.05 --spread 0 --max-samples 1000000)
wait_s=${SLURM_TEST_WAIT:-180}  # the most any one wait may take

step() { printf '\n== [%ds] %s\n' "$SECONDS" "$*"; }
fail() { echo "slurm-test: FAIL: $*" >&2; exit 1; }

scripts/setup.sh --slurm
work=$(mktemp -d /tmp/fa-bench-slurm-test.XXXXXX)
finish() {
  local rc=$?
  scripts/slurm-local.sh stop || true
  if ((rc == 0)); then
    rm -rf "$work"
  else
    echo "slurm-test: failed (exit $rc); job logs and results kept in $work, daemon logs in" \
      "${FABENCH_SLURM_DIR:-/tmp/fa-bench-slurm}/log" >&2
  fi
}
trap finish EXIT
trap 'exit 130' INT  # a CI timeout or ^C still stops the cluster
trap 'exit 143' TERM
step "start a one-node Slurm cluster (munge, MariaDB, slurmdbd, slurmctld, slurmd)"
scripts/slurm-local.sh start
export SLURM_CONF=${FABENCH_SLURM_DIR:-/tmp/fa-bench-slurm}/etc/slurm.conf

submit() {  # slurm-array.sh args...: prints "ARRAY MERGE"
  scripts/slurm-array.sh --parsable --bin "$bin" "$@"
}

finished() {  # count, job ids...: sacct holds count records, each in a final state
  local s
  s=$(sacct -X -n -j "$(IFS=,; echo "${*:2}")" -o State) || return 1
  (($(wc -l <<<"$s") == $1)) && ! grep -qE 'PENDING|RUNNING|REQUEUED|COMPLETING' <<<"$s"
}

wait_done() {  # count, job ids...: until the jobs (count records: array tasks + merges) have ended
  local end=$((SECONDS + wait_s))
  until finished "$@"; do
    ((SECONDS < end)) || { squeue; sacct -X -j "$(IFS=,; echo "${*:2}")"; fail "jobs ${*:2} not done after ${wait_s}s"; }
    sleep 0.5
  done
}

states() {  # job ids...: the sacct table, one line a task
  local ids
  ids=$(IFS=,; echo "$*")
  sacct -X -j "$ids" --format=JobID%-10,JobName%-24,State,ExitCode,Elapsed
}

expect_state() {  # job id (or ARRAY_INDEX), state, exit code ("CANCELLED by 0" reads CANCELLED)
  local got state
  got=$(sacct -X -n -P -j "$1" -o State,ExitCode | head -n 1)
  state=${got%%|*}
  [[ "${state%% *}|${got#*|}" == "$2|$3" ]] || fail "job $1 is '$got' in sacct, want '$2|$3'"
}

same_records() {  # label, unsharded CSV, merged CSV, sweep file: same record set, that sweep only
  python3 - "$@" <<'EOF'
import csv, os, sys
label, ref, merged, sweep = sys.argv[1:]
# What differs between two runs of the same records: when they ran, their shard, their timing
# (timed_check, the check of the last timed launch, exists only where records were timed: case (b)).
ignore = {"run_id", "time", "shard", "median_ms", "min_ms", "max_ms", "spread", "samples",
          "timing_mode", "stopped_by", "batch", "timing_note", "tflops", "gbps", "pct_peak", "bound",
          "timed_check"}
def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    # slurm-array.sh hands the tasks absolute sweep paths; the reference ran on a relative one.
    return rows, sorted(tuple(os.path.basename(v) if k == "sweep_file" else v
                              for k, v in r.items() if k not in ignore) for r in rows)
ref_rows, a = load(ref)
rows, b = load(merged)
strays = {os.path.basename(r["sweep_file"]) for r in rows} - {os.path.basename(sweep)}
print(f"{label}: unsharded {len(a)} records, merged {len(b)} records "
      f"({sum(r['status'] == 'pass' for r in rows)} pass), sweep files {sorted({r['sweep_file'] for r in rows})}")
if strays:
    sys.exit(f"{label}: records from another sweep: {sorted(strays)}")
if a != b:
    only_a, only_b = set(a) - set(b), set(b) - set(a)
    for t in sorted(only_a)[:5]: print("  only unsharded:", ",".join(t[:8]))
    for t in sorted(only_b)[:5]: print("  only merged:   ", ",".join(t[:8]))
    sys.exit(f"{label}: record sets differ ({len(only_a)} only unsharded, {len(only_b)} only merged)")
print(f"{label}: record sets equal (run_id, time, shard and timing columns ignored)")
EOF
}

step "unsharded reference runs (no Slurm)"
"$bin" sweep sweeps/edge.csv "${flags[@]}" -o "$work/edge-unsharded.csv" --no-table -q
"$bin" sweep sweeps/whisper.csv "${whisper_flags[@]}" -o "$work/whisper-unsharded.csv" --no-table -q
wc -l "$work"/*-unsharded.csv

step "(a) sweeps/edge.csv as an array of 4 shards, merged by the afterany job"
read -r arr merge < <(submit --shards 4 --out "$work/a" sweeps/edge.csv -- "${flags[@]}")
echo "array $arr, merge $merge"
wait_done 5 "$arr" "$merge"
states "$arr" "$merge"
cat "$work/a/slurm-merge-$merge.out"
expect_state "$merge" COMPLETED 0:0
same_records "(a) edge, 4 shards" "$work/edge-unsharded.csv" "$work/a/all.csv" sweeps/edge.csv

step "(b) shard 2 killed by scancel while it runs, shard 3 failing (its output path is a directory)"
mkdir -p "$work/b/shard-3.csv"
read -r arr merge < <(submit --shards 4 --out "$work/b" sweeps/edge.csv -- "${slow_flags[@]}")
echo "array $arr, merge $merge"
end=$((SECONDS + wait_s))
until [[ "$(squeue -h -j "${arr}_2" -o %T 2>/dev/null)" == RUNNING ]]; do
  ended=$(sacct -X -n -j "${arr}_2" -o State 2>/dev/null | grep -vE 'PENDING|RUNNING' || true)
  [[ -z "$ended" ]] || fail "task ${arr}_2 ended ($ended) before it could be killed"
  ((SECONDS < end)) || fail "task ${arr}_2 never seen running"
  sleep 0.1
done
# Killed after its first record where that comes within 0.5 s (the task runs ~1-2 s), so that
# the re-run has a partial file to --resume; killed anyway after 0.5 s.
for _ in {1..10}; do
  [[ -f "$work/b/shard-2.csv" ]] && (($(wc -l <"$work/b/shard-2.csv") >= 2)) && break
  sleep 0.05
done
scancel "${arr}_2"
echo "scancel ${arr}_2 (running)"
wait_done 5 "$arr" "$merge"
states "$arr" "$merge"
echo "--- merge log (slurm-merge-$merge.out), missing lines cut to 3:"
awk '/^missing:/ && ++m > 3 {next} 1' "$work/b/slurm-merge-$merge.out"
echo "--- task 3's log:"
cat "$work/b/slurm-${arr}_3.out"
expect_state "${arr}_2" CANCELLED 0:0
expect_state "${arr}_3" FAILED 2:0
expect_state "$merge" FAILED 1:0
grep -q "shard 2/4 incomplete" "$work/b/slurm-merge-$merge.out" || fail "the merge does not name shard 2"
grep -q "shard 3/4 incomplete" "$work/b/slurm-merge-$merge.out" || fail "the merge does not name shard 3"
rerun=$(grep -A1 '^fa-bench-slurm: re-run with:$' "$work/b/slurm-merge-$merge.out" | tail -n 1)
[[ "$rerun" == *"--only 2,3 "* ]] || fail "no re-run command for shards 2,3 in the merge log"
left="no file"
[[ -f "$work/b/shard-2.csv" ]] && left="$(($(wc -l <"$work/b/shard-2.csv") - 1)) records"
echo "killed shard 2 left $left; merged $(($(wc -l <"$work/b/all.csv") - 1)) of $(($(wc -l <"$work/edge-unsharded.csv") - 1)) records"
rmdir "$work/b/shard-3.csv"  # the cause of shard 3's failure, fixed
echo "re-run, as printed:$rerun"
submitted=$(eval "$rerun")
echo "$submitted"
read -r arr merge < <(sed -n 's/^submitted array job \([0-9]*\) .* merge job \([0-9]*\) .*/\1 \2/p' <<<"$submitted")
wait_done 3 "$arr" "$merge"
states "$arr" "$merge"
cat "$work/b/slurm-merge-$merge.out"
expect_state "$merge" COMPLETED 0:0
echo "shard 2 re-run: $(grep -h -e 'resum' -e 'wrote' "$work/b/slurm-${arr}_2.out" | paste -sd ' ')"
echo "shard 3 re-run: $(grep -h 'wrote' "$work/b/slurm-${arr}_3.out")"
same_records "(b) edge, after the re-run" "$work/edge-unsharded.csv" "$work/b/all.csv" sweeps/edge.csv

step "(c) two arrays at once: edge.csv (4 shards) and whisper.csv filtered (3 shards)"
read -r arr1 merge1 < <(submit --shards 4 --out "$work/c-edge" sweeps/edge.csv -- "${flags[@]}")
read -r arr2 merge2 < <(submit --shards 3 --out "$work/c-whisper" sweeps/whisper.csv -- "${whisper_flags[@]}")
echo "edge: array $arr1, merge $merge1; whisper: array $arr2, merge $merge2"
wait_done 9 "$arr1" "$merge1" "$arr2" "$merge2"
states "$arr1" "$merge1" "$arr2" "$merge2"
tail -n 2 "$work/c-edge/slurm-merge-$merge1.out" "$work/c-whisper/slurm-merge-$merge2.out"
expect_state "$merge1" COMPLETED 0:0
expect_state "$merge2" COMPLETED 0:0
[[ "$(cd "$work/c-edge" && echo shard-*.csv)" == "shard-0.csv shard-1.csv shard-2.csv shard-3.csv" ]] ||
  fail "c-edge holds other files: $(ls "$work/c-edge")"
[[ "$(cd "$work/c-whisper" && echo shard-*.csv)" == "shard-0.csv shard-1.csv shard-2.csv" ]] ||
  fail "c-whisper holds other files: $(ls "$work/c-whisper")"
same_records "(c) edge" "$work/edge-unsharded.csv" "$work/c-edge/all.csv" sweeps/edge.csv
same_records "(c) whisper" "$work/whisper-unsharded.csv" "$work/c-whisper/all.csv" sweeps/whisper.csv

step "slurm-test: all cases passed"
