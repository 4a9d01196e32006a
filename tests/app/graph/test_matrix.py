import numpy as np
import pandas as pd

from app.graph.matrix import matrix_figure
from g2po.analysis.critical import critical_transitions
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import XSS_IMG
from tests.app.layout_groups import layout_graph


def test_axes_are_the_node_names_as_categories_with_every_cell_in_place():
    graph = layout_graph(30)
    fig = matrix_figure(graph)
    heat = fig.data[0]
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"
    cols, rows = list(heat.x), list(heat.y)
    assert list(fig.layout.xaxis.categoryarray) == cols
    assert list(fig.layout.yaxis.categoryarray) == rows
    assert all(isinstance(c, str) for c in cols + rows)
    assert {"success", "failure"} <= set(cols) and len(rows) == graph.n_states
    # the critical transition #1 is in its cell, with its TD error and its number
    top = critical_transitions(graph, 1).iloc[0]
    i, j = rows.index(top["from"]), cols.index(top["to"])
    z = np.array(heat.z, dtype=float)
    assert z[i, j] == top["td_error"] and heat.text[i][j].split()[0] == "#1"
    # every critical transition numbered, two sharing a cell (two actions) both in it
    assert sorted(r for line in heat.text for t in line for r in t.split()) == \
        [f"#{k}" for k in range(1, 6)]
    # a 50-state group gets a row height that reads
    assert matrix_figure(layout_graph(50)).layout.height >= 50 * 13


def test_hover_labels_from_the_log_are_escaped():
    steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b"], "t": [0, 1, 0],
                          "state_key": ["<b>bold</b>", XSS_IMG, "<b>bold</b>"],
                          "action": ["go", "x", "go"], "episode_reward": [10.0, 10.0, 0.0],
                          "is_action_valid": True})
    fig = matrix_figure(state_graph(steps, rule=OutcomeRule()))
    shown = " ".join(str(v) for v in np.asarray(fig.data[0].customdata).ravel())
    assert "&lt;/b" in shown and "<" not in shown and ">" not in shown
