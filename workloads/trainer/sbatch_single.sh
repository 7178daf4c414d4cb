#!/bin/bash
# Tiny LM on one GPU (seed lab 1.3). Fill in the partition (and account) or pass them on the command line:
#   sbatch -p gpu -A myproject sbatch_single.sh
# The portal's "Tiny LM — single GPU" template writes the same job from its form.
#SBATCH --job-name=tiny-lm-single
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --time=00:15:00
#SBATCH --output=logs/%x-%j.out
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
mkdir -p logs
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
echo "job $SLURM_JOB_ID on $(hostname)"; nvidia-smi -L || true
${PYTHON:-python3} train.py --model tiny --epochs 1 --batch_size 32 --seq_len 128 --precision bf16 \
  --num_workers "${SLURM_CPUS_PER_TASK:-2}" --run_dir "runs/$SLURM_JOB_ID" "$@"
