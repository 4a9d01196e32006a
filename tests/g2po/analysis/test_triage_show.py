"""How the groups table names its groups and tasks for people (:func:`group_names`): over the
whole table, so that a group reads the same whatever rows a view shows."""

from __future__ import annotations

import pandas as pd
import pytest

from g2po.analysis.triage_show import (
    ID_CHARS,
    TASK_CHARS,
    brief_view,
    group_names,
    one_step,
)

INTRO = ("Welcome to TextWorld! Here is your task for today. First, try to move west. Next, "
         "venture south. With that over with, go to the east. ")
#: (verb, room) of six tasks: a room or a verb alone tells no task from all the others.
TASKS = [("retrieve", "workshop"), ("retrieve", "canteen"), ("lift", "workshop"),
         ("recover", "studio"), ("retrieve", "attic"), ("lift", "canteen")]


def table_of(tasks=TASKS, steps=(1, 2)) -> pd.DataFrame:
    rows = [{"train_step": step, "group_id": f"tw-train-s{k}",
             "task": f"{INTRO}Then, {verb} the coin from the floor of the {room}. That's it!",
             "severity": 0.1 * k, "success_rate": 0.25, "reason": ""}
            for step in steps for k, (verb, room) in enumerate(tasks)]
    return pd.DataFrame(rows)


def test_a_groups_names_do_not_depend_on_the_rows_shown():
    table = table_of()
    names = group_names(table)
    whole, prefix = brief_view(table, names)
    assert prefix == "tw-train-" and set(whole["group"]) == {f"s{k}" for k in range(6)}
    labels = dict(zip(whole["group"], whole["task"], strict=True))
    assert len(set(labels.values())) == 6  # every task told from every other
    texts = dict(zip(whole["group"], table["task"], strict=True))
    assert all(w in texts[g] for g, label in labels.items() for w in label.split(" … "))
    assert labels["s0"] == "retrieve … workshop" and labels["s2"] == "lift … workshop"
    assert all(len(label) <= TASK_CHARS + 12 and "Welcome" not in label
               for label in labels.values())
    for rows in ([0], [0, 6], [1, 5], list(range(3, 9))):  # --top, a filter, a sort
        view, shown_prefix = brief_view(table.iloc[rows].reset_index(drop=True), names)
        assert shown_prefix == prefix
        assert all(labels[g] == t for g, t in zip(view["group"], view["task"], strict=True))
    # named from the rows alone, the same group reads otherwise: why the whole table's names
    alone, _ = brief_view(table.iloc[[0]].reset_index(drop=True))
    assert "task" not in alone.columns or alone["task"][0] != labels["s0"]
    # the same names in any order of the table
    shuffled = group_names(table.sample(frac=1, random_state=3))
    assert shuffled == names


def test_ids_are_cut_as_the_explorers_picker_cuts_them():
    uuids = ["17d1f164-3cbb-4f2e-bc9d-77ce9444248c", "338314e1-a4b9-47c4-8cf7-0b721d5003aa"]
    table = table_of(TASKS[:2], steps=(3,)).assign(group_id=uuids)
    names = group_names(table)
    assert names.prefix == "" and names.short_ids(table) == ["17d1f1…444248c", "338314…d5003aa"]
    assert all(len(s) <= ID_CHARS for s in names.ids.values())


@pytest.mark.parametrize(("tasks", "want"), [
    # verl's gts names: short ones as they are, long ones by their kind and their end
    (["pick_and_place-Mug-12", "pick_two_obj_and_place-Potato-None-Fridge-209"],
     ["pick_and_place-Mug-12", "pick_t…otato-None-Fridge-209"]),
    # and without the parts every long one has (here "None"), which tell none apart
    (["pick_two_obj_and_place-Potato-None-Fridge-209",
      "pick_clean_then_place-Dishsponge-None-Diningtable-252"],
     ["pick_t…ace-Potato-Fridge-209", "pick_c…ponge-Diningtable-252"]),
    # one task for every group, or the group ids themselves: no task column
    (["the same task", "the same task"], None),
    (["tw-train-s0", "tw-train-s1"], None),
])
def test_which_tasks_are_shown_and_how(tasks, want):
    table = pd.DataFrame({"train_step": 1, "group_id": ["tw-train-s0", "tw-train-s1"],
                          "task": tasks})
    assert group_names(table).task_labels(table) == want


def test_the_one_training_step_of_the_rows():
    table = table_of(steps=(1, 2))
    assert one_step(table) is None and one_step(table[table["train_step"] == 2]) == 2
    assert one_step(table.iloc[:0]) is None
    view, _ = brief_view(table[table["train_step"] == 2])
    assert "step" not in view.columns  # said once above the rows instead
    assert list(brief_view(table)[0].columns[:2]) == ["step", "group"]
