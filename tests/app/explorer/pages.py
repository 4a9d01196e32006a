"""What the group explorer's tests read of a page run (AppTest): the drawn graph's data, the
step table, the page's picks, and the group of the test run ``run_a`` shown."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

import loaders
from app.explorer.state import PICKS, Picks
from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.outcomes import OutcomeRule


def drawn_graph(at) -> dict:
    """The data the graph component was given on the last run."""
    (component,) = at.get("component_instance")
    assert component.proto.component_name.endswith("g2po_graph")
    return json.loads(component.proto.json_args)["graph"]


def steps_table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "rollout" in d.value.columns
                and "A^EP" in d.value.columns)


def pick(at, **changes) -> None:
    """What a click's callback does to the page's picks (the browser tests click for real)."""
    at.session_state[PICKS] = replace(at.session_state[PICKS], **changes)


def picks(at) -> Picks:
    return at.session_state[PICKS]


def run_a(runs_root) -> tuple[loaders.Log, int]:
    run = loaders.open_log(runs_root / "run_a")
    step = run.train_steps()[-1]
    return run, step


def shown_graph(at, runs_root) -> tuple[StateGraph, str]:
    run, step = run_a(runs_root)
    group = at.selectbox(key=f"group:auto:{(runs_root / 'run_a').resolve()}:{step}").value
    return state_graph(run.load_group(step, group), rule=OutcomeRule()), group
