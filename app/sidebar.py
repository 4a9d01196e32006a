"""The sidebar: which logs are open, the run / training step / group in view, the spec's
parameters, and the live-run watcher. Builds the :class:`AppContext` every view receives."""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Collection

import streamlit as st

from app import data, open_logs, rules
from app.context import AppContext, OpenLog
from app.options import AppOptions
from app.safe import fmt, truncate
from app.ui import keep_widget_value, show_error
from app.url_state import mark_read, seed_from_url, unread_url_value, url_once, write_url
from g2po.analysis.labels import lead_with_difference
from g2po.errors import G2POError, StepTableError
from g2po.index import index_steps
from g2po.params import STATE_KEY_CHOICES, G2POParams
from g2po.segments import NORM_MODES
from g2po.state_keys import TrajectoryStrategy, resolve_state_key, similarity
from loaders.formats import LOG_FORMATS
from loaders.log import manifest_params

__all__ = ["build_context", "request_group", "GOTO_STEP", "MISSING_RUN", "warn_missing_run"]

#: Session key: a training step requested by another page (overview click).
GOTO_STEP = "_g2po_goto_step"
#: Session key: the group last shown, chosen at a training step where the picker has no choice.
LAST_GROUP = "_g2po_last_group"
#: Characters the sidebar's group picker shows uncut (its box is about 206 px wide).
GROUP_LABEL_CHARS = 27


def request_group(run_key: str, train_step: int, group_id: str | None = None) -> None:
    """Ask the sidebar to show ``train_step`` (and ``group_id``, if given) of the run
    ``run_key`` on its next run: the one way a page steers it (:mod:`app.navigation`), so the
    picker's session keys stay this module's."""
    if group_id is not None:  # the picker falls back to the last group when none is chosen
        st.session_state.pop(_group_key(run_key, train_step), None)
        st.session_state[LAST_GROUP] = str(group_id)
    st.session_state[GOTO_STEP] = (run_key, train_step)


def _group_key(run_key: str, train_step: int) -> str:
    """Session key of the group picker of one training step of a run."""
    return f"group:{run_key}:{train_step}"


def build_context(options: AppOptions) -> AppContext:
    """Draw the sidebar and return what it selected. Opening logs (the path box, uploads)
    sits at the sidebar's foot (:mod:`app.open_logs`), the choices above it."""
    ctx = AppContext(options=options)
    with st.sidebar:
        choices, panel = st.container(), st.container()
        with choices:
            sources = open_logs.log_sources(options, panel)
            ctx.report_slot = (None, sources.last_slot)  # filled after the page
            if not sources.refs:
                _missing_without_logs(ctx)
                return ctx
            chosen = open_logs.choose_runs(sources.refs, sources.fresh)
            ctx.logs = open_logs.open_chosen(chosen, options)
            if not ctx.logs:
                st.info("Choose a run above.")
                return ctx
            ctx.report_slot = (st.container(), sources.last_slot)
            ctx.active = _choose_active(ctx)
            ctx.rules = rules.run_rules(ctx.logs, ctx.active)
            if ctx.active is None:  # the URL names a run not open here: nothing in its place
                return ctx
            _choose_group(ctx)
            ctx.params = _parameter_controls(ctx)
            _live_watcher(ctx, options)
    return ctx


#: Session key: the run the URL names when it is not open in this session (cleared when it is
#: open again, or when the user chooses another run to show).
MISSING_RUN = "_g2po_missing_run"
#: URL names that describe the run the URL names: not applied to another run chosen instead.
RUN_URL_NAMES = ("step", "group", "traj", "node", "edge", "outcome", *rules.URL_NAMES)


def warn_missing_run(name: str) -> None:
    """Say that the URL names run ``name``, not open in this session, and how to open it."""
    if name.startswith("upload: "):
        how = ("Uploads stay with the browser session that made them: upload the file again "
               "(at the foot of the sidebar) to open it, or choose a run to show instead.")
    else:
        how = ("Open it again (the path box at the foot of the sidebar), or choose a run to "
               "show instead.")
    st.warning(fmt("The link names the run “{}”, which is not open in this session. {}",
                   name, how))


def _choose_active(ctx: AppContext) -> OpenLog | None:
    """The run in view: the URL's on a session's first run, the one opened just now, or the
    user's choice. When the URL names a run not open here (an upload of another session),
    None: the pages say so and show no other run in its place until one is chosen."""
    logs = ctx.logs
    names = [o.name for o in logs]
    state = st.session_state
    wanted = unread_url_value("run")
    if wanted is not None and wanted not in names:
        state[MISSING_RUN] = wanted
    # Seeded on the first run, one log or many: a URL read later would override a log just opened.
    seed_from_url("active_run", "run", str, names)
    missing = state.get(MISSING_RUN)
    if missing is not None:
        if missing not in names:
            return _instead_of_missing(ctx, missing, names)
        state.pop(MISSING_RUN)  # opened again (an upload made anew): shown as the URL said
        state["active_run"] = missing
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


def _missing_without_logs(ctx: AppContext) -> None:
    """No log is open at all: a URL naming a run still gets its message."""
    wanted = unread_url_value("run")
    if wanted is not None:
        ctx.missing_run = wanted
        warn_missing_run(wanted)


def _instead_of_missing(ctx: AppContext, missing: str, names: list[str]) -> OpenLog | None:
    """The URL's run is not open: say so, and show a run only once the user chooses one (the
    URL's training step, group and outcome rule were the missing run's: not applied to it)."""
    choice = st.session_state.get("active_run_instead")
    if choice not in names:
        ctx.missing_run = missing
        warn_missing_run(missing)
        st.selectbox("Run to inspect", names, index=None, key="active_run_instead",
                     placeholder="choose a run to show instead")
        return None
    st.session_state.pop(MISSING_RUN, None)
    mark_read(*RUN_URL_NAMES)
    st.session_state["active_run"] = choice
    write_url(run=choice, **dict.fromkeys(RUN_URL_NAMES))
    return ctx.logs[names.index(choice)]


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
        summary = data.group_summary(opened.log, opened.key, ctx.train_step,
                                     ctx.rule_of(opened))
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot list the groups of training step {ctx.train_step}", err)
        return
    if not groups:
        st.info(fmt("Training step {} holds no groups.", ctx.train_step))
        return
    labels, shared = _group_labels(groups, summary)
    group_key = _group_key(opened.key, ctx.train_step)
    last = st.session_state.get(LAST_GROUP)
    seed_from_url(group_key, "group", str, groups)
    if st.session_state.get(group_key) not in groups:
        st.session_state[group_key] = last if last in groups else groups[0]
    keep_widget_value(group_key)
    ctx.group_id = st.selectbox(
        "Group (task)", groups, key=group_key, format_func=lambda g: labels.get(g, g),
        help=fmt("Each group by what tells it apart, its success rate and rollouts; every "
                 "id starts with {}", shared) if shared else
        "Each group by what tells it apart, its success rate and rollouts")
    st.session_state[LAST_GROUP] = ctx.group_id
    write_url(group=ctx.group_id)


def _group_labels(groups: list[str], summary) -> tuple[dict[str, str], str]:
    """Group id → picker label, short enough for the sidebar: the task's name (verl's gts)
    where the log has one the id does not show and the step's groups do not all share it,
    then what tells the id apart from the others
    (``s3`` of ``cooking-…-train-s3``, cut in the middle when long), then the success rate (by
    the run's outcome rule, as every page counts it) and the rollouts, within
    :data:`GROUP_LABEL_CHARS` but for the task; and the prefix every id shares (the picker's
    help says it)."""
    tails: dict[str, str] = {}
    tasks: dict[str, str] = {}
    if summary is not None and not summary.empty and "group_id" in summary.columns:
        named = summary["task"].tolist() if "task" in summary.columns else [None] * len(summary)
        for row, task in zip(summary.itertuples(index=False), named, strict=True):
            gid = str(row.group_id)
            tails[gid] = f" · success {row.success_rate:.0%} of {int(row.n_traj)}"
            if isinstance(task, str) and task and task not in gid:
                tasks[gid] = truncate(task, GROUP_LABEL_CHARS)
    if len(set(tasks.values())) < 2:  # one task for every group tells none apart
        tasks = {}
    room = GROUP_LABEL_CHARS - max((len(t) for t in tails.values()), default=0)
    parts, shared = lead_with_difference(groups, limit=max(room, 8))
    labels = {g: (f"{tasks[g]} · " if g in tasks else "") + p + tails.get(g, "")
              for g, p in zip(groups, parts, strict=True)}
    return labels, shared


#: Session keys of the parameter widgets, with the URL name each is kept under (the outcome
#: rule's are per run: :mod:`app.rules`).
#: (The state key has widgets of its own: strategy and argument.)
PARAM_URL = {f"p_{name}": name for name in G2POParams.names() if name != "state_key"}
#: The number boxes' bounds (a value from the URL or a run outside them is not applied).
BOUNDS = {"p_gamma": (0.01, 1.0), "p_w": (0.0, 10.0), "p_penalty": (0.0, 100.0)}
#: Session key: the runs whose recorded parameters were applied, each once: when it is first
#: shown in the session.
PARAMS_SEEDED = "_g2po_params_seeded"
#: The similarity strategy's own threshold, for a recorded ``similarity`` without one.
_SIMILARITY_DEFAULT = inspect.signature(similarity).parameters["threshold"].default


def _bounded(key: str) -> Callable[[str], float]:
    """The URL parser of number box ``key``: a float within its bounds, else ValueError."""
    low, high = BOUNDS[key]

    def parse(text: str) -> float:
        value = float(text)
        if not low <= value <= high:
            raise ValueError(f"{value} is outside [{low}, {high}]")
        return value

    return parse


def _parameter_controls(ctx: AppContext) -> G2POParams:
    """G2PO's parameters, and the active run's outcome rule into ``ctx.rules``; a change
    recomputes every view. Each is kept in the URL under its name in :class:`G2POParams`; the
    rule is kept per run (:mod:`app.rules`). A run shown for the first time in the session
    brings the parameters it records (:func:`loaders.log.manifest_params`: its ``run.json``),
    except those the URL sets."""
    active = ctx.active
    assert active is not None
    base = G2POParams()
    from_url = {name for key, name in PARAM_URL.items()
                if seed_from_url(key, name, _bounded(key) if key in BOUNDS else str,
                                 NORM_MODES if key == "p_mode" else None)}
    if _seed_state_key(url_once("state_key")):
        from_url.add("state_key")
    recorded = _recorded_params(active)
    seeded = st.session_state.setdefault(PARAMS_SEEDED, set())
    if active.key not in seeded:
        seeded.add(active.key)
        if recorded is not None:
            _apply_params(recorded, skip=from_url)
    for key, name in PARAM_URL.items():
        st.session_state.setdefault(key, getattr(base, name))
    _seed_state_key(None)
    for key in (*PARAM_URL, "p_state_key", "p_regex", "p_similarity"):
        keep_widget_value(key)  # seeded above: sent with the widget on every run
    with st.expander("G2PO parameters", expanded=False):
        gamma = st.number_input("γ (discount)", *BOUNDS["p_gamma"], step=0.01, key="p_gamma")
        w = st.number_input("w (step-advantage weight)", *BOUNDS["p_w"], step=0.1, key="p_w")
        mode = st.selectbox("normalisation", NORM_MODES, key="p_mode")
        penalty = st.number_input("invalid-action penalty p", *BOUNDS["p_penalty"], step=0.05,
                                  key="p_penalty")
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
        rule = rules.rule_controls(active)
    ctx.rules[active.key] = rule
    chosen = {"gamma": float(gamma), "w": float(w), "mode": str(mode), "penalty": float(penalty),
              "state_key": state_key}
    write_url(**chosen)
    try:
        params = G2POParams.from_values(chosen)
    except (ValueError, KeyError, re.error, G2POError) as err:
        show_error("Bad parameter; using the defaults until it is fixed", err)
        return base
    _say_origin(active, params, recorded)
    return _usable_state_key(ctx, params)


def _recorded_params(opened: OpenLog) -> G2POParams | None:
    """The parameters the run records (its ``run.json``), or None; a ``similarity`` key
    without its threshold is written with the strategy's own, as the slider shows it."""
    recorded = manifest_params(opened.log.manifest)
    if recorded is not None and recorded.state_key == "similarity":
        return G2POParams.from_values({"state_key": f"similarity:{_SIMILARITY_DEFAULT}"},
                                      recorded)
    return recorded


def _apply_params(params: G2POParams, skip: Collection[str] = ()) -> None:
    """Show ``params`` in the widgets (but the names in ``skip``, and a number outside its
    box's bounds, which :func:`_say_origin` then names)."""
    state = st.session_state
    for key, name in PARAM_URL.items():
        value = getattr(params, name)
        low, high = BOUNDS.get(key, (None, None))
        if name not in skip and (low is None or low <= value <= high):
            state[key] = value
    if "state_key" not in skip and isinstance(params.state_key, str):
        _seed_state_key(params.state_key)


def _say_origin(active: OpenLog, params: G2POParams, recorded: G2POParams | None) -> None:
    """Under the parameters: where their values came from (the run's ``run.json`` or the
    defaults), and, when they differ from what the run records, which, with a button that
    brings the recorded ones back."""
    if recorded is None:
        if params == G2POParams():
            st.caption(fmt("G2PO parameters: the defaults (the authors' code); {} records "
                           "none.", active.name))
        else:
            st.caption(fmt("G2PO parameters: changed from the defaults; {} records none.",
                           active.name))
        return
    if params == recorded:
        st.caption(fmt("G2PO parameters: from the run's run.json ({}: what it was trained "
                       "with).", active.name))
        return
    mine, theirs = params.as_dict(), recorded.as_dict()
    differ = ", ".join(f"{name} {theirs[name]} (here {mine[name]})" for name in theirs
                       if theirs[name] != mine[name])
    st.caption(fmt("G2PO parameters: changed from the run's run.json ({} records {}).",
                   active.name, differ))
    st.button("Use the run's recorded parameters", key=f"p_recorded:{active.key}",
              on_click=_apply_params, args=(recorded,))


def _usable_state_key(ctx: AppContext, params: G2POParams) -> G2POParams:
    """``params``, or with the exact state key when the chosen strategy builds keys from
    columns this log lacks (:class:`g2po.state_keys.TrajectoryStrategy`, checked on the group
    in view): the sidebar then says why, and no page computes with a key it cannot build."""
    strategy = resolve_state_key(params.state_key)
    if not isinstance(strategy, TrajectoryStrategy):
        return params
    opened = ctx.active
    if opened is None or ctx.train_step is None or ctx.group_id is None:
        return params
    try:
        rows = data.load_group(opened.log, opened.key, ctx.train_step, ctx.group_id)
    except data.LOADER_ERRORS + (G2POError,):
        return params  # the log's own problem: its pages say it
    problem = None
    try:
        index_steps(rows, strategy)
    except StepTableError as err:
        problem = "; ".join(err.problems)
    if problem is None:
        st.caption(fmt("State key “{}” builds each key from the trajectory's {}; a page "
                       "that reads fewer of the log's columns says it cannot use it.",
                       strategy.__name__, strategy.needs))
        return params
    st.warning(fmt("State key “{}” cannot key this log: {}. Every page uses “exact” until "
                   "another key is chosen.", strategy.__name__, problem))
    return G2POParams.from_values({"state_key": "exact"}, params)


def _seed_state_key(raw: str | None) -> bool:
    """The state-key strategy and its argument from ``raw`` (the URL's or a run's
    ``state_key``, e.g. ``regex:^[^\\n]*`` or ``similarity:0.9``): whether it set them. With
    None, the defaults where the widgets have no state."""
    state = st.session_state
    if raw is None:
        state.setdefault("p_state_key", "exact")
        state.setdefault("p_regex", r"^[^\n]*")
        state.setdefault("p_similarity", 0.9)
        return False
    name, _, arg = raw.partition(":")
    if name not in STATE_KEY_CHOICES:
        return False
    if name == "similarity":
        try:
            threshold = float(arg) if arg else _SIMILARITY_DEFAULT
        except ValueError:
            return False
        if not 0.5 <= threshold <= 1.0:  # the slider's range
            return False
        state["p_similarity"] = threshold
    elif name == "regex":
        state["p_regex"] = arg
    state["p_state_key"] = name
    return True


def _live_watcher(ctx: AppContext, options: AppOptions) -> None:
    """Poll live logs (run directories, verl dumps: one file per training step) for new
    training steps; rerun the app when one lands."""
    runs = [o for o in ctx.logs if LOG_FORMATS[o.log.format].step_files and o.log.path.is_dir()]
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
