#!/usr/bin/env bash
# G2PO on WebShop with Qwen2.5-1.5B-Instruct: the paper's settings (arXiv 2606.22995).
# Every value the authors' own script sets (Nala-YN/G2PO examples/g2po_trainer/run_webshop.sh
# and their verl fork's ppo_trainer.yaml), in this trainer's units; docs/verl.md has the table:
#   N = 8 rollouts per task, 16 tasks per step, 100 steps (their total_epochs=100 over a 16-row
#   dataset: 1600 tasks once), lr 1e-6, low-variance KL loss 0.01, invalid-action penalty 0.1,
#   gamma 0.95, w 1.0, mean_norm, at most 15 environment steps, 2 steps of history,
#   prompts <= 4096 tokens, responses <= 512, validation on 256 test goals at temperature 0.4
#   every 5 steps, not before training; 64 step rows per optimizer step (ppo_mini_batch_size
#   8 x N = 8; verl counts it per task).
# Success (a purchase the environment scores as won) earns 10, anything else 0, as in the paper;
# for the graded score instead, add  algorithm.g2po.terminal=reward  (see docs/verl.md).
# Needs GPUs (8 by default, as theirs; vLLM tensor-parallel over 2), vLLM and WebShop (clone princeton-nlp/WebShop, ./setup.sh -d small;
# its package on the PYTHONPATH of every node):
#   pip install -e '.[verl]' vllm
# Usage:  bash examples/verl/webshop_g2po_qwen2.5_1.5b.sh [hydra overrides ...]
# Open the run while it trains:  streamlit run app/main.py -- --log "$OUT"
set -euo pipefail

MODEL=${MODEL:-Qwen/Qwen2.5-1.5B-Instruct}
N_GPUS=${N_GPUS:-8}
OUT=${OUT:-runs/webshop-g2po-qwen2.5-1.5b}
PRINT=${G2PO_PRINT_CONFIG:+--print-config}

exec g2po train --backend verl ${PRINT} \
    --env webshop:train \
    --model "${MODEL}" \
    --out "${OUT}" \
    --rollouts-per-task 8 \
    --max-steps 15 \
    --lr 1e-6 \
    algorithm.adv_estimator=g2po \
    algorithm.g2po.gamma=0.95 \
    algorithm.g2po.penalty=0.1 \
    algorithm.g2po.w=1.0 \
    algorithm.g2po.mode=mean_norm \
    algorithm.use_kl_in_reward=false \
    actor_rollout_ref.actor.use_kl_loss=true \
    actor_rollout_ref.actor.kl_loss_coef=0.01 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0.001 \
    g2po_env.val_name=webshop:test \
    g2po_env.history_length=2 \
    g2po_env.success_reward=10.0 \
    g2po_env.train_tasks=1600 \
    g2po_env.val_tasks=256 \
    data.train_batch_size=16 \
    data.val_batch_size=128 \
    data.max_prompt_length=4096 \
    data.max_response_length=512 \
    data.filter_overlong_prompts=true \
    data.truncation=error \
    actor_rollout_ref.actor.ppo_mini_batch_size=8 \
    actor_rollout_ref.actor.use_dynamic_bsz=true \
    actor_rollout_ref.actor.fsdp_config.param_offload=false \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=false \
    actor_rollout_ref.ref.fsdp_config.param_offload=true \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.enable_chunked_prefill=false \
    actor_rollout_ref.rollout.enforce_eager=false \
    actor_rollout_ref.rollout.free_cache_engine=false \
    actor_rollout_ref.rollout.val_kwargs.temperature=0.4 \
    actor_rollout_ref.rollout.val_kwargs.do_sample=true \
    trainer.n_gpus_per_node="${N_GPUS}" \
    trainer.nnodes=1 \
    trainer.total_epochs=1 \
    trainer.test_freq=5 \
    trainer.val_before_train=false \
    trainer.save_freq=-1 \
    trainer.project_name=g2po \
    trainer.experiment_name=webshop_g2po_qwen2.5_1.5b \
    trainer.logger='[console]' \
    "$@"
