import torch

from g2po.envs import env_family
from g2po.trainers.models import load_policy
from g2po.trainers.rollout import collect_step
from tests.g2po.trainers.fixtures import ENV, tiny_path  # noqa: F401


def test_rows_come_with_their_tokens(tiny_path):  # noqa: F811
    torch.manual_seed(0)
    policy = load_policy(str(tiny_path), device="cpu", max_new_tokens=12)
    family = env_family(ENV)
    tasks = family.tasks(2, 0)
    ro = collect_step(policy, family, tasks, group_size=3, max_steps=3, history_length=2,
                      success_reward=10.0, train_step=5, env_name=ENV)
    steps = ro.steps
    assert sorted(steps["group_id"].unique()) == sorted(tasks)
    assert steps.groupby("group_id")["traj_id"].nunique().tolist() == [3, 3]
    assert (steps["train_step"] == 5).all()
    assert len(ro.prompt_ids) == len(ro.response_ids) == len(steps)
    assert steps["prompt_tokens"].tolist() == [len(p) for p in ro.prompt_ids]
    assert steps["response_tokens"].tolist() == [len(r) for r in ro.response_ids]
    tok = policy.tokenizer
    for i in range(len(steps)):
        ids = [t for t in ro.response_ids[i] if t != tok.eos_token_id]
        assert tok.decode(ids) == steps["response"].iloc[i]
        prompt = tok.decode(ro.prompt_ids[i])
        assert steps["observation"].iloc[i].strip()[:40] in prompt
    assert 0 < ro.generate_s <= ro.seconds and ro.env_s >= 0
