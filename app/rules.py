"""Each open run's one outcome rule (success reward, threshold, terminal, truncation), kept in
the session: the sidebar's controls edit the active run's, the fixes the pages offer change it,
and every page and summary reads it from the :class:`app.context.AppContext`.

The truth is one :class:`g2po.outcomes.OutcomeRule` per run key (:data:`RULES`); the widgets
of the active run are seeded from it when they have no state (a run shown again, a fix applied
to a run not in view) and write it back on every script run. A run's first rule is its log's
own (:meth:`loaders.Log.rule`: ``run.json``, its ``won`` flags, the ``--success-reward`` …
options); the URL's ``success``, ``success_min``, ``terminal`` and ``truncate_at`` seed the run
in view on a session's first script run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import streamlit as st

from app import data
from app.context import OpenLog
from app.safe import fmt
from app.ui import keep_widget_value, md, show_error
from app.url_state import seed_from_url, write_url
from g2po.app_url import URL_NAMES as APP_URL_NAMES
from g2po.errors import G2POError
from g2po.outcomes import (
    TERMINAL_RULES,
    Fix,
    OutcomeRule,
    RewardScale,
    TruncationHint,
)

__all__ = ["RULES", "RuleKeys", "rule_keys", "run_rules", "set_rule", "apply_fix",
           "rule_controls", "URL_NAMES", "DEFAULT_STEP_LIMIT", "truncation_offer",
           "run_reward_scale", "reward_scale_offer"]

#: Session key: run key → :class:`OutcomeRule`, the one rule of each run.
RULES = "_g2po_rules"
#: The URL names of the rule of the run in view (:data:`g2po.app_url.URL_NAMES`).
URL_NAMES = tuple(n.name for n in APP_URL_NAMES.values()
                  if n.sets in OutcomeRule.__dataclass_fields__)
#: The step-limit widget's value while the truncation rule is off.
DEFAULT_STEP_LIMIT = 50


class RuleKeys(NamedTuple):
    """The session keys of one run's rule widgets."""

    success: str
    by_threshold: str
    threshold: str
    terminal: str
    by_length: str
    truncate_at: str


def rule_keys(run_key: str) -> RuleKeys:
    """The widget keys of run ``run_key``'s rule (per run, so each keeps its own)."""
    return RuleKeys(f"p_success:{run_key}", f"p_by_threshold:{run_key}",
                    f"p_threshold:{run_key}", f"p_terminal:{run_key}",
                    f"p_by_length:{run_key}", f"p_truncate_at:{run_key}")


def _log_rule(opened: OpenLog) -> OutcomeRule:
    try:
        return opened.log.rule()
    except data.LOADER_ERRORS + (G2POError,):
        return OutcomeRule()  # the log's problem is shown where its rows are read


def _widget_values(rule: OutcomeRule) -> dict[str, object]:
    """The widget state that shows ``rule`` (by field of :class:`RuleKeys`)."""
    values: dict[str, object] = {
        "success": rule.success_reward, "by_threshold": rule.success_threshold is not None,
        "terminal": rule.terminal, "by_length": rule.truncate_at is not None}
    if rule.success_threshold is not None:
        values["threshold"] = rule.success_threshold
    if rule.truncate_at is not None:
        values["truncate_at"] = rule.truncate_at
    return values


def _seed_widgets(run_key: str, rule: OutcomeRule, overwrite: bool) -> None:
    """Widget state from ``rule``: every key (``overwrite``), or those without state."""
    state = st.session_state
    keys = rule_keys(run_key)
    for name, value in _widget_values(rule).items():
        key = getattr(keys, name)
        if overwrite or key not in state:
            state[key] = value
    state.setdefault(keys.threshold, float(state[keys.success]))
    state.setdefault(keys.truncate_at, DEFAULT_STEP_LIMIT)


def _rule_from_widgets(run_key: str) -> OutcomeRule:
    """The rule the run's widget state shows; ValueError when a value is out of bounds."""
    state = st.session_state
    keys = rule_keys(run_key)
    return OutcomeRule(
        success_reward=float(state[keys.success]),
        success_threshold=float(state[keys.threshold]) if state[keys.by_threshold] else None,
        terminal=str(state[keys.terminal]),
        truncate_at=int(state[keys.truncate_at]) if state[keys.by_length] else None)


def _seed_from_url(run_key: str) -> None:
    """The URL's rule, once per session, for the run in view."""
    keys = rule_keys(run_key)
    seed_from_url(keys.success, "success", float)
    if seed_from_url(keys.threshold, "success_min", float):
        st.session_state[keys.by_threshold] = True
    seed_from_url(keys.terminal, "terminal", str, TERMINAL_RULES)
    if seed_from_url(keys.truncate_at, "truncate_at", _step_limit):
        st.session_state[keys.by_length] = True


def _step_limit(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"a step limit is at least 1, got {value}")
    return value


def run_rules(logs: list[OpenLog], active: OpenLog | None) -> dict[str, OutcomeRule]:
    """Run key → rule for every open run, before anything is drawn: a run seen for the first
    time gets its log's rule; the run in view gets the URL's (first script run of a session)
    and what its widgets hold (a change made in them since the last run)."""
    rules = st.session_state.setdefault(RULES, {})
    for opened in logs:
        if opened.key not in rules:
            rules[opened.key] = _log_rule(opened)
    if active is not None:
        _seed_widgets(active.key, rules[active.key], overwrite=False)
        _seed_from_url(active.key)
        try:
            rules[active.key] = _rule_from_widgets(active.key)
        except (ValueError, TypeError):
            pass  # rule_controls says what is wrong; the last good rule stays
    return {o.key: rules[o.key] for o in logs}


def set_rule(run_key: str, rule: OutcomeRule) -> None:
    """Make ``rule`` the run's one rule (and what its widgets show). For callbacks: fixes
    offered by the pages."""
    st.session_state.setdefault(RULES, {})[run_key] = rule
    _seed_widgets(run_key, rule, overwrite=True)


def apply_fix(run_key: str, fix: Fix) -> None:
    """Apply a fix :func:`g2po.outcomes.check_outcomes` offered to the run's rule (a button's
    callback)."""
    rule = st.session_state.get(RULES, {}).get(run_key, OutcomeRule())
    if fix.kind == "success_reward" and fix.value is not None:
        rule = rule.with_changes(success_reward=fix.value)
    elif fix.kind == "success_threshold" and fix.value is not None:
        rule = rule.with_changes(success_threshold=fix.value, success_reward=(
            rule.success_reward if fix.reward is None else fix.reward))
    elif fix.kind == "terminal_reward":
        rule = rule.with_changes(terminal="reward")
    elif fix.kind == "truncate_at" and fix.value is not None:
        rule = rule.with_changes(truncate_at=int(fix.value))
    set_rule(run_key, rule)


def rule_controls(active: OpenLog) -> OutcomeRule:
    """The run in view's rule widgets (inside the sidebar's parameters); returns its rule,
    kept for the run and written to the URL. A value out of bounds is a message, and the last
    good rule stays."""
    keys = rule_keys(active.key)
    rules = st.session_state.setdefault(RULES, {})
    _seed_widgets(active.key, rules.get(active.key) or _log_rule(active), overwrite=False)
    for key in keys:
        keep_widget_value(key)  # seeded above: sent with the widget on every run
    st.markdown("**Outcome rule** (kept per run; every page counts success by it)")
    st.number_input("success reward", step=1.0, key=keys.success,
                    help="The success terminal's value; a trajectory succeeds when its reward "
                         "equals it, unless the threshold rule is on (the default is the "
                         "log's own).")
    by_threshold = st.checkbox("success when reward ≥ a threshold", key=keys.by_threshold,
                               help="For graded rewards, or successes rewarded unequally: a "
                                    "trajectory succeeds when its reward is at least T.")
    st.number_input("success threshold T", step=0.1, key=keys.threshold,
                    disabled=not by_threshold)
    st.selectbox("terminal rule", TERMINAL_RULES, key=keys.terminal,
                 help="binary: success reward or 0 (reference); reward: R_i")
    by_length = st.checkbox("length ≥ N without success ⇒ truncated", key=keys.by_length,
                            help="For logs without a done flag: a failed trajectory of N or "
                                 "more steps was cut at the step limit. It is drawn ending at "
                                 "the truncated terminal and counted as truncated; the "
                                 "estimators value it as failure all the same.")
    st.number_input("step limit N", min_value=1, step=1, key=keys.truncate_at,
                    disabled=not by_length)
    try:
        rule = _rule_from_widgets(active.key)
    except (ValueError, TypeError) as err:
        show_error("Bad outcome rule; the last good one stays until it is fixed", err)
        rule = rules.get(active.key) or _log_rule(active)
    rules[active.key] = rule
    write_url(success=rule.success_reward, success_min=rule.success_threshold,
              terminal=rule.terminal, truncate_at=rule.truncate_at)
    return rule


def truncation_offer(opened: OpenLog, hint: TruncationHint | None, where: str) -> None:
    """Say that failures of ``opened`` look cut at a step limit its log does not state, and
    offer the rule 'length ≥ N ⇒ truncated' for the run (``where``: a unique widget key
    part)."""
    if hint is None:
        return
    with st.container(border=True):
        md("⚠ **{}**: {}", opened.name, hint.message())
        st.button(fmt("Count length ≥ {} without success as truncated", hint.length),
                  key=f"truncate_offer:{where}:{opened.key}", on_click=apply_fix,
                  args=(opened.key, Fix("truncate_at", "", float(hint.length))))


@st.cache_data(show_spinner=False, max_entries=64)
def _reward_scale(_log, key: str, version: tuple[int, int], train_steps: tuple[int, ...],
                  rule: OutcomeRule) -> RewardScale | None:
    return _log.reward_scale(rule, train_steps)


def run_reward_scale(opened: OpenLog, rule: OutcomeRule,
                     train_steps: Sequence[int] | None = None) -> RewardScale | None:
    """The reward scale of the run's trajectories at ``train_steps`` (default: every
    training step) when ``rule`` counts none of their successes
    (:func:`g2po.outcomes.detect_reward_scale`: a 0/1 reward under the success reward 10),
    else None; kept per log version and rule. A log that cannot be read says nothing here
    (its pages show why)."""
    try:
        version = data.log_version(opened.log)
        steps = tuple(opened.log.train_steps() if train_steps is None else train_steps)
        return _reward_scale(opened.log, opened.key, version, steps, rule)
    except data.LOADER_ERRORS + (G2POError,):
        return None


def reward_scale_offer(opened: OpenLog, scale: RewardScale | None, rule: OutcomeRule,
                       where: str) -> None:
    """Say that the run's rewards are on another scale than its rule's (``scale``, from
    :func:`run_reward_scale`; nothing when None) and offer the one-click fix: the success
    reward set to the scale's, for every page (``where``: a unique widget key part)."""
    if scale is None:
        return
    with st.container(border=True):
        md("⚠ **{}**: {} On the command line: {}.", opened.name, scale.message(),
           scale.flag)
        fix = scale.fix()
        st.button(fmt("{}", fix.label), key=f"reward_scale_offer:{where}:{opened.key}",
                  on_click=apply_fix, args=(opened.key, fix),
                  help="Changes the run's outcome rule (the sidebar's G2PO parameters): "
                       "every page counts success by it.")
