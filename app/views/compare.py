"""Estimator comparison on one group: per-step advantages side by side (with each step's node and
outcome), per-trajectory charts titled with the trajectory's outcome and length (one estimator
highlighted), rank correlations, and the steps where two estimators disagree in sign, with each
estimator's parts, widest disagreement (in z-scores) first; a click on such a step opens it in
the group explorer. A click on a row of the per-step table shows the step's whole texts and its
tokens coloured by credit (:mod:`app.token_view`). Every registered estimator (built-in, a
helper's, or a ``--plugin``'s) is offered, with one input per parameter: a choice for those
taking one of a few values. An
optional display normalisation z-scores each estimator over the group, so that shapes compare.
Numbers come before text in every table, and trajectory ids show what tells them apart."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from app import data
from app.charts import advantage_lines, correlation_heatmap
from app.context import AppContext
from app.navigation import open_explorer_at
from app.safe import fmt, truncate
from app.tables import short_ids, style_diverging
from app.token_view import token_panel
from app.ui import chosen_graph, group_page, md, picked_row, show_error, show_short_error
from g2po.analysis.compare import (
    DEFAULT_ESTIMATORS,
    Comparison,
    compare_estimators,
    disagreement_counts,
    explain_disagreements,
    parameter_choices,
    rank_correlation,
    sign_disagreements,
    step_location,
    trajectory_facts,
    zscore,
)
from g2po.analysis.tokens import Credit
from g2po.errors import G2POError
from g2po.estimators import estimator_params, get_spec, list_estimators
from g2po.outcomes import OutcomeRule
from g2po.params import STATE_KEY_CHOICES, G2POParams

__all__ = ["render", "estimator_defaults", "state_key_options", "open_in_explorer",
           "step_texts", "step_tokens", "NORMALISE", "DIFF_KEY", "STEPS_KEY", "REASONS_SHOWN"]

#: Display choices: the estimators' own values, or each z-scored over the group.
NORMALISE = ("raw values", "z-scored over the group")
#: The sign-disagreement table; a row picked there opens the step in the group explorer.
DIFF_KEY = "cmp_diff"
#: The per-step table; a row picked there shows the step's whole texts below it.
STEPS_KEY = "cmp_steps"
#: Disagreements explained in words on the page itself; the rest sit in an expander.
REASONS_SHOWN = 5


def estimator_defaults(name: str, params: G2POParams, rule: OutcomeRule) -> dict[str, object]:
    """An estimator's parameters: its own defaults, overridden by the sidebar's shared ones
    and the run's outcome rule."""
    defaults = {k: v for k, v in estimator_params(name).items()
                if v is None or isinstance(v, (int, float, str, bool))}
    return {**defaults, **params.for_estimator(name, rule)}


@st.cache_data(show_spinner=False, max_entries=64)
def _comparison(_log, key: str, train_step: int, group_id: str, names: tuple[str, ...],
                params_json: str, state_key: str, rule: OutcomeRule) -> Comparison:
    steps = data.load_group(_log, key, train_step, group_id)
    result = compare_estimators(steps, list(names), json.loads(params_json), state_key,
                                rule=rule)
    text_cols = [c for c in ("action", result.text_column, "response") if c in result.table]
    shown = result.table.assign(**{c: result.table[c].map(_short) for c in text_cols})
    return replace(result, table=shown)  # result.texts keeps the whole texts


def state_key_options(sidebar: str) -> list[str]:
    """The state-key strategies offered: the sidebar's, then the built-in ones without an
    argument and the similarity strategy at two thresholds."""
    builtin = [c for c in STATE_KEY_CHOICES if c not in ("regex", "similarity")]
    return list(dict.fromkeys([sidebar, *builtin, "similarity:0.9", "similarity:0.8"]))


def _short(text: object) -> str:
    return truncate(text, 60)


def _param_inputs(name: str, defaults: dict[str, object]) -> dict[str, object]:
    """One input per parameter, its meaning (as the estimator declares it) as its help: a
    choice where the estimator names its allowed values, else typed by its default (a whole
    number stays whole)."""
    chosen: dict[str, object] = {}
    choices = parameter_choices(name)
    own = estimator_params(name)
    docs = get_spec(name).params
    for param, value in defaults.items():
        key = f"cmp_{name}_{param}"
        label = fmt("{}", param)
        doc = fmt("{}", docs[param]) if param in docs else None
        if own[param] is None:  # an optional number (the success threshold): off is None
            on = st.checkbox(fmt("{} on", param), value=value is not None, key=f"{key}_on")
            number = st.number_input(label, value=0.0 if value is None else float(value),
                                     key=key, format="%.4g", disabled=not on, help=doc)
            chosen[param] = float(number) if on else None
        elif param in choices:
            options = list(choices[param])
            index = options.index(value) if value in options else 0
            chosen[param] = st.selectbox(label, options, index=index, key=key, help=doc)
        elif isinstance(value, bool):
            chosen[param] = st.checkbox(label, value=value, key=key, help=doc)
        elif isinstance(value, int):
            chosen[param] = int(st.number_input(label, value=value, step=1, key=key, help=doc))
        elif isinstance(value, float):
            chosen[param] = st.number_input(label, value=value, key=key, format="%.4g",
                                            help=doc)
        else:
            chosen[param] = st.text_input(label, value=str(value), key=key, help=doc)
    return chosen


def _estimator_heading(name: str) -> None:
    """The estimator's name and what it declares of itself: its title, what its advantage is,
    the step columns it reads and the original it equals."""
    spec = get_spec(name)
    md("**{}**{}", name, f" · {spec.title}" if spec.title else "")
    said = [spec.summary] if spec.summary else []
    said += [f"reads the step column {c.name} ({c.doc})" for c in spec.columns]
    said += [f"original: {spec.original}"] if spec.original else []
    if said:
        st.caption(fmt("{}", "; ".join(said)))


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "Estimator comparison"):
        return
    opened = ctx.active
    available = list_estimators()
    default = [n for n in (*DEFAULT_ESTIMATORS, "rloo", "value_iteration") if n in available]
    names = st.multiselect("Estimators", available, default=default, key="cmp_estimators",
                           help="Built-in ones and any registered with --plugin.")
    if not names:
        st.info("Choose at least one estimator.")
        return
    keys = state_key_options(ctx.params.state_key)
    key_col, norm_col = st.columns(2)
    state_key = key_col.selectbox("State key (how observations merge into nodes)", keys,
                                  key="cmp_state_key",
                                  help="The first is the sidebar's; the others try a looser "
                                       "merge on this page only.")
    normalise = norm_col.radio("Show", NORMALISE, horizontal=True, key="cmp_norm",
                               help="z-scored: each estimator's advantages minus their mean "
                                    "over the group, divided by their standard deviation, so "
                                    "estimators on very different scales compare by shape. "
                                    "Signs and rank correlations use the raw values.")
    params: dict[str, dict] = {}
    with st.expander("Estimator parameters (shared ones follow the sidebar)"):
        cols = st.columns(min(len(names), 4))
        for i, name in enumerate(names):
            with cols[i % len(cols)]:
                _estimator_heading(name)
                params[name] = _param_inputs(name, estimator_defaults(name, ctx.params, ctx.rule))
    try:
        result = _comparison(opened.log, opened.key, ctx.train_step, ctx.group_id,
                             tuple(names), json.dumps(params, sort_keys=True), state_key,
                             ctx.rule)
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot load group {ctx.group_id}", err)
        return
    for name, message in result.errors.items():  # the first problem said, the rest a click away
        show_short_error(f"{name} could not run on this group", message)
    ran = result.estimators
    if not ran:
        return
    table = result.table
    ids = table["traj_id"].astype(str)
    short = short_ids(ids)
    z = normalise == NORMALISE[1]
    shown_table = zscore(table, ran) if z else table

    st.subheader("Per-step advantages" + (" (z-scored over the group)" if z else ""))
    node_text = ("the step's state in the group explorer's graph" if
                 state_key == ctx.params.state_key else
                 "the step's state under this page's state key (the group explorer numbers "
                 "the sidebar's)")
    text_text = (fmt("`observation`: what the policy saw at the step (the log's observation).")
                 if result.text_column == "observation" else
                 fmt("`state_key`: the state key the step merged by (the log has no "
                     "observation column)."))
    more = fmt("{} Click a row for the step's whole texts{}",
               fmt(" `response`: the model's output.") if "response" in result.texts else "",
               ", the whole prompt among them." if "prompt" in result.texts else ".")
    st.caption(fmt("`rollout`: the part of the trajectory id that tells it from the group's "
                   "others; `node`: {}; `outcome`: what its trajectory reached. {}{}",
                   node_text, text_text, more))
    event = st.dataframe(style_diverging(_with_short_ids(shown_table, short), ran),
                         hide_index=True, height=360, key=STEPS_KEY, on_select="rerun",
                         selection_mode="single-row")
    picked = picked_row(event, len(table))
    if picked is not None:
        step_texts(result, picked, short)
        step_tokens(ctx, result, shown_table, picked, z)

    st.subheader("Per trajectory")
    facts = trajectory_facts(table)
    titles = {t: f"{short[t]} · {row.outcome} · {row.length} step" + ("s" if row.length != 1
                                                                        else "")
              for t, row in zip(facts.index.astype(str), facts.itertuples(), strict=True)}
    trajs = list(titles)
    pick_col, mark_col = st.columns([3, 1])
    shown = pick_col.multiselect("Trajectories", trajs, default=trajs[:4], key="cmp_trajs",
                                 format_func=titles.get)
    if st.session_state.get("cmp_highlight") not in (None, *ran):
        st.session_state["cmp_highlight"] = None
    highlight = mark_col.selectbox("Highlight", [None, *ran], key="cmp_highlight",
                                   format_func=lambda n: "none" if n is None else n)
    if shown:
        st.plotly_chart(advantage_lines(shown_table, ran, shown, highlight=highlight,
                                        y_title="z-score" if z else "advantage",
                                        titles=titles),
                        key="cmp_lines")

    if len(ran) >= 2:
        st.subheader("Rank correlation")
        method = st.radio("method", ["spearman", "kendall"], horizontal=True, key="cmp_method")
        corr = rank_correlation(table, ran, method)
        st.plotly_chart(correlation_heatmap(corr, f"{method} rank correlation over the "
                                                  f"group's {len(table)} steps"),
                        key="cmp_corr")
        if corr.isna().to_numpy().any():
            st.caption("n/a: an estimator is constant on this group (for example GRPO when "
                       "every rollout has the same reward), so it has no ranking.")
        _disagreements(ctx, result, short)


def step_texts(result: Comparison, row: int, short: dict[str, str]) -> None:
    """The whole texts of the table's ``row``-th step: its observation (or state key) next to
    the model's response, and the whole prompt one click away (log text, shown as code)."""
    step = result.table.iloc[row]
    texts = result.texts.iloc[row]
    md("**Step {} of {}** (node {})", int(step["t"]), short.get(str(step["traj_id"]),
                                                               step["traj_id"]), step["node"])
    left, right = st.columns(2)
    left.markdown(fmt("**{}**", "Observation" if result.text_column == "observation"
                      else "State key"))
    left.code(str(texts[result.text_column]), language=None, wrap_lines=True)
    right.markdown("**Model response**" if "response" in texts else "**Action**")
    right.code(str(texts["response"] if "response" in texts else step["action"]),
               language=None, wrap_lines=True)
    if "prompt" in texts and isinstance(texts["prompt"], str):
        with st.expander(fmt("The whole prompt ({:,} characters)", len(texts["prompt"]))):
            st.code(texts["prompt"], language=None, wrap_lines=True)


def step_tokens(ctx: AppContext, result: Comparison, shown: pd.DataFrame, row: int,
                z: bool) -> None:
    """The ``row``-th step's response as tokens coloured by each estimator's advantage (as
    the table shows it, raw or z-scored; its scale over the group's steps), by the advantage
    the trainer recorded where the log has one, or by the log's per-token fields
    (:func:`app.token_view.token_panel`)."""
    step = result.table.iloc[row]
    opened = ctx.active
    try:
        group = data.load_group(opened.log, opened.key, ctx.train_step, ctx.group_id)
    except data.LOADER_ERRORS as err:
        show_error(f"Cannot load group {ctx.group_id}", err)
        return
    rows = group[(group["traj_id"].astype(str).to_numpy() == str(step["traj_id"]))
                 & (group["t"].to_numpy() == int(step["t"]))].iloc[:1]
    if rows.empty:
        return
    suffix = " (z-scored over the group)" if z else ""
    credits = [Credit(name + suffix, shown[name].to_numpy(dtype=np.float64)[[row]],
                      shown[name].to_numpy(dtype=np.float64)) for name in result.estimators]
    if "advantage" in group.columns and np.isfinite(rows["advantage"].to_numpy(
            dtype=np.float64)).all():
        credits.append(Credit("the trainer (recorded in the log)",
                              rows["advantage"].to_numpy(dtype=np.float64),
                              group["advantage"].to_numpy(dtype=np.float64)))
    st.markdown("**Its tokens, coloured by credit**")
    token_panel(rows, credits, key="cmp_tokens")


def _with_short_ids(table: pd.DataFrame, short: dict[str, str]) -> pd.DataFrame:
    """``table`` with its trajectory ids shortened, as a first column ``rollout``."""
    out = table.rename(columns={"traj_id": "rollout"})
    out["rollout"] = out["rollout"].astype(str).map(short)
    return out


def _disagreements(ctx: AppContext, result: Comparison, short: dict[str, str]) -> None:
    """The steps where two estimators disagree in sign, each with its node, outcome and the
    two estimators' parts; a click on a row opens the step in the group explorer."""
    ran, table = result.estimators, result.table
    st.subheader("Where they disagree in sign")
    a_col, b_col = st.columns(2)
    a = a_col.selectbox("estimator A", ran, index=0, key="cmp_a")
    b_default = next((i for i, n in enumerate(ran) if n in ("grpo", "rloo") and n != a),
                     1 if len(ran) > 1 else 0)
    b = b_col.selectbox("estimator B", ran, index=b_default, key="cmp_b")
    if a == b:
        st.caption("Choose two different estimators.")
        return
    diff = sign_disagreements(table, a, b, result.parts)
    why = explain_disagreements(result, a, b, diff)
    st.caption(fmt("{} of {} steps get opposite signs from {} and {}, each shown with the "
                   "parts of its advantage. Widest disagreement first: `z gap` compares the two "
                   "on one scale (each estimator's advantages z-scored over the group's steps), "
                   "since their raw values may be normalised differently; `decided by`: the "
                   "term that sets each one's sign (its part with the largest share in that "
                   "direction). Click a row to open the step in the group explorer.",
                   len(diff), len(table), a, b))
    if len(diff):
        md("**By deciding term** ({}'s vs {}'s)", a, b)
        for term, n in disagreement_counts(why).items():
            md("- {}: {} step(s)", term, int(n))
    numbers = [c for c in diff.columns if c == a or c == b or c.startswith((f"{a} · ",
                                                                             f"{b} · "))]
    at = diff.columns.get_loc("z gap") + 1
    shown = pd.concat([diff.iloc[:, :at], why[["decided by"]], diff.iloc[:, at:]], axis=1)
    event = st.dataframe(style_diverging(_with_short_ids(shown, short), [*numbers, "z gap"]),
                         hide_index=True, key=DIFF_KEY, on_select="rerun",
                         selection_mode="single-row")
    picked = picked_row(event, len(diff))
    if picked is not None:
        step = diff.iloc[picked]
        open_in_explorer(ctx, str(step["traj_id"]), int(step["t"]))
    _reasons(diff, why, short)


def _reasons(diff: pd.DataFrame, why: pd.DataFrame, short: dict[str, str]) -> None:
    """Each disagreement in words and numbers (the widest first, the rest one click away),
    then where the two estimators' episode-level values differ (said once per distinct
    sentence)."""
    if diff.empty:
        return
    rows = list(zip(diff["traj_id"].astype(str), diff["t"], why["why"], strict=True))
    st.markdown("**Why, step by step**")
    for traj, t, said in rows[:REASONS_SHOWN]:
        md("- **{} t={}**: {}", short.get(traj, traj), int(t), said)
    if len(rows) > REASONS_SHOWN:
        with st.expander(fmt("The other {} disagreements", len(rows) - REASONS_SHOWN)):
            for traj, t, said in rows[REASONS_SHOWN:]:
                md("- **{} t={}**: {}", short.get(traj, traj), int(t), said)
    episode = [e for e in pd.unique(why["episode"]) if e]
    if episode:
        md("**Episode-level values** ({} distinct case(s) among these steps)", len(episode))
        for said in episode:
            md("- {}", said)


def open_in_explorer(ctx: AppContext, traj_id: str, t: int) -> None:
    """Open step ``t`` of ``traj_id`` (of the sidebar's group) in the group explorer: its
    trajectory highlighted, its node and edge selected and the node's steps listed
    (:func:`app.navigation.open_explorer_at`). Node ids are the explorer's own, under the
    sidebar's state key."""
    graph = chosen_graph(ctx)
    if graph is None:
        return
    where = step_location(graph, traj_id, t)
    if where is None:
        md("Step {} of {} is not in the group explorer's graph.", t, traj_id)
        return
    open_explorer_at(ctx, traj_id, *where)
