import json

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from g2po.trainers.config import ConfigError
from g2po.trainers.local import (
    TINY_LR,
    draw_tasks,
    format_times,
    resolved_lr,
    train,
)
from g2po.trainers.loss import actor_config
from g2po.trainers.policy import load_model, pack, response_log_probs
from g2po.trainers.update import update_policy
from loaders import load_steps, open_run
from tests.g2po.trainers.fixtures import small_config, tiny_path  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:.*engine is not available")


def _quiet(_line: str) -> None:
    pass


def test_trains_end_to_end_into_a_run_directory(tiny_path, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    result = train(small_config(), out, log=_quiet)
    assert result.steps == [1, 2] and result.resumed_from is None

    # the parameters moved
    before = load_file(tiny_path / "model.safetensors")
    after = load_file(out / "checkpoints" / "step-000002" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)

    # the run directory is the app's
    run = open_run(out)
    assert run.train_steps() == [1, 2]
    assert run.manifest["estimator"] == "g2po" and run.manifest["backend"] == "local"
    assert run.manifest["config"]["lr"] == 1e-2 and run.manifest["model_path"] == str(tiny_path)
    summary = run.summary()
    assert summary["n_groups"].tolist() == [2, 2] and (summary["n_traj"] == 6).all()
    metrics = run.metrics()
    for column in ("actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/pg_clipfrac",
                   "adv/total/std", "adv/nc/std", "rollout/success_rate", "g2po/merge_rate",
                   "time/rollout_s", "time/advantages_s", "time/update_s"):
        assert column in metrics.columns, column
    assert metrics["train_step"].tolist() == [1, 2]
    assert (metrics["actor/optimizer_steps"] == 1).all()
    steps = run.load_step(1)
    assert (steps["train_step"] == 1).all()
    assert (steps["logprob_mean"] < 0).all() and (steps["response_tokens"] >= 1).all()
    assert steps["response"].notna().all()  # an immediate end of sequence is an empty text
    assert len(load_steps(out)) == summary["n_steps"].sum()


def test_resume_continues_exactly(tiny_path, tmp_path):  # noqa: F811
    """Two steps, then a resumed third, equal three steps in one go (same rows, same
    metrics): model, optimizer and every random generator come back from the checkpoint."""
    whole = tmp_path / "whole"
    train(small_config(total_steps=3), whole, log=_quiet)
    split = tmp_path / "split"
    train(small_config(total_steps=2), split, log=_quiet)
    lines = []
    result = train(small_config(total_steps=3), split, log=lines.append)
    assert result.resumed_from == 2 and result.steps == [3]
    assert "resuming" in lines[0]
    a, b = open_run(whole).load_step(3), open_run(split).load_step(3)
    pd.testing.assert_frame_equal(a.drop(columns=["logprob_mean"]),
                                  b.drop(columns=["logprob_mean"]))
    np.testing.assert_allclose(a["logprob_mean"], b["logprob_mean"], rtol=1e-5)
    ma, mb = open_run(whole).metrics(), open_run(split).metrics()
    keep = [c for c in ma.columns if not c.startswith("time/")]
    pd.testing.assert_frame_equal(ma[keep], mb[keep], rtol=1e-5)


def test_resume_retrains_steps_after_the_last_checkpoint(tiny_path, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    train(small_config(total_steps=3, checkpoint_every=2), out, log=_quiet)
    # as if killed after step 3 was logged but before its checkpoint landed
    import shutil

    shutil.rmtree(out / "checkpoints" / "step-000003")
    lines = []
    result = train(small_config(total_steps=3, checkpoint_every=2), out, log=lines.append)
    assert result.resumed_from == 2 and result.steps == [3]
    assert "steps 3-3 will be trained again" in lines[0]
    logged = [json.loads(x)["train_step"] for x in
              (out / "metrics.jsonl").read_text().splitlines()]
    assert logged == [1, 2, 3]
    assert open_run(out).train_steps() == [1, 2, 3]


def test_resume_refuses_another_configuration(tiny_path, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    train(small_config(total_steps=1), out, log=_quiet)
    with pytest.raises(ConfigError, match=r"another configuration \(estimator: 'g2po' -> "
                                          r"'grpo'\).*choose a new --out"):
        train(small_config(total_steps=2, estimator="grpo"), out, log=_quiet)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is not a run directory"):
        train(small_config(total_steps=1), tmp_path / "other", log=_quiet)
    # settings that do not change the run may differ
    train(small_config(total_steps=2, micro_batch_size=4, checkpoint_every=5), out,
          log=_quiet)
    assert open_run(out).train_steps() == [1, 2]


def test_a_run_reopens_with_the_rule_and_parameters_it_trained_with(tiny_path, tmp_path):  # noqa: F811
    """Trained with a graded terminal, a step limit and G2PO parameters of its own, the run
    opens in the loaders with exactly those (not the defaults), and each step row carries the
    advantage it was trained with: the recomputation from the run's own record."""
    from g2po import compute_advantages
    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams
    from loaders.log import manifest_params

    out = tmp_path / "run"
    rule = OutcomeRule(success_reward=10.0, terminal="reward", truncate_at=3)
    params = G2POParams(gamma=0.9, w=0.8, penalty=0.2, state_key="normalized")
    train(small_config(total_steps=1, outcome=rule, params=params), out, log=_quiet)
    run = open_run(out)
    assert run.rule() == rule and run.rule_origin() == "the log's manifest"
    assert manifest_params(run.manifest) == params
    rows = run.load_step(1)
    assert rows["advantage"].dtype == np.float64 and rows["advantage"].abs().sum() > 0
    again = compute_advantages(rows, "g2po", state_key=params.state_key,
                               **params.for_estimator("g2po", run.rule()))["adv"]
    np.testing.assert_allclose(rows["advantage"], again, rtol=1e-12, atol=1e-12)


def test_a_run_of_an_earlier_version_resumes(tiny_path, tmp_path):  # noqa: F811
    """A run.json written before params and outcome existed (flat gamma, invalid_penalty,
    state_key, success_reward) is the same run as today's configuration of those values."""
    from g2po.params import G2POParams

    out = tmp_path / "run"
    train(small_config(total_steps=1), out, log=_quiet)
    manifest = json.loads((out / "run.json").read_text())
    config = manifest["config"]
    params, outcome = config.pop("params"), config.pop("outcome")
    config.update(gamma=params["gamma"], invalid_penalty=params["penalty"],
                  state_key=params["state_key"], success_reward=outcome["success_reward"])
    for key in ("params", "outcome"):
        manifest.pop(key)
    (out / "run.json").write_text(json.dumps(manifest))
    result = train(small_config(total_steps=2), out, log=_quiet)
    assert result.resumed_from == 1 and open_run(out).train_steps() == [1, 2]
    with pytest.raises(ConfigError, match=r"another configuration \(params: "):
        train(small_config(total_steps=3, params=G2POParams(penalty=0.3)), out, log=_quiet)


@pytest.mark.parametrize("estimator", ["grpo", "gigpo", "rloo"])
def test_other_estimators(tiny_path, tmp_path, estimator):  # noqa: F811
    out = tmp_path / estimator
    train(small_config(total_steps=1, estimator=estimator, kl_coef=0.0), out, log=_quiet)
    metrics = open_run(out).metrics()
    assert "actor/kl_loss" not in metrics.columns  # kl_coef 0: no reference model, no term
    assert open_run(out).manifest["estimator"] == estimator


def test_estimator_parameters():
    from g2po.params import G2POParams

    kwargs = small_config(estimator="g2po", params=G2POParams(gamma=0.9),
                          estimator_params={"w": 0.8}).estimator_kwargs()
    assert kwargs == {"gamma": 0.9, "penalty": 0.1, "success_reward": 10.0, "w": 0.8,
                      "mode": "mean_std_norm", "terminal": "binary", "success_threshold": None}
    assert small_config(estimator="grpo").estimator_kwargs() == {}
    assert small_config(estimator="gigpo").estimator_kwargs() == {"gamma": 0.95,
                                                                  "penalty": 0.1}
    graphgpo = small_config(estimator="graphgpo", params=G2POParams(gamma=0.9))
    assert "gamma" not in graphgpo.estimator_kwargs()  # its γ is its own
    with pytest.raises(ConfigError, match="unknown estimator 'nope'"):
        small_config(estimator="nope")


def test_learning_rate_defaults():
    assert resolved_lr(small_config(lr=None)) == TINY_LR
    assert resolved_lr(small_config(lr=None, model="/models/qwen")) == 1e-6
    assert resolved_lr(small_config(lr=3e-4)) == 3e-4


def test_tasks_are_drawn_without_replacement():
    rng = np.random.default_rng(0)
    pool = [f"t{i}" for i in range(5)]
    for _ in range(20):
        picked = draw_tasks(rng, pool, 5)
        assert sorted(picked) == pool


def _samples(tok):
    prompt = tok("Your current observation is: a room.")["input_ids"]
    good = tok("<think></think>\n<action>go west</action>")["input_ids"] + [tok.eos_token_id]
    bad = tok("<think></think>\n<action>look</action>")["input_ids"] + [tok.eos_token_id]
    return [prompt, prompt], [good, bad]


def test_update_moves_probability_towards_positive_advantages(tiny_path):  # noqa: F811
    model, tok = load_model(tiny_path, device=torch.device("cpu"), dtype=torch.float32)
    prompts, responses = _samples(tok)
    batch = pack(prompts, responses, tok.pad_token_id)
    with torch.no_grad():
        before = response_log_probs(model, batch).sum(-1)
    config = small_config(lr=3e-3, kl_coef=0.0, grad_clip=0.0)
    optim = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    for _ in range(3):
        metrics, logprob_mean = update_policy(
            model, optim, prompts, responses, np.array([1.0, -1.0]), config,
            actor_config(kl_coef=0.0), pad_id=tok.pad_token_id)
    with torch.no_grad():
        after = response_log_probs(model, batch).sum(-1)
    assert after[0] > before[0] and after[1] < before[1]
    assert logprob_mean.shape == (2,) and (logprob_mean < 0).all()
    assert metrics["actor/optimizer_steps"] == 1 and metrics["actor/grad_norm"] > 0


def test_epochs_and_mini_batches(tiny_path):  # noqa: F811
    model, tok = load_model(tiny_path, device=torch.device("cpu"), dtype=torch.float32)
    prompts, responses = _samples(tok)
    prompts, responses = prompts * 3, responses * 3
    ref, _ = load_model(tiny_path, device=torch.device("cpu"), dtype=torch.float32)
    config = small_config(lr=1e-2, ppo_epochs=2, mini_batch_size=2, micro_batch_size=1)
    optim = torch.optim.AdamW(model.parameters(), lr=config.lr)
    metrics, _ = update_policy(model, optim, prompts, responses, np.array([1.0, -1.0] * 3),
                               config, actor_config(kl_coef=0.01), pad_id=tok.pad_token_id,
                               ref_model=ref)
    assert metrics["actor/optimizer_steps"] == 2 * 3
    assert metrics["actor/ppo_kl"] != 0.0  # later mini-batches are off-policy
    assert metrics["actor/kl_loss"] > 0.0


def test_format_times_shows_the_split():
    line = format_times({"step_s": 10.0, "rollout_s": 6.0, "generate_s": 5.0, "env_s": 1.0,
                         "advantages_s": 0.004, "update_s": 3.9, "log_s": 0.1})
    assert "rollout 6.00s" in line and "graph+advantages 4.0ms (0.04%)" in line
    assert "update 3.90s" in line


def test_checkpoints_can_live_outside_the_run_directory(tiny_path, tmp_path):  # noqa: F811
    out, elsewhere = tmp_path / "run", tmp_path / "weights"
    train(small_config(total_steps=1, checkpoint_dir=str(elsewhere)), out, log=_quiet)
    assert not (out / "checkpoints").exists()
    assert (elsewhere / "step-000001" / "trainer_state.pt").is_file()
    result = train(small_config(total_steps=2, checkpoint_dir=str(elsewhere)), out, log=_quiet)
    assert result.resumed_from == 1 and open_run(out).train_steps() == [1, 2]
