"""The sidebar: which logs are open, the run / training step / group in view, the spec's
parameters, and the live-run watcher. Builds the :class:`AppContext` every view receives."""

from __future__ import annotations

import re
import time

import streamlit as st

from app import data, open_logs
from app.context import AppContext, OpenLog
from app.options import AppOptions
from app.params import NORM_MODES, STATE_KEY_CHOICES, TERMINAL_RULES, SpecParams
from app.safe import fmt
from app.ui import keep_widget_value, show_error
from app.url_state import seed_from_url, url_value, write_url
from g2po.analysis.labels import shorten_middle
from g2po.errors import G2POError
from g2po.outcomes import success_rule_from_won

__all__ = ["build_context", "GOTO_STEP", "success_key", "remember_success", "threshold_keys",
           "remember_threshold"]

#: Session key: a training step requested by another page (overview click).
GOTO_STEP = "_g2po_goto_step"


def build_context(options: AppOptions) -> AppContext:
    """Draw the sidebar and return what it selected. Opening logs (the path box, uploads)
    sits at the sidebar's foot (:mod:`app.open_logs`), the choices above it."""
    ctx = AppContext(options=options)
    with st.sidebar:
        choices, panel = st.container(), st.container()
        with choices:
            sources = open_logs.log_sources(options, panel)
            if not sources.refs:
                return ctx
            chosen = open_logs.choose_runs(sources.refs, sources.fresh)
            ctx.logs = open_logs.open_chosen(chosen, options)
            if not ctx.logs:
                st.info("Choose a run above.")
                return ctx
            open_logs.load_reports(ctx.logs)
            ctx.active = _choose_active(ctx.logs)
            _choose_group(ctx)
            ctx.params = _parameter_controls(ctx.active, ctx)
            _live_watcher(ctx, options)
    return ctx


def _choose_active(logs: list[OpenLog]) -> OpenLog:
    names = [o.name for o in logs]
    # Seeded on the first run, one log or many: a URL read later would override a log just opened.
    seed_from_url("active_run", "run", str, names)
    if len(logs) == 1:
        write_url(run=names[0])
        return logs[0]
    goto = st.session_state.get(GOTO_STEP)
    if goto:  # another page asked for a training step of a given run: make it the active one
        st.session_state["active_run"] = next((o.name for o in logs if o.key == goto[0]),
                                              st.session_state.get("active_run"))
    keep_widget_value("active_run", names)
    name = st.selectbox("Run to inspect", names, key="active_run",
                        help="The group explorer, comparison, diagnostics and export look at "
                             "this run.")
    write_url(run=name)
    return logs[names.index(name)] if name in names else logs[0]


def _choose_group(ctx: AppContext) -> None:
    """Training step and group of the active run (the last training step by default; the
    URL's on the first run of a session)."""
    opened = ctx.active
    assert opened is not None
    try:
        steps = opened.log.train_steps()
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot list the training steps of {opened.name}", err)
        return
    if not steps:
        st.info(fmt("{} holds no training steps yet.", opened.name))
        return
    step_key = f"train_step:{opened.key}"
    last_key = f"_g2po_last_step:{opened.key}"
    goto = st.session_state.pop(GOTO_STEP, None)
    if goto and goto[0] == opened.key and goto[1] in steps:
        st.session_state[step_key] = goto[1]
    elif seed_from_url(step_key, "step", int, steps):
        pass
    elif st.session_state.get(step_key) == st.session_state.get(last_key):
        st.session_state[step_key] = steps[-1]  # on the newest step: follow a live run
    if st.session_state.get(step_key) not in steps:
        st.session_state[step_key] = steps[-1]
    st.session_state[last_key] = steps[-1]
    if opened.log.has_train_steps:
        keep_widget_value(step_key)
        ctx.train_step = st.selectbox("Training step", steps, key=step_key)
    else:
        st.caption("This log has no training steps: all its rows are one step.")
        ctx.train_step = steps[0]
    write_url(step=ctx.train_step if opened.log.has_train_steps else None)
    try:
        groups = data.group_ids(opened.log, opened.key, ctx.train_step)
        summary = data.group_summary(opened.log, opened.key, ctx.train_step)
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot list the groups of training step {ctx.train_step}", err)
        return
    if not groups:
        st.info(fmt("Training step {} holds no groups.", ctx.train_step))
        return
    labels = _group_labels(groups, summary)
    group_key = f"group:{opened.key}:{ctx.train_step}"
    last = st.session_state.get("_g2po_last_group")
    seed_from_url(group_key, "group", str, groups)
    if st.session_state.get(group_key) not in groups:
        st.session_state[group_key] = last if last in groups else groups[0]
    keep_widget_value(group_key)
    ctx.group_id = st.selectbox("Group (task)", groups, key=group_key,
                                format_func=lambda g: labels.get(g, g))
    st.session_state["_g2po_last_group"] = ctx.group_id
    write_url(group=ctx.group_id)


def _group_labels(groups: list[str], summary) -> dict[str, str]:
    """Group id → picker label: the id shortened in the middle, rollouts and success rate
    (from the log's ``won`` where it has one, as the loaders' summary counts it)."""
    short = dict(zip(groups, shorten_middle(groups, limit=40), strict=True))
    if summary is None or summary.empty or "group_id" not in summary.columns:
        return short
    labels = dict(short)
    for row in summary.itertuples(index=False):
        gid = str(row.group_id)
        labels[gid] = (f"{short.get(gid, gid)} · {int(row.n_traj)} rollouts · success "
                       f"{row.success_rate:.0%}")
    return labels


#: Session keys of the parameter widgets, with the URL name each is kept under.
PARAM_URL = {"p_gamma": "gamma", "p_w": "w", "p_mode": "mode", "p_penalty": "penalty",
             "p_terminal": "terminal"}
#: The success reward of each run, kept while another run is shown (its widget is not).
SUCCESS_BY_RUN = "_g2po_success_by_run"
#: The success threshold of each run (None: the equality rule), kept the same way.
THRESHOLD_BY_RUN = "_g2po_threshold_by_run"


def success_key(active: OpenLog) -> str:
    """The session key of the success-reward widget of a run (views' fix buttons set it)."""
    return f"p_success:{active.key}"


def remember_success(active: OpenLog, value: float) -> None:
    """Set a run's success reward (a fix offered by a view): kept for that run."""
    st.session_state[success_key(active)] = float(value)
    st.session_state.setdefault(SUCCESS_BY_RUN, {})[active.key] = float(value)


def threshold_keys(active: OpenLog) -> tuple[str, str]:
    """The session keys of a run's threshold-rule checkbox and threshold widgets."""
    return f"p_by_threshold:{active.key}", f"p_threshold:{active.key}"


def remember_threshold(active: OpenLog, value: float | None,
                       success_reward: float | None = None) -> None:
    """Set a run's success rule (a fix offered by a view): reward ≥ ``value``, or equality to
    the success reward when None; ``success_reward`` also sets the success terminal's value.
    Kept for that run."""
    on_key, value_key = threshold_keys(active)
    st.session_state[on_key] = value is not None
    if value is not None:
        st.session_state[value_key] = float(value)
    st.session_state.setdefault(THRESHOLD_BY_RUN, {})[active.key] = \
        None if value is None else float(value)
    if success_reward is not None:
        remember_success(active, success_reward)


def _log_success_rule(active: OpenLog, ctx_group: tuple | None) -> tuple[float, float | None]:
    """The run's success rule as its log states it: (success reward, threshold or None).

    The manifest's ``success_reward`` (and ``success_threshold``) first; else, from the shown
    group's ``won`` flags, the reward every won trajectory has, or, when won trajectories are
    rewarded unequally but above every other, the threshold that reproduces ``won`` (with the
    success terminal at the largest won reward); else 10 and the equality rule."""
    manifest = getattr(active.log, "manifest", None) or {}
    holders = [manifest, manifest.get("config"), manifest.get("estimator_params")] \
        if isinstance(manifest, dict) else []
    holders = [h for h in holders if isinstance(h, dict)]
    threshold = next((float(h["success_threshold"]) for h in holders
                      if isinstance(h.get("success_threshold"), int | float)), None)
    for holder in holders:
        if isinstance(holder.get("success_reward"), int | float):
            return float(holder["success_reward"]), threshold
    if ctx_group is not None:
        try:
            from_won = success_rule_from_won(data.load_group(active.log, active.key, *ctx_group))
        except data.LOADER_ERRORS + (G2POError,):
            from_won = None
        if from_won is not None:
            return from_won
    return float(getattr(active.log, "success_reward", 10.0)), threshold


def _seed_success_rule(active: OpenLog, group: tuple | None) -> None:
    """A run's success reward and threshold rule: from the URL (``success``, ``success_min``)
    on a session's first run, else what was kept for the run, else what its log says."""
    s_key = success_key(active)
    on_key, value_key = threshold_keys(active)
    rewards = st.session_state.setdefault(SUCCESS_BY_RUN, {})
    thresholds = st.session_state.setdefault(THRESHOLD_BY_RUN, {})
    seed_from_url(s_key, "success", float)
    if seed_from_url(value_key, "success_min", float):
        st.session_state[on_key] = True
    if s_key not in st.session_state or on_key not in st.session_state:
        if active.key in rewards:
            reward, threshold = rewards[active.key], thresholds.get(active.key)
        else:
            reward, threshold = _log_success_rule(active, group)
        st.session_state.setdefault(s_key, reward)
        if on_key not in st.session_state:
            st.session_state[on_key] = threshold is not None
            if threshold is not None:
                st.session_state[value_key] = threshold
    st.session_state.setdefault(value_key, float(st.session_state[s_key]))


def _parameter_controls(active: OpenLog, ctx: AppContext | None = None) -> SpecParams:
    """The spec's parameters; a change recomputes every view. Each is kept in the URL; the
    success reward is kept per run and defaults to what the log says."""
    base = SpecParams()
    group = (ctx.train_step, ctx.group_id) if ctx is not None and ctx.has_group else None
    s_key = success_key(active)
    on_key, value_key = threshold_keys(active)
    _seed_success_rule(active, group)
    defaults = {"p_gamma": base.gamma, "p_w": base.w, "p_mode": base.mode,
                "p_penalty": base.penalty, "p_terminal": base.terminal}
    parsers = {"p_mode": str, "p_terminal": str}
    allowed = {"p_mode": NORM_MODES, "p_terminal": TERMINAL_RULES}
    for key, name in PARAM_URL.items():
        seed_from_url(key, name, parsers.get(key, float), allowed.get(key))
        st.session_state.setdefault(key, defaults[key])
    _seed_state_key()
    for key in (*PARAM_URL, s_key, on_key, value_key, "p_state_key", "p_regex", "p_similarity"):
        keep_widget_value(key)  # seeded above: sent with the widget on every run
    with st.expander("G2PO parameters", expanded=False):
        gamma = st.number_input("γ (discount)", 0.01, 1.0, step=0.01, key="p_gamma")
        w = st.number_input("w (step-advantage weight)", 0.0, 10.0, step=0.1, key="p_w")
        mode = st.selectbox("normalisation", NORM_MODES, key="p_mode")
        penalty = st.number_input("invalid-action penalty p", 0.0, 100.0, step=0.05,
                                  key="p_penalty")
        success = st.number_input("success reward", step=1.0, key=s_key,
                                  help="The success terminal's value; a trajectory succeeds "
                                       "when its reward equals it, unless the threshold rule "
                                       "is on (kept per run; the default is the log's own).")
        by_threshold = st.checkbox("success when reward ≥ a threshold", key=on_key,
                                   help="For graded rewards, or successes rewarded unequally: "
                                        "a trajectory succeeds when its reward is at least T "
                                        "(kept per run).")
        success_at = st.number_input("success threshold T", step=0.1, key=value_key,
                                     disabled=not by_threshold)
        terminal = st.selectbox("terminal rule", TERMINAL_RULES, key="p_terminal",
                                help="binary: success reward or 0 (reference); reward: R_i")
        strategy = st.selectbox("state key", STATE_KEY_CHOICES, key="p_state_key",
                                help="How observations merge into nodes.")
        state_key = strategy
        if strategy == "regex":
            pattern = st.text_input("regex (first group or whole match is the key)",
                                    key="p_regex")
            state_key = f"regex:{pattern}"
        elif strategy == "similarity":
            threshold = st.slider("similarity threshold", 0.5, 1.0, step=0.01,
                                  key="p_similarity")
            state_key = f"similarity:{threshold}"
    st.session_state[SUCCESS_BY_RUN][active.key] = float(success)
    success_min = float(success_at) if by_threshold else None
    st.session_state[THRESHOLD_BY_RUN][active.key] = success_min
    write_url(gamma=float(gamma), w=float(w), mode=str(mode), penalty=float(penalty),
              success=float(success), success_min=success_min, terminal=str(terminal),
              state_key=state_key)
    try:
        return SpecParams(gamma=float(gamma), w=float(w), mode=str(mode), penalty=float(penalty),
                          success_reward=float(success), terminal=str(terminal),
                          state_key=state_key, success_threshold=success_min)
    except (ValueError, KeyError, re.error, G2POError) as err:
        show_error("Bad parameter; using the defaults until it is fixed", err)
        return SpecParams(success_reward=float(success))


def _seed_state_key() -> None:
    """The state-key strategy and its argument, from the URL's ``state_key`` (e.g.
    ``regex:^[^\\n]*`` or ``similarity:0.9``) on the first run, else their defaults."""
    seeded = st.session_state.setdefault("_g2po_url_seeded", set())
    if "state_key" not in seeded:
        seeded.add("state_key")
        raw = url_value("state_key")
        if raw:
            name, _, arg = raw.partition(":")
            if name in STATE_KEY_CHOICES:
                st.session_state["p_state_key"] = name
                if name == "regex":
                    st.session_state["p_regex"] = arg
                elif name == "similarity":
                    try:
                        st.session_state["p_similarity"] = min(1.0, max(0.5, float(arg)))
                    except ValueError:
                        pass
    st.session_state.setdefault("p_state_key", "exact")
    st.session_state.setdefault("p_regex", r"^[^\n]*")
    st.session_state.setdefault("p_similarity", 0.9)


def _live_watcher(ctx: AppContext, options: AppOptions) -> None:
    """Poll live run directories for new training steps; rerun the app when one lands."""
    runs = [o for o in ctx.logs if o.log.format == "run"]
    if not runs or options.refresh <= 0:
        return
    live = st.toggle(fmt("Live: watch for new training steps (every {:g} s)", options.refresh),
                     value=True, key="live")
    if not live:
        return
    seen = {o.key: data.log_version(o.log) for o in runs}

    def check() -> None:
        changed = False
        for o in runs:
            try:
                o.log.refresh()
            except data.LOADER_ERRORS + (G2POError,):
                continue
            if data.log_version(o.log) != seen[o.key]:
                changed = True
        st.caption(fmt("Checked {}", time.strftime("%H:%M:%S")))
        if changed:
            st.rerun(scope="app")

    st.fragment(check, run_every=options.refresh)()
