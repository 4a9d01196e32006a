"""Several estimators on one group, side by side: the per-step table (with each step's node and
its trajectory's outcome), each estimator's parts, rank correlations, and the steps where two
estimators disagree in sign, with what each estimator's parts say there.

What an estimator's parts are called, how they weigh in its advantage and how each is explained
are declared with the estimator (:class:`g2po.estimators.spec.Part`); this module knows no
estimator by name."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from g2po.analysis.labels import natural_key
from g2po.analysis.state_graph import StateGraph
from g2po.errors import G2POError
from g2po.estimators import (
    Part,
    compute_advantages,
    estimate,
    estimator_params,
    get_spec,
)
from g2po.estimators import parameter_choices as declared_choices
from g2po.node_ids import step_node_ids
from g2po.outcomes import OutcomeRule, outcome_labels, truncated_steps
from g2po.segments import NORM_MODES

__all__ = ["Comparison", "compare_estimators", "rank_correlation", "sign_disagreements",
           "zscore", "parameter_choices", "part_label", "trajectory_facts", "step_location",
           "explain_disagreements", "disagreement_counts", "contributions",
           "estimator_settings", "DEFAULT_ESTIMATORS", "KNOWN_CHOICES", "PART_PREFIX",
           "TEXT_EXTRAS"]

DEFAULT_ESTIMATORS = ("g2po", "grpo", "gigpo")
#: Choices of text parameters whose annotation does not list them (a user's estimator
#: annotating ``mode: str``): the spec's normalisation modes and terminal rules.
KNOWN_CHOICES: dict[str, tuple[str, ...]] = {"mode": NORM_MODES,
                                             "terminal": ("binary", "reward")}
_KEY = ["traj_id", "t"]
#: The step texts kept beside the text column: the model's output, and the whole model input
#: (a verl dump's ``prompt``, of which ``observation`` is the current part).
TEXT_EXTRAS = ("response", "prompt")
#: An estimator's output columns named ``adv_…`` are the parts of its advantage (G2PO's
#: ``adv_ep``, ``adv_nc``, ``adv_ec``; GiGPO's ``adv_ep``, ``adv_step``; HGPO's ``adv_k1`` …).
PART_PREFIX = "adv_"


def part_label(name: str, column: str) -> str:
    """The name estimator ``name``'s part column is shown under: the label it declares
    (``adv_nc`` → ``A^NC``), else ``A^x`` for ``adv_x`` (a user's estimator).

    >>> part_label("g2po", "adv_nc"), part_label("hgpo", "adv_k2"), part_label("g2po", "adv_q")
    ('A^NC', 'A^k2', 'A^q')
    """
    declared = get_spec(name).part_label(column)
    suffix = column[len(PART_PREFIX):] if column.startswith(PART_PREFIX) else column
    return declared or f"A^{suffix}"


def parameter_choices(name: str) -> dict[str, tuple]:
    """Parameter → its allowed values, for an estimator's parameters that take one of a few:
    those it declares (``Literal[...]`` annotations, ``mode: NormMode``), else
    :data:`KNOWN_CHOICES` for a text parameter of a known name. Parameters taking any number
    or text are left out."""
    out = {}
    for param, default in estimator_params(name).items():
        if param in KNOWN_CHOICES and isinstance(default, str):
            out[param] = KNOWN_CHOICES[param]
    return {**out, **declared_choices(name)}


@dataclass
class Comparison:
    """``table``: one row per step, ordered by trajectory then step: traj_id, t, node (the id
    the group's state graph gives the step's state under the comparison's state key, as the
    group explorer numbers it), outcome (``success``, ``failure`` or ``truncated``: what the
    step's trajectory reached), episode_reward, valid, one float column per estimator that ran
    (named by the estimator), then action, the step's text and ``response`` (the model's
    output, where the log has it); ``text_column``: the name of the text column,
    ``observation`` (what the policy saw) where the log has one, else ``state_key``;
    ``texts``: the step's whole texts, rows as ``table``'s (the text column, ``response``
    and ``prompt``, the whole model input of a verl dump, where the log has them); ``parts``:
    estimator → its parts (the ``adv_…`` columns it returned, named by
    :func:`part_label`; rows as ``table``'s; estimators without parts are absent);
    ``peer_sets``: estimator → output column → (n_steps,) values, rows as ``table``'s: the
    sets a part is weighed within where it declares them (MiGPO's ``segment``); ``errors``:
    estimator name → message for those that could not run on this group; ``params``: what
    each ran with."""

    table: pd.DataFrame
    estimators: list[str]
    errors: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)
    text_column: str = "state_key"
    parts: dict[str, pd.DataFrame] = field(default_factory=dict)
    texts: pd.DataFrame = field(default_factory=pd.DataFrame)
    peer_sets: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def compare_estimators(
    steps: pd.DataFrame,
    estimators: list[str],
    params: dict[str, dict] | None = None,
    state_key: str = "exact",
    *,
    rule: OutcomeRule,
) -> Comparison:
    """Run each estimator on the group's ``steps`` with ``params[name]`` (keyword arguments)
    and collect its ``adv`` column and its parts. An estimator that fails (a parameter out of
    its range, a user estimator raising) is reported in ``errors`` instead of stopping the
    others. The run's outcome ``rule`` decides each trajectory's outcome (success, failure,
    truncated); node ids are numbered as :func:`g2po.analysis.state_graph.state_graph`
    numbers them on ``steps`` in their given row order, under the same rule."""
    params = params or {}
    g2po_cols, ix = estimate(steps, "g2po", state_key=state_key, **rule.estimator_kwargs())
    success = np.asarray(g2po_cols["success"], dtype=bool)
    truncated = truncated_steps(steps, ix, success, rule.truncate_at)
    node, _ = step_node_ids(ix, success, truncated)
    outcome = outcome_labels(success, truncated)
    # rows by trajectory (natural order: s0:2 before s0:10), then step
    traj_rank = steps["traj_id"].astype(str).map(_natural_rank(steps["traj_id"])).to_numpy()
    order = np.lexsort((steps["t"].to_numpy(), traj_rank))
    ordered = steps.iloc[order].reset_index(drop=True)
    text_col = "observation" if "observation" in ordered.columns else "state_key"
    table = pd.DataFrame({
        "traj_id": ordered["traj_id"].to_numpy(),
        "t": ordered["t"].to_numpy(),
        "node": node[order],
        "outcome": outcome[order],
        "episode_reward": ordered["episode_reward"].to_numpy(dtype=np.float64),
        "valid": ordered["is_action_valid"].to_numpy(dtype=bool),
    })
    ran, errors, parts, peer_sets = [], {}, {}, {}
    for name in estimators:
        kwargs = dict(params.get(name, {}))
        try:
            out = compute_advantages(ordered, name, state_key=state_key, prefix="__",
                                     **kwargs)
        except (G2POError, ValueError, TypeError, KeyError, ArithmeticError) as err:
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        table[name] = out["__adv"].to_numpy(dtype=np.float64)
        own = [c[2:] for c in out.columns if c.startswith("__" + PART_PREFIX)
               and out[c].dtype.kind == "f"]
        if own:
            parts[name] = pd.DataFrame({part_label(name, c): out["__" + c].to_numpy()
                                        for c in own})
        sets = {p.peers for p in get_spec(name).parts if p.explain == "peers"
                and p.peers != "node" and "__" + p.peers in out.columns}
        if sets:
            peer_sets[name] = {c: out["__" + c].to_numpy() for c in sorted(sets)}
        ran.append(name)
    table["action"] = ordered["action"].to_numpy()
    text_cols = [c for c in (text_col, *TEXT_EXTRAS) if c in ordered.columns]
    texts = ordered[text_cols].reset_index(drop=True)
    # the prompt stays out of the table (thousands of characters): pages show it on demand
    for col in [c for c in (text_col, "response") if c in texts.columns]:
        table[col] = texts[col].to_numpy()
    return Comparison(table=table, estimators=ran, errors=errors,
                      params={n: dict(params.get(n, {})) for n in estimators},
                      text_column=text_col, parts=parts, texts=texts, peer_sets=peer_sets)


def _natural_rank(ids: pd.Series) -> dict[str, int]:
    """Trajectory id → its position in natural order (``s0:2`` before ``s0:10``)."""
    unique = sorted(pd.unique(ids.astype(str)), key=natural_key)
    return {t: i for i, t in enumerate(unique)}


def trajectory_facts(table: pd.DataFrame) -> pd.DataFrame:
    """Per trajectory of a :class:`Comparison` table (index ``traj_id``, in the table's order):
    ``outcome``, ``length`` (steps) and ``episode_reward``; for titles and pickers."""
    grouped = table.groupby("traj_id", sort=False)
    return pd.DataFrame({"outcome": grouped["outcome"].first(), "length": grouped.size(),
                         "episode_reward": grouped["episode_reward"].first()})


def step_location(graph: StateGraph, traj_id: str, t: int) -> tuple[int, int | None] | None:
    """Where step ``t`` of trajectory ``traj_id`` sits in ``graph``: its node and the row of
    its edge in ``graph.edges`` (None when no edge matches); None when the graph has no such
    step. For opening a step in the group explorer."""
    steps = graph.steps
    hit = steps[(steps["traj_id"].astype(str).to_numpy() == str(traj_id))
                & (steps["t"].to_numpy() == int(t))]
    if hit.empty:
        return None
    step = hit.iloc[0]
    edges = graph.edges
    match = np.flatnonzero((edges["source"].to_numpy() == int(step["node"]))
                           & (edges["target"].to_numpy() == int(step["next_node"]))
                           & (edges["action"].astype(str).to_numpy() == str(step["action"])))
    return int(step["node"]), (int(match[0]) if len(match) else None)


def zscore(table: pd.DataFrame, estimators: list[str]) -> pd.DataFrame:
    """A copy of ``table`` with each estimator's column z-scored over the group's steps
    (mean 0, population std 1), so estimators on very different scales compare by shape. A
    constant column becomes 0. For display: signs change with the mean, so sign comparisons
    use the raw values."""
    out = table.copy()
    for name in estimators:
        values = out[name].to_numpy(dtype=np.float64)
        std = values.std()
        out[name] = (values - values.mean()) / std if std > 1e-12 else np.zeros_like(values)
    return out


def rank_correlation(table: pd.DataFrame, estimators: list[str],
                     method: str = "spearman") -> pd.DataFrame:
    """Rank correlation (``spearman`` or ``kendall``) between the estimators' per-step
    advantages, (k, k). NaN where an estimator is constant on the group (no ranking)."""
    if method not in ("spearman", "kendall"):
        raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")
    return table[estimators].corr(method=method)


def sign_disagreements(table: pd.DataFrame, a: str, b: str,
                       parts: dict[str, pd.DataFrame] | None = None,
                       tol: float = 1e-9) -> pd.DataFrame:
    """Steps where ``a`` and ``b`` push in opposite directions (one > tol, the other < −tol),
    the widest disagreement first. A zero advantage has no sign and never disagrees.

    One row per such step: traj_id, t, node and outcome (where ``table`` has them), ``a``'s
    advantage then its parts (``parts[a]``, columns named ``"{a} · {part}"``), the same for
    ``b``, ``z gap`` = |z(a) − z(b)|, each estimator's advantages z-scored over all the
    group's steps as :func:`zscore` does (so an estimator on a wider scale, GiGPO's
    ``mean_norm`` beside G2PO's ``mean_std_norm``, does not decide the order alone), then the
    action and the step's text. Sorted by z gap, then trajectory (natural order) and step."""
    if a == b:
        raise ValueError(f"sign_disagreements needs two different estimators, got {a!r} twice")
    parts = parts or {}
    x = table[a].to_numpy(dtype=np.float64)
    y = table[b].to_numpy(dtype=np.float64)
    sx = np.where(x > tol, 1, np.where(x < -tol, -1, 0))
    sy = np.where(y > tol, 1, np.where(y < -tol, -1, 0))
    mask = sx * sy < 0
    z = zscore(table[[a, b]], [a, b])
    out = table.loc[mask, [c for c in ("traj_id", "t", "node", "outcome") if c in table]].copy()
    for name in (a, b):
        out[name] = table.loc[mask, name]
        if name in parts:
            for col in parts[name].columns:
                out[f"{name} · {col}"] = parts[name][col].to_numpy()[mask]
    out["z gap"] = np.abs(z[a].to_numpy() - z[b].to_numpy())[mask]
    for col in ("action", "observation", "state_key", "response"):
        if col in table.columns and col not in out.columns:
            out[col] = table.loc[mask, col]
    rank = out["traj_id"].astype(str).map(_natural_rank(out["traj_id"])) if len(out) else []
    return out.assign(_r=rank).sort_values(["z gap", "_r", "t"], ascending=[False, True, True],
                                            kind="stable").drop(columns="_r"
                                                                ).reset_index(drop=True)


# --- Why two estimators disagree --------------------------------------------------------------

_EPS = 1e-6


def estimator_settings(result: Comparison, name: str) -> dict[str, object]:
    """The parameters ``name`` ran with in ``result``: its defaults, overridden by the
    comparison's."""
    return {**estimator_params(name), **result.params.get(name, {})}


def _declared_weights(name: str, parts: pd.DataFrame, settings: dict) -> pd.DataFrame | None:
    """Each part's weight per step as estimator ``name`` declares it (its ``weights``
    function, else each :class:`~g2po.estimators.spec.Part`'s number or parameter); None when
    it declares none of these parts."""
    spec = get_spec(name)
    if spec.weights is not None:
        return spec.weights(parts, settings)
    declared = [spec.part(c) for c in parts.columns]
    if not all(declared):
        return None
    return pd.DataFrame({c: np.full(len(parts), float(settings[p.weight])
                                    if isinstance(p.weight, str) else float(p.weight))
                         for c, p in zip(parts.columns, declared, strict=True)})


def contributions(result: Comparison, name: str) -> pd.DataFrame | None:
    """Each part's share of ``name``'s advantage, (n_steps, n_parts), rows as ``result.table``:
    the part times its weight, as the estimator declares it (a number or a parameter per part,
    or HGPO's per-step weights). None when ``name`` has no parts, or when the weighted parts do
    not add up to its advantage (a user's estimator that does not combine its parts
    linearly)."""
    parts = result.parts.get(name)
    if parts is None or parts.empty:
        return None
    weights = _declared_weights(name, parts, estimator_settings(result, name))
    if weights is None:  # a sum of fixed weights, fitted; kept only where it reproduces adv
        fit = np.linalg.lstsq(parts.to_numpy(dtype=np.float64),
                              result.table[name].to_numpy(dtype=np.float64), rcond=None)[0]
        weights = pd.DataFrame(np.broadcast_to(fit, parts.shape), columns=parts.columns)
    shares = parts * weights.to_numpy()
    adv = result.table[name].to_numpy(dtype=np.float64)
    if not np.allclose(shares.sum(axis=1).to_numpy(), adv, rtol=1e-6, atol=1e-8):
        return None
    return shares


def _signed(value: float) -> str:
    """+2.96 / −0.85 (a real minus sign), as the page's sentences write numbers."""
    return f"{value:+.2f}".replace("-", "\u2212")


def _words(part: Part | None, label: str) -> str:
    """``node term A^NC``: the part's words and label (``term A^x`` for an undeclared part)."""
    return f"{part.words} {label}" if part is not None else f"term {label}"


def _share(values: np.ndarray, i: int) -> str:
    """Where ``values[i]`` sits among all of ``values``: the group's top / bottom x %."""
    v = values[i]
    if v > 0:
        return f"top {max(1, int(np.ceil(100 * np.mean(values >= v))))} %"
    return f"bottom {max(1, int(np.ceil(100 * np.mean(values <= v))))} %"


_OUTCOME_WORDS = {"success": "successful", "failure": "failed", "truncated": "truncated"}


class _Group:
    """What the explanations read of one comparison, taken out of its frames once (the
    sentences are written step by step, and pandas lookups per step would dominate)."""

    def __init__(self, result: Comparison, names: tuple[str, ...]):
        table = result.table
        self.result = result
        self.adv = {n: table[n].to_numpy(dtype=np.float64) for n in names}
        self.parts = {n: {c: result.parts[n][c].to_numpy(dtype=np.float64)
                          for c in result.parts[n].columns}
                      for n in names if n in result.parts}
        self.shares = {n: contributions(result, n) for n in names}
        self.shares = {n: None if v is None else v.to_numpy(dtype=np.float64)
                       for n, v in self.shares.items()}
        self.settings = {n: estimator_settings(result, n) for n in names}
        self.specs = {n: get_spec(n) for n in names}
        self.peer_sets = {n: result.peer_sets.get(n, {}) for n in names}
        self.node = table["node"].to_numpy()
        self.outcome = table["outcome"].astype(str).to_numpy()
        self.reward = table["episode_reward"].to_numpy(dtype=np.float64)
        self.valid = table["valid"].to_numpy(dtype=bool)
        self.per_traj = table.groupby("traj_id", sort=False)["episode_reward"].first(
            ).to_numpy(dtype=np.float64)

    def rollout_words(self, i: int) -> str:
        invalid = "" if self.valid[i] else ", an invalid action here"
        outcome = _OUTCOME_WORDS.get(self.outcome[i], self.outcome[i])
        return f"of a {outcome} rollout (R = {self.reward[i]:g}{invalid})"

    def declared(self, name: str, label: str) -> Part | None:
        return self.specs[name].part(label)

    def episode_kind(self, name: str, label: str | None) -> str:
        """The set an episode-level value is normalised over: that of ``name``'s part
        ``label``, or (None) of ``name`` itself; "" when it is no episode-level value."""
        if label is None:
            return self.specs[name].episode
        part = self.declared(name, label)
        return part.over if part is not None and part.explain == "episode" else ""

    def term_context(self, name: str, label: str, i: int) -> str:
        """Why one part is what it is at step ``i``, from the group's other steps, as the
        estimator declares the part is explained."""
        part = self.declared(name, label)
        if part is None:
            return ""
        values = self.parts[name][label]
        if part.explain == "rank":
            return f"this transition's {part.of} is in the group's {_share(values, i)}"
        if part.explain == "peers":
            return self.peer_words(name, part, values, i)
        if part.explain == "episode":
            return self.rollout_words(i)
        k = label.removeprefix(part.label.split("{k}")[0])
        return f"its return against the steps sharing its last {k} state(s)"

    def peer_words(self, name: str, part: Part, values: np.ndarray, i: int) -> str:
        """The part's value at step ``i`` against the other steps of its set: its node's
        other visits, or the steps sharing its value of the column ``part.peers``."""
        ids = self.node if part.peers == "node" else self.peer_sets[name].get(part.peers)
        if ids is None:
            return ""
        others = ids == ids[i]
        others[i] = False
        n = int(others.sum())
        beaten = int(np.sum(values[others] < values[i]) if values[i] > 0
                     else np.sum(values[others] > values[i]))
        more = "more" if values[i] > 0 else "less"
        if part.peers == "node":
            node = self.node[i]
            if n == 0:
                return f"node {node} is visited once"
            return (f"{part.of} {more} than at {beaten} of node {node}'s {n} other "
                    f"visit{'s' if n != 1 else ''}")
        if n == 0:
            return f"it is alone among the steps {part.among}"
        return (f"{part.of} {more} than at {beaten} of the {n} other "
                f"step{'s' if n != 1 else ''} {part.among}")

    def sign_sentence(self, name: str, i: int) -> tuple[str, str]:
        """(what decides ``name``'s sign at step ``i``, the sentence saying so)."""
        value = self.adv[name][i]
        head = f"{name} {'>' if value > 0 else '<'} 0 ({_signed(value)})"
        shares = self.shares[name]
        if shares is None:
            if self.episode_kind(name, None):
                return name, (f"{head}: one value for the whole rollout, that "
                              f"{self.rollout_words(i)}")
            return name, f"{head}: its advantage has no parts to tell apart"
        labels = list(self.parts[name])
        words = [_words(self.declared(name, c), c) for c in labels]
        row, raw = shares[i], np.array([self.parts[name][c][i] for c in labels])
        sign = np.sign(value)
        top = int(np.argmax(sign * row))
        context = self.term_context(name, labels[top], i)
        said = f"{head}: the {words[top]} {_signed(row[top])}" + (
            f" — {context} —" if context else "")
        against = [j for j in range(len(row)) if sign * row[j] < -1e-9]
        if against:
            said += " outweighs " + ", ".join(
                f"the {words[j]} {_signed(row[j])}"
                + (f" {self.rollout_words(i)}" if self.episode_kind(name, labels[j]) else "")
                for j in against)
        else:
            said += " and every other term points the same way"
        if not np.allclose(row, raw):
            said += " (terms as weighted in the sum)"
        return f"{name} · {labels[top]}", said

    def episode_value(self, name: str, part: str | None, i: int) -> tuple[float, str] | None:
        """An episode-level value at step ``i`` (the estimator ``name`` or its ``part``) and
        how it is computed, in numbers, rebuilt from the group's rewards by the spec; None
        when the value is not episode-level, or the rebuilt value does not match."""
        kind = self.episode_kind(name, part)
        if not kind:
            return None
        actual = self.adv[name][i] if part is None else self.parts[name][part][i]
        settings = self.settings[name]
        mode = str(settings.get("mode", "mean_std_norm"))
        label = name if part is None else f"{name}'s {part}"
        reward = self.reward[i]
        if kind == "others":
            n = len(self.per_traj)
            base = (self.per_traj.sum() - reward) / max(n - 1, 1)
            rebuilt = reward - base if n > 1 else 0.0
            text = (f"{label} {_signed(actual)} = R {reward:g} − {base:.2f}, the mean reward "
                    f"of the other {n - 1} rollouts")
        else:
            if kind == "rollouts":
                scores, score, pen = self.per_traj, reward, ""
                where, counts = (f"the group's {len(scores)} rollouts",
                                 "each rollout counts once")
                # a lone rollout: 0, as every singleton set (estimators.md)
                lone = (score, 1.0)
            else:
                penalty = float(settings.get("penalty", 0.0))
                scores = self.reward - penalty * ~self.valid
                score = scores[i]
                where = f"the group's {len(scores)} step rows"
                counts = "a rollout counts once per step, so long rollouts weigh more"
                pen = f" − penalty {penalty:g}" if not self.valid[i] and penalty else ""
                lone = (0.0, 1.0)  # a lone step row: mean 0, std 1 (estimators.md, step 6)
            mean, std = (scores.mean(), scores.std(ddof=1)) if len(scores) > 1 else lone
            if mode == "mean_norm":
                rebuilt = score - mean
                text = (f"{label} {_signed(actual)} = R {reward:g}{pen} − mean {mean:.2f} over "
                        f"{where} (mean_norm: not divided by the std)")
            else:
                rebuilt = (score - mean) / (std + _EPS)
                text = (f"{label} {_signed(actual)} = (R {reward:g}{pen} − mean {mean:.2f}) / "
                        f"std {std:.2f} over {where}")
            text += f": {counts}"
        if not np.isclose(rebuilt, actual, rtol=1e-6, atol=1e-8):
            return None
        return actual, text

    def episode_comparison(self, a: str, b: str, i: int) -> str:
        """Where the two estimators' episode-level values at step ``i`` differ, and why; ""
        when they do not both have one, or it is the same."""
        found = []
        for name in (a, b):
            part = next((p for p in self.parts.get(name, {})
                         if self.episode_kind(name, p)), None)
            value = self.episode_value(name, part, i)
            if value is not None:
                found.append((name, self.episode_kind(name, part), *value))
        if len(found) < 2 or abs(found[0][2] - found[1][2]) < 0.005:
            return ""
        reasons = []
        kinds = [kind for _, kind, *_ in found]
        if len(set(kinds)) > 1:
            reasons.append("they normalise over different sets (" + " vs ".join(
                f"{n}: {k}" for n, k, *_ in found) + ")")
        modes = [str(self.settings[n].get("mode", "mean_std_norm")) if k != "others"
                 else "no normalisation" for n, k, *_ in found]
        if len(set(modes)) > 1:
            reasons.append("normalisation " + " vs ".join(modes))
        invalid = int((~self.valid).sum())
        penalties = [float(self.settings[n].get("penalty", 0.0)) if k == "step rows" else 0.0
                     for n, k, *_ in found]
        if invalid and len(set(penalties)) > 1:
            here = "" if self.valid[i] else ", this one among them"
            reasons.append("the invalid-action penalty: " + " vs ".join(
                f"{n}'s {p:g}" if p else f"none in {n}'s"
                for (n, *_), p in zip(found, penalties, strict=True))
                + f", on {invalid} of the group's step rows{here}")
        why = f" Why: {'; '.join(reasons)}." if reasons else ""
        return f"Episode-level values differ: {found[0][3]}; {found[1][3]}.{why}"


def explain_disagreements(result: Comparison, a: str, b: str,
                          diff: pd.DataFrame | None = None) -> pd.DataFrame:
    """Why ``a`` and ``b`` disagree in sign at each step of ``diff`` (default:
    :func:`sign_disagreements` of ``result``), rows as ``diff``'s: ``decided by`` — the
    term deciding each side's sign (the part with the largest share in the direction of its
    advantage, ``"g2po · A^EC"``; an estimator without parts decides by itself), as
    ``"<a's> vs <b's>"``; ``why`` — each side in words and numbers ("g2po > 0 (+3.89): the
    edge term A^EC +2.96 — this transition's TD error is in the group's top 5 % — outweighs
    the episode term A^EP −0.85 of a truncated rollout …"); ``episode`` — where their
    episode-level values (GRPO's, G2PO's A^EP …) differ, each rebuilt from the group's rewards
    with its normalisation and penalty, and why ("" where they agree or are not both there).
    ``result`` holds one group."""
    if diff is None:
        diff = sign_disagreements(result.table, a, b, result.parts)
    position = {(str(tr), int(t)): i for i, (tr, t) in
                enumerate(zip(result.table["traj_id"].astype(str), result.table["t"],
                              strict=True))}
    group = _Group(result, (a, b))
    rows = []
    for tr, t in zip(diff["traj_id"].astype(str), diff["t"], strict=True):
        i = position[(tr, int(t))]
        (term_a, why_a), (term_b, why_b) = (group.sign_sentence(n, i) for n in (a, b))
        rows.append((f"{term_a} vs {term_b}", f"{why_a}. {why_b}.",
                     group.episode_comparison(a, b, i)))
    return pd.DataFrame(rows, columns=["decided by", "why", "episode"], index=diff.index)


def disagreement_counts(explained: pd.DataFrame) -> pd.Series:
    """How many disagreements each pair of deciding terms explains, most first (ties by
    name): the summary above the list."""
    counts = explained["decided by"].value_counts()
    return counts.iloc[np.lexsort((counts.index.to_numpy(dtype=str), -counts.to_numpy()))]
