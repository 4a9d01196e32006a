import pandas as pd
import pytest

from loaders import LogFormatError
from loaders.columns import missing_columns, suggest_mapping, table_columns

COLUMNS = ["task_uid", "rollout", "turn", "obs_anchor", "act", "ret", "extra"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_table_columns_reads_only_the_head(tmp_path, fmt):
    frame = pd.DataFrame([[1, "r", 0, "s", "a", 1.0, "x"]] * 3, columns=COLUMNS)
    path = tmp_path / f"t.{fmt}"
    {"csv": lambda: frame.to_csv(path, index=False),
     "jsonl": lambda: frame.to_json(path, orient="records", lines=True),
     "parquet": lambda: frame.to_parquet(path)}[fmt]()
    assert table_columns(path, fmt) == COLUMNS


def test_a_broken_parquet_names_the_file(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(LogFormatError, match="x.parquet"):
        table_columns(path, "parquet")


def test_suggestions_use_names_aliases_common_names_and_closeness():
    got = suggest_mapping(COLUMNS)
    assert got["group_id"] == "task_uid" and got["traj_id"] == "rollout"
    assert got["t"] == "turn" and got["action"] == "act"
    assert got["state_key"] == "obs_anchor" and got["episode_reward"] == "ret"
    assert "extra" not in got.values()
    exact = suggest_mapping(["group_id", "uid", "traj_uid", "t", "state", "action", "reward"])
    assert exact["group_id"] == "group_id" and exact["traj_id"] == "traj_uid"
    assert exact["state_key"] == "state" and exact["episode_reward"] == "reward"
    assert len(set(exact.values())) == len(exact)  # a source column is suggested once


def test_suggestions_name_the_task_done_and_won_columns():
    got = suggest_mapping(["uid", "traj_uid", "t", "anchor_obs", "action", "episode_rewards",
                           "instruction", "finished", "success", "step_reward"])
    assert got["task"] == "instruction" and got["done"] == "finished"
    assert got["won"] == "success" and got["step_reward"] == "step_reward"
    verl = suggest_mapping(["uid", "traj", "turn", "input", "output", "score", "gts",
                            "terminated", "solved"])
    assert verl["task"] == "gts" and verl["done"] == "terminated" and verl["won"] == "solved"
    assert "task" not in suggest_mapping(COLUMNS)  # no column looks like one: none offered


def test_missing_columns_counts_aliases_and_the_mapping():
    assert missing_columns(["uid", "traj_uid", "t", "anchor_obs", "action",
                            "episode_rewards"]) == []
    assert missing_columns(COLUMNS) == ["group_id", "traj_id", "t", "state_key", "action",
                                        "episode_reward"]
    assert missing_columns(COLUMNS, {"group_id": "task_uid", "traj_id": "rollout",
                                     "t": "turn", "state_key": "obs_anchor", "action": "act",
                                     "episode_reward": "ret"}) == []
