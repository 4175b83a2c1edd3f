#!/bin/bash
#SBATCH --nodes=2
#SBATCH -N 2 -t 1:00
GPUS=8
ARGS=(
  --tp 2 # comment
  "--split '9,1'"
  --pp ${PP:-1} \
)
ARGS+=("${ARGS[@]}")
torchrun --nproc_per_node $GPUS pretrain_gpt.py ${ARGS[@]} "${ARGS[*]}"
