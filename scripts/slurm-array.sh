#!/usr/bin/env bash
# A sweep as a Slurm job array, one `fa-bench sweep --shard i/n` per task, then one merge job
# (`--dependency=afterany` on the array) that joins the shards and names any shard to re-run.
#   scripts/slurm-array.sh --shards 8 --gpus 1 --out results/llm sweeps/llm-d64.csv -- --time-cap 1
#   scripts/slurm-array.sh --shards 4 --out results/edge sweeps/edge.csv -- --paths cpu-flash  # CPU
# Run on a login node: it runs `fa-bench sweep --dry-run` on the sweeps and flags first (nothing is
# queued that a task would refuse), then calls sbatch twice; --help lists options. sacct shows each
# task's exit as fa-bench's (0 pass, 1 a fail/error record, 2 input/output error); the merge's 1:
# records missing.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/slurm-array.sh [options] SWEEP... [-- fa-bench sweep flags]
  -n, --shards N       array tasks = shards (default 8)
  -o, --out DIR        results dir (default results/slurm-<first sweep's name>): DIR/shard-<i>.csv,
                       DIR/all.csv, the logs DIR/slurm-<array>_<i>.out and DIR/slurm-merge-<job>.out
      --gpus SPEC      GPUs per task, as sbatch --gpus (1, a100:1; env FABENCH_SLURM_GPUS). None by
                       default: a CPU partition or a cluster without GPU gres takes the job as is
      --task-sbatch A  an sbatch flag for the array tasks only, repeatable (--gres=gpu:1,
                       --cpus-per-task=8, --time=4:00:00)
      --sbatch A       an sbatch flag for the tasks and the merge, repeatable (--partition=gpu,
                       --account=x; sbatch's own SBATCH_PARTITION, SBATCH_ACCOUNT... work too)
      --bin PATH       the fa-bench binary, on a filesystem the nodes share (default: env FABENCH,
                       else build/fa-bench)
      --max-running K  at most K tasks at once (--array=...%K)
      --only LIST      run only these shards of the N (e.g. 2 or 2,5): the re-run of failed tasks;
                       they --resume their shard file, keeping its finished records
      --parsable       print only "ARRAY_JOBID MERGE_JOBID"
  The merge gets the sweep flags it needs to list gaps (--G, --dtype, --filter, --seed).
EOF
}

# ---- inside a job: one shard, or the merge -------------------------------------------------------
# argv: --task FRESH|RESUME ... or --merge ARRAY_JOBID NTASKS ..., then BIN OUT N RERUN NSWEEP SWEEP...
# FLAG... (RERUN: the submitting command line minus --only, shell-quoted; a shard's re-run
# command is "RERUN_HEAD --only I RERUN_TAIL").

rerun_cmd() {  # shard list: the command that submits those shards again
  printf '%s --only %s %s' "${rerun%% *}" "$1" "${rerun#* }"
}

unpack() {
  bin=$1 out=$2 n=$3 rerun=$4
  local ns=$5
  shift 5
  sweeps=("${@:1:ns}")
  flags=("${@:ns+1}")
}

run_task() {
  local mode=$1
  shift
  unpack "$@"
  local i=${SLURM_ARRAY_TASK_ID:?a task runs as a Slurm array task}
  local file="$out/shard-$i.csv" resume=() rc=0
  # A re-run keeps what the killed run finished (each record is one write, so a kill leaves only
  # whole lines); a first run starts its file afresh.
  [[ "$mode" == RESUME && -s "$file" ]] && resume=(--resume)
  echo "fa-bench-slurm: shard $i/$n on $(hostname -s), job ${SLURM_JOB_ID:-?} (array ${SLURM_ARRAY_JOB_ID:-?}_$i)"
  "$bin" sweep "${sweeps[@]}" --shard "$i/$n" -o "$file" --no-table "${resume[@]}" "${flags[@]}" || rc=$?
  if ((rc != 0)); then
    echo "fa-bench-slurm: shard $i/$n exited $rc; re-run it with:" >&2
    echo "  $(rerun_cmd "$i")" >&2
  fi
  exit "$rc"
}

merge_flags() {  # the sweep flags that change which records a run makes: merge takes them too
  local f
  merged_flags=()
  while (($#)); do
    f=$1
    shift
    case $f in
      --G | --dtype | --filter | --seed) (($#)) && merged_flags+=("$f" "$1") && shift ;;
      --G=* | --dtype=* | --filter=* | --seed=*) merged_flags+=("$f") ;;
    esac
  done
}

final_states() {  # array job id, task count: sacct has a final state for every task
  local s
  s=$(sacct -X -n -j "$1" -o State 2>/dev/null) || return 1
  (($(wc -l <<<"$s") >= $2)) && ! grep -qE 'PENDING|RUNNING|REQUEUED|COMPLETING' <<<"$s"
}

run_merge() {
  local array=$1 ntasks=$2
  shift 2
  unpack "$@"
  local files=() i missing=() log rc=0 t
  for ((i = 0; i < n; i++)); do
    [[ -f "$out/shard-$i.csv" ]] && files+=("$out/shard-$i.csv")
  done
  echo "fa-bench-slurm: merging array $array: ${#files[@]} of $n shard files in $out"
  if command -v sacct >/dev/null; then  # each task's state and exit code, where accounting is on
    for ((t = 0; t < 10; t++)); do  # the last task's record may reach the database a moment late
      final_states "$array" "$ntasks" && break
      sleep 1
    done
    sacct -X -j "$array" --format=JobID%-14,State,ExitCode,Elapsed,NodeList 2>/dev/null || true
  fi
  merge_flags "${flags[@]}"
  if ((${#files[@]})); then
    log=$("$bin" merge "${files[@]}" -o "$out/all.csv" --expect "${sweeps[@]}" --shards "$n" \
      "${merged_flags[@]}" 2>&1) || rc=$?
    printf '%s\n' "$log"
  else
    rc=1
  fi
  for ((i = 0; i < n; i++)); do
    if [[ ! -f "$out/shard-$i.csv" ]] || grep -q ", shard $i/$n)\$" <<<"${log:-}"; then
      missing+=("$i")
    fi
  done
  if ((${#missing[@]})); then
    local list
    list=$(IFS=,; echo "${missing[*]}")
    for i in "${missing[@]}"; do
      echo "fa-bench-slurm: shard $i/$n incomplete ($(grep -c ", shard $i/$n)\$" <<<"${log:-}") records missing$([[ -f "$out/shard-$i.csv" ]] || echo ", no file"))"
    done
    echo "fa-bench-slurm: re-run with:"
    echo "  $(rerun_cmd "$list")"
    ((rc != 0)) || rc=1
  elif ((rc == 0)); then
    echo "fa-bench-slurm: complete: $out/all.csv"
  fi
  exit "$rc"
}

case ${1:-} in
  --task) shift; run_task "$@" ;;
  --merge) shift; run_merge "$@" ;;
esac

# ---- on the login node: submit -------------------------------------------------------------------
if [[ -n "${SLURM_ARRAY_TASK_ID:-}" ]]; then
  echo "slurm-array.sh submits the array itself now: run it on the login node," >&2
  echo "  scripts/slurm-array.sh --shards N SWEEP -- FLAGS   (not sbatch --array=... scripts/slurm-array.sh)" >&2
  exit 2
fi
n=8 out="" gpus=${FABENCH_SLURM_GPUS:-} bin=${FABENCH:-build/fa-bench} throttle="" only="" parsable=0
both=() task_only=() sweeps=() flags=()
need() { (($# >= 2)) || { echo "slurm-array.sh: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -n | --shards) need "$@"; n=$2; shift 2 ;;
    -o | --out) need "$@"; out=$2; shift 2 ;;
    --gpus) need "$@"; gpus=$2; shift 2 ;;
    --sbatch) need "$@"; both+=("$2"); shift 2 ;;
    --task-sbatch) need "$@"; task_only+=("$2"); shift 2 ;;
    --bin) need "$@"; bin=$2; shift 2 ;;
    --max-running) need "$@"; throttle=$2; shift 2 ;;
    --only) need "$@"; only=$2; shift 2 ;;
    --parsable) parsable=1; shift ;;
    --) shift; flags=("$@"); break ;;
    -*) echo "slurm-array.sh: unknown option $1 (fa-bench's flags go after --)" >&2; usage >&2; exit 2 ;;
    *) sweeps+=("$1"); shift ;;
  esac
done
((${#sweeps[@]})) || { usage >&2; exit 2; }
# Slurm's MaxArraySize is at most 4000001 (indices 0..4000000); a longer number would also wrap
# bash's 64-bit arithmetic below.
[[ "$n" =~ ^[1-9][0-9]{0,6}$ ]] && ((n <= 4000001)) ||
  { echo "slurm-array.sh: --shards takes an integer from 1 to 4000001 (Slurm's largest array), not '$n'" >&2; exit 2; }
[[ -z "$only" || "$only" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "slurm-array.sh: --only takes shard numbers, e.g. 2,5" >&2; exit 2; }
for i in ${only//,/ }; do
  ((i < n)) || { echo "slurm-array.sh: --only $i: shards are 0..$((n - 1))" >&2; exit 2; }
done
stem=$(basename "${sweeps[0]}")
out=${out:-results/slurm-${stem%.*}}
# Absolute paths: a task runs wherever Slurm puts it, with the submit dir as working dir.
bin=$(realpath -m "$bin")
[[ -x "$bin" ]] || { echo "slurm-array.sh: no fa-bench binary at $bin (--bin or FABENCH)" >&2; exit 2; }
for i in "${!sweeps[@]}"; do
  [[ -f "${sweeps[i]}" ]] || { echo "slurm-array.sh: no sweep file ${sweeps[i]}" >&2; exit 2; }
  sweeps[i]=$(realpath "${sweeps[i]}")
done
self=$(realpath "$0")
# The results dir is made for the dry run below (fa-bench refuses an output in a missing folder)
# and removed again if the submission is refused: a refusal leaves nothing behind.
made_out=""
[[ -d "$out" ]] || made_out=1
mkdir -p "$out"
out=$(realpath "$out")

# Everything a task would refuse is refused here, before anything is queued: fa-bench's flags
# after --, the sweeps' contents, the shard file's folder. --dry-run expands and checks, writes nothing.
dry=("$bin" sweep "${sweeps[@]}" --shard "0/$n" -o "$out/shard-0.csv" --no-table --dry-run "${flags[@]}")
if ! dry_log=$("${dry[@]}" 2>&1); then
  printf '%s\n' "$dry_log" >&2
  echo "slurm-array.sh: fa-bench sweep --dry-run refused the sweep or its flags (above); nothing was queued" >&2
  [[ -z "$made_out" ]] || rmdir "$out" 2>/dev/null || true
  exit 2
fi

# The command line again, without --only, for the re-run hints.
rerun="$(printf '%q' "$self") $(printf '%q ' --shards "$n" --out "$out" --bin "$bin")"
[[ -n "$gpus" ]] && rerun+="$(printf '%q ' --gpus "$gpus")"
[[ -n "$throttle" ]] && rerun+="$(printf '%q ' --max-running "$throttle")"
for a in "${both[@]}"; do rerun+="$(printf '%q ' --sbatch "$a")"; done
for a in "${task_only[@]}"; do rerun+="$(printf '%q ' --task-sbatch "$a")"; done
rerun+="$(printf '%q ' "${sweeps[@]}")"
((${#flags[@]})) && rerun+="-- $(printf '%q ' "${flags[@]}")"
rerun=${rerun% }

indices=${only:-0-$((n - 1))}
ntasks=$n
[[ -n "$only" ]] && ntasks=$(tr ',' '\n' <<<"$only" | sort -u | wc -l)
[[ -n "$throttle" ]] && indices+="%$throttle"
task_args=(--array="$indices" --job-name="fa-bench-${stem%.*}" --output="$out/slurm-%A_%a.out")
[[ -n "$gpus" ]] && task_args+=(--gpus="$gpus")
payload=("$bin" "$out" "$n" "$rerun" "${#sweeps[@]}" "${sweeps[@]}" "${flags[@]}")
array=$(sbatch --parsable "${task_args[@]}" "${task_only[@]}" "${both[@]}" \
  "$self" --task "$([[ -n "$only" ]] && echo RESUME || echo FRESH)" "${payload[@]}")
array=${array%%;*}
# The merge takes no GPU whatever the environment asks of sbatch.
merge=$(env -u SBATCH_GPUS -u SBATCH_GRES -u SBATCH_GPUS_PER_NODE -u SBATCH_GPUS_PER_TASK \
  sbatch --parsable --dependency="afterany:$array" --job-name="fa-bench-${stem%.*}-merge" \
  --output="$out/slurm-merge-%j.out" "${both[@]}" "$self" --merge "$array" "$ntasks" "${payload[@]}")
merge=${merge%%;*}
if ((parsable)); then
  echo "$array $merge"
else
  echo "submitted array job $array (shards ${only:-0-$((n - 1))} of $n) and merge job $merge (afterany:$array): $out/all.csv"
fi
