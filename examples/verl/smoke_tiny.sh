#!/usr/bin/env bash
# GPU smoke test of the verl backend: two G2PO training steps with the tiny model (built on this
# machine, no download) on the bundled TextWorld game, then a check of the run directory.
#
# Needs one CUDA GPU and the GPU set of docs/verl.md (torch 2.13.0, vLLM 0.32.0, verl 0.9.1, the
# transformers of vLLM's range; CI resolves exactly this set on every run):
#   pip install uv==0.13.9
#   uv pip install -e '.[verl,envs]' -r requirements/gpu.txt --overrides requirements/overrides.txt
# Usage:  bash examples/verl/smoke_tiny.sh            (about 5-10 minutes, most of it start-up)
#         OUT=/tmp/smoke MODEL=/path/to/hf-model bash examples/verl/smoke_tiny.sh
# It passes when it prints "smoke test passed"; see docs/verl.md for what it checks.
set -euo pipefail

OUT=${OUT:-runs/verl-smoke}
# The tiny model that CI trains with vLLM on CPU: heads of size 32, which vLLM's CPU attention
# takes; shipped with g2po for this environment (g2po/trainers/tiny_models/), so no build.
MODEL=${MODEL:-tiny:heads=2}
ENV_SPEC=${ENV_SPEC:-textworld:coin_collector-level2}
PRINT=${G2PO_PRINT_CONFIG:+--print-config}   # G2PO_PRINT_CONFIG=1: compose, check, print, stop

if [ -z "${PRINT}" ] && [ -e "${OUT}/run.json" ]; then
    echo "${OUT} already holds a run; remove it or set OUT=another/dir" >&2
    exit 1
fi

g2po train --backend verl ${PRINT} \
    --env "${ENV_SPEC}" \
    --model "${MODEL}" \
    --out "${OUT}" \
    --total-steps 2 \
    --tasks-per-step 2 \
    --rollouts-per-task 4 \
    --max-steps 4 \
    --lr 1e-4 \
    g2po_env.train_tasks=4 \
    g2po_env.val_tasks=2 \
    data.max_prompt_length=1024 \
    data.max_response_length=32 \
    data.val_batch_size=2 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
    actor_rollout_ref.rollout.enforce_eager=true \
    actor_rollout_ref.rollout.agent.num_workers=1 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.model.use_remove_padding=false \
    actor_rollout_ref.model.enable_gradient_checkpointing=false \
    trainer.n_gpus_per_node=1 \
    trainer.total_epochs=1 \
    trainer.val_before_train=false \
    trainer.test_freq=-1 \
    trainer.save_freq=-1 \
    trainer.experiment_name=verl_smoke \
    trainer.logger='[console]' \
    "$@"

[ -n "${PRINT}" ] && exit 0

# The run directory the app opens: two training steps of agent steps, verl's metrics and the
# G2PO diagnostics, and advantages the library recomputes from it.
python - "${OUT}" <<'PY'
import math
import sys

from g2po import compute_advantages
from loaders import open_run

run = open_run(sys.argv[1])
steps = run.train_steps()
assert steps == [1, 2], f"expected training steps [1, 2] in {run.path}, found {steps}"
metrics = run.metrics()
for key in ("g2po/merge_rate", "g2po/singleton_node_share", "g2po/td_error_abs_mean",
            "adv/ec/std", "actor/pg_loss", "actor/kl_loss", "training/num_turns/mean"):
    assert key in metrics.columns, f"metrics.jsonl has no {key!r}"
    assert all(math.isfinite(v) for v in metrics[key]), f"{key} is not finite: {metrics[key]}"
manifest = run.manifest
for step in steps:
    rows = run.load_step(step)
    assert len(rows) > 0 and rows["group_id"].nunique() == 2, rows["group_id"].unique()
    assert rows.groupby("group_id")["traj_id"].nunique().eq(4).all(), "4 rollouts per task"
    adv = compute_advantages(rows, manifest["estimator"], state_key=manifest["state_key"],
                             **manifest["estimator_params"])["adv"]
    assert adv.notna().all()
    print(f"step {step}: {len(rows)} agent steps, success rate "
          f"{(rows.groupby(['group_id', 'traj_id'])['episode_reward'].first() > 0).mean():.2f},"
          f" invalid rate {(~rows['is_action_valid']).mean():.2f}, merge rate "
          f"{metrics.loc[metrics['train_step'] == step, 'g2po/merge_rate'].iloc[0]:.2f}")
print(f"smoke test passed: {run.path} (open it: streamlit run app/main.py -- --log {run.path})")
PY
