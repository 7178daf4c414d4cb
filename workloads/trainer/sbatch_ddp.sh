#!/bin/bash
# Tiny LM with DDP across nodes × GPUs (seed lab 1.4): one torchrun per node, one process per GPU.
#   sbatch -p gpu --nodes=2 --gres=gpu:4 sbatch_ddp.sh
# NCCL over InfiniBand: set IB=1 (sbatch --export=ALL,IB=1 …); NCCL_DEBUG=INFO shows what NCCL chose.
#SBATCH --job-name=tiny-lm-ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=16
#SBATCH --time=00:20:00
#SBATCH --output=logs/%x-%j.out
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
mkdir -p logs
GPUS_PER_NODE=${SLURM_GPUS_ON_NODE:-4}
RANK0_HOST=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
if [ "${IB:-0}" = 1 ]; then
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-ib0} NCCL_IB_HCA=${NCCL_IB_HCA:-mlx5}
fi
# To isolate fabric problems: export NCCL_IB_DISABLE=1 (TCP only, slower).
echo "job $SLURM_JOB_ID: $SLURM_NNODES node(s) x $GPUS_PER_NODE GPU(s), rendezvous $RANK0_HOST:29500"
# ddp_run.py: torchrun, ending a cancelled run with one line instead of torchrun's own traceback.
srun --ntasks-per-node=1 ${PYTHON:-python3} ddp_run.py \
  --nnodes "$SLURM_NNODES" --nproc_per_node "$GPUS_PER_NODE" \
  --rdzv_id "$SLURM_JOB_ID" --rdzv_backend c10d --rdzv_endpoint "$RANK0_HOST:29500" \
  train.py --model small --epochs 1 --batch_size 16 --seq_len 256 --precision bf16 --run_dir "runs/$SLURM_JOB_ID" "$@"
