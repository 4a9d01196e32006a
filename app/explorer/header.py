"""The group explorer's first lines: the group's headline (rollouts, success by the run's rule,
steps, states, merge rate), what in the log disagrees with the rule and its one-click fixes,
and, where the log recorded one, the trainer's advantage against the recomputation."""

from __future__ import annotations

import streamlit as st

from app.context import AppContext
from app.explorer import clicks
from app.explorer.compute import recorded_fitted
from app.explorer.state import Picks
from app.rules import apply_fix, reward_scale_offer, run_reward_scale
from app.safe import fmt
from app.ui import md
from g2po.analysis.group_view import ComputedGroup
from g2po.outcomes import success_rule

__all__ = ["headline", "outcome_warning", "recorded_line"]


def headline(view: ComputedGroup) -> None:
    """Success by the run's rule, as on every page (a ``won`` that disagrees is a warning
    below)."""
    outcome, stats, rule = view.outcome, view.stats, view.rule
    source = success_rule(rule.success_reward, rule.success_threshold)
    truncated = fmt(" · **{}** truncated", outcome.n_truncated) if outcome.n_truncated else ""
    md("**{}** rollouts · success rate **{:.0%}** ({}){} · **{}** steps · **{}** state nodes · "
       "merge rate **{:.0%}**", outcome.n_traj, view.success_rate, source, truncated,
       stats["steps"], stats["state_nodes"], stats["merge_rate"])


def outcome_warning(ctx: AppContext, view: ComputedGroup) -> None:
    """When the success rule does not match the log: say so and offer the fixes. A group that
    reads 0 % success and says nothing against the rule itself (every rollout got 0) may still
    be on a run whose rewards are on another scale: that is offered too (the training step's
    trajectories, :func:`app.rules.run_reward_scale`)."""
    outcome = view.outcome
    if not outcome.problems:
        if outcome.n_traj and not outcome.n_success:
            scale = run_reward_scale(ctx.active, ctx.rule, [ctx.train_step])
            reward_scale_offer(ctx.active, scale, ctx.rule, "explorer")
        return
    with st.container(border=True):
        md("⚠ {}", " ".join(outcome.problems))
        cols = st.columns(max(len(outcome.fixes), 1) + 1)
        for i, fix in enumerate(outcome.fixes):
            cols[i].button(fmt("{}", fix.label), key=f"g_fix_{i}", on_click=apply_fix,
                           help=fmt("{}", fix.label), args=(ctx.active.key, fix))
        cols[-1].caption("The run's outcome rule is also in the sidebar's G2PO parameters "
                         "(kept per run; every page counts success by it).")


def recorded_line(view: ComputedGroup, graph_id: str, picks: Picks) -> None:
    """The audit of the advantage the log's trainer recorded, in one line (nothing where the
    log recorded none); where it differs, a button searches which estimator explains it."""
    recorded = view.recorded
    if recorded is None:
        return
    if recorded.group["kind"] and picks.fit_recorded:
        with st.spinner("Trying every registered estimator and parameter set…"):
            recorded = recorded_fitted(view, graph_id)
    line, button = st.columns([6, 1]) if not recorded.fitted and recorded.group["kind"] \
        else (st.container(), None)
    with line:
        md("**Recorded advantage** (the trainer's, audited against {}'s recomputation): {}",
           recorded.estimator, recorded.summary)
    if button is not None:
        button.button("Which estimator explains it?", key="g_recorded_fit",
                      on_click=clicks.fit_recorded,
                      help="Recompute the group with every registered estimator and a grid of "
                           "parameters (γ, w, mode, penalty …), and name the one that reproduces "
                           "the recorded values (g2po audit does the same for a whole run).")
