#!/usr/bin/env bash
# One fa-bench shard per Slurm array task, then one job that merges them and checks for gaps.
#   sbatch --array=0-7 scripts/slurm-array.sh sweeps/llm-d64.csv      # 8 shards, one GPU each
#   (the merge is queued by task 0 with --dependency=afterany on the whole array)
# Each task writes results/shard-$TASK.csv; the merge writes results/all.csv and exits 1 (the
# job fails) if a shard is missing records, naming the shard to re-run.
#SBATCH --job-name=fa-bench
#SBATCH --gpus=1
#SBATCH --time=02:00:00
#SBATCH --output=results/slurm-%A_%a.out
set -euo pipefail
sweep=${1:?usage: sbatch --array=0-N scripts/slurm-array.sh SWEEP [fa-bench flags...]}
shift
bin=${FABENCH:-build/fa-bench}
n=${SLURM_ARRAY_TASK_COUNT:?run me as an array job: sbatch --array=0-N}
i=${SLURM_ARRAY_TASK_ID}
mkdir -p results
if [[ "$i" == "${SLURM_ARRAY_TASK_MIN:-0}" ]]; then
  sbatch --dependency="afterany:${SLURM_ARRAY_JOB_ID}" --job-name=fa-bench-merge --gpus=0 \
    --output=results/slurm-merge-%j.out \
    --wrap="$bin merge results/shard-*.csv -o results/all.csv --expect $sweep --shards $n $*"
fi
# Exit 1 (wrong results) still leaves a complete shard file for the merge.
"$bin" sweep "$sweep" --shard "$i/$n" -o "results/shard-$i.csv" --no-table "$@"
