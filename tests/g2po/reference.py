"""Loop-by-loop transcriptions, written for reading, not speed.

Two kinds: transcriptions of docs/estimators.md (``g2po``, ``grpo``, ``rloo``,
``value_iteration``, ``graph_gae``, ``graphhca``), and transcriptions of the originals' published
formulas, fed the way their trainers feed them (one row per agent step, trajectory by trajectory,
each in step order, ``uid`` = group, ``traj_uid`` = trajectory, ``anchor_obs`` = state key):
``g2po_original`` (Nala-YN/G2PO ``g2po/core_g2po.py``), ``gigpo_original`` (verl-agent
``gigpo/core_gigpo.py`` with its ``ray_trainer.py``), ``graphgpo_original`` (verl-agent
``recipe/GraphGPO/core_graph.py`` with ``graphgpo_ray_trainer.py``), ``hgpo_original`` (verl-agent
``recipe/hgpo/core_hgpo.py`` with ``hgpo_ray_trainer.py``). All in float64.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from difflib import SequenceMatcher
from fractions import Fraction

import numpy as np
import pandas as pd

EPS = 1e-6


def norm(values: list[float], mode: str, singleton: str = "zero") -> list[float]:
    if len(values) == 1:
        if singleton == "zero":
            return [0.0]
        return [values[0] / (1 + EPS)] if mode == "mean_std_norm" else [values[0]]
    mean = sum(values) / len(values)
    if mode == "mean_norm":
        return [v - mean for v in values]
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return [(v - mean) / (std + EPS) for v in values]


def _groups(steps: pd.DataFrame):
    for _, group in steps.groupby("group_id", sort=False):
        trajs = {}
        for traj_id, traj in group.groupby("traj_id", sort=False):
            trajs[traj_id] = traj.sort_values("t")
        yield trajs


def g2po(steps, gamma=0.95, w=1.0, mode="mean_std_norm", penalty=0.1, success_reward=10.0,
         terminal="binary"):
    out = {}
    for trajs in _groups(steps):
        occurrences = defaultdict(list)  # state -> step values
        for traj in trajs.values():
            T = len(traj)
            for t, row in enumerate(traj.itertuples()):
                occurrences[row.state_key].append(gamma ** (T - t) * row.episode_reward)
        V = {k: sum(v) / len(v) for k, v in occurrences.items()}
        rows = []  # (index, state, next value, invalid, R)
        for traj in trajs.values():
            items = list(traj.itertuples())
            for t, row in enumerate(items):
                if t + 1 < len(items):
                    nxt = V[items[t + 1].state_key]
                elif terminal == "reward":
                    nxt = row.episode_reward
                else:
                    nxt = success_reward if row.episode_reward == success_reward else 0.0
                rows.append((row.Index, row.state_key, nxt, 0.0 if row.is_action_valid else 1.0,
                             row.episode_reward))
        nc = {}
        for state in V:
            mine = [r for r in rows if r[1] == state]
            for r, a in zip(mine, norm([r[2] - penalty * r[3] for r in mine], mode)):
                nc[r[0]] = a
        ec = dict(zip([r[0] for r in rows], norm([r[2] - V[r[1]] for r in rows], mode)))
        ep = dict(zip([r[0] for r in rows],
                      norm([r[4] - penalty * r[3] for r in rows], mode, singleton="unit")))
        for r in rows:
            out[r[0]] = {"adv": ep[r[0]] + w * (nc[r[0]] + ec[r[0]]), "adv_nc": nc[r[0]],
                         "adv_ec": ec[r[0]], "adv_ep": ep[r[0]], "node_value": V[r[1]],
                         "next_value": r[2], "td_error": r[2] - V[r[1]]}
    return pd.DataFrame.from_dict(out, orient="index").loc[steps.index]


def grpo(steps, mode="mean_std_norm"):
    out = {}
    for trajs in _groups(steps):
        ids = list(trajs)
        adv = norm([trajs[i]["episode_reward"].iloc[0] for i in ids], mode)
        for i, a in zip(ids, adv):
            for idx in trajs[i].index:
                out[idx] = a
    return pd.Series(out).loc[steps.index]


def rloo(steps):
    out = {}
    for trajs in _groups(steps):
        rewards = {i: trajs[i]["episode_reward"].iloc[0] for i in trajs}
        for i in trajs:
            others = [r for j, r in rewards.items() if j != i]
            a = rewards[i] - sum(others) / len(others) if others else 0.0
            for idx in trajs[i].index:
                out[idx] = a
    return pd.Series(out).loc[steps.index]


def value_iteration(steps, gamma=0.95, mode="mean_std_norm", success_reward=10.0,
                    terminal="binary", sweeps=5000):
    out = {}
    for trajs in _groups(steps):
        edges = defaultdict(list)  # state -> list of ("state", s') or ("terminal", value)
        rows = []
        for traj in trajs.values():
            items = list(traj.itertuples())
            for t, row in enumerate(items):
                if t + 1 < len(items):
                    target = ("state", items[t + 1].state_key)
                else:
                    value = (row.episode_reward if terminal == "reward" else
                             (success_reward if row.episode_reward == success_reward else 0.0))
                    target = ("terminal", value)
                edges[row.state_key].append(target)
                rows.append((row.Index, row.state_key, target))
        V = {s: 0.0 for s in edges}
        for _ in range(sweeps):  # plain value iteration until the fixed point
            V = {s: sum(gamma * (V[x] if kind == "state" else x) for kind, x in targets)
                 / len(targets) for s, targets in edges.items()}
        td = [gamma * (V[x] if kind == "state" else x) - V[s] for _, s, (kind, x) in rows]
        for r, a, d in zip(rows, norm(td, mode), td):
            out[r[0]] = {"adv": a, "node_value": V[r[1]], "td_error": d}
    return pd.DataFrame.from_dict(out, orient="index").loc[steps.index]


def graph_gae(steps, gamma=0.95, lam=0.95, mode="mean_std_norm", success_reward=10.0,
              terminal="binary"):
    vi = value_iteration(steps, gamma=gamma, success_reward=success_reward, terminal=terminal)
    out = {}
    for trajs in _groups(steps):
        rows = []
        for traj in trajs.values():
            acc, back = 0.0, []
            for idx in reversed(list(traj.index)):
                acc = vi.loc[idx, "td_error"] + gamma * lam * acc
                back.append((idx, acc))
            rows.extend(reversed(back))
        for (idx, g), a in zip(rows, norm([g for _, g in rows], mode)):
            out[idx] = {"adv": a, "gae": g}
    return pd.DataFrame.from_dict(out, orient="index").loc[steps.index]


def graphhca(steps, gamma=0.95, w=1.0, mode="mean_std_norm", success_reward=10.0,
             floor=1e-3, sweeps=5000):
    p = value_iteration(steps.assign(episode_reward=(steps["episode_reward"] == success_reward)
                                     .astype(float)),
                        gamma=gamma, success_reward=1.0, sweeps=sweeps)
    traj_adv = grpo(steps, mode)
    out = {}
    for trajs in _groups(steps):
        rows = []
        for traj in trajs.values():
            idx = list(traj.index)
            for t, i in enumerate(idx):
                here = p.loc[i, "node_value"]
                if t + 1 < len(idx):
                    nxt = p.loc[idx[t + 1], "node_value"]
                else:
                    nxt = 1.0 if traj["episode_reward"].iloc[0] == success_reward else 0.0
                credit = (math.log((nxt + floor) / (1 + floor))
                          - math.log((here + floor) / (1 + floor)))
                rows.append((i, credit))
        for (i, c), a in zip(rows, norm([c for _, c in rows], mode)):
            out[i] = {"adv": traj_adv[i] + w * a, "credit": c}
    return pd.DataFrame.from_dict(out, orient="index").loc[steps.index]


# ------------------------------------------------------------------------------------------ #
# The originals, as their trainers feed them.                                                 #
# ------------------------------------------------------------------------------------------ #

def trainer_batch(steps, penalty=0.1, step_rewards=False):
    """The rows as verl-agent's trainers hold them: trajectory-major, each in step order, with
    the environment reward (R on the last step), and the token-level score after
    ``apply_invalid_action_penalty`` (R - p·invalid on every step row)."""
    rows = steps.sort_values(["group_id", "traj_id", "t"])
    last = rows.groupby(["group_id", "traj_id"])["t"].transform("max") == rows["t"]
    invalid = (~rows["is_action_valid"].astype(bool)).astype(float)
    return {
        "row": list(rows.index),
        "uid": rows["group_id"].to_numpy(),
        "traj_uid": (rows["group_id"] + "\x00" + rows["traj_id"]).to_numpy(),
        "anchor_obs": rows["state_key"].to_numpy(dtype=object),
        "episode_rewards": rows["episode_reward"].to_numpy(dtype=float),
        "rewards": (rows["step_reward"].to_numpy(dtype=float) if step_rewards
                    else np.where(last, rows["episode_reward"], 0.0)),
        "invalid": invalid.to_numpy(),
        "score": (rows["episode_reward"] - penalty * invalid).to_numpy(dtype=float),
    }


def _std(values):
    """torch.std: unbiased; NaN for a single value."""
    if len(values) < 2:
        return float("nan")
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _episode_norm(b, remove_std, eps=1e-6):
    """verl-agent's episode_norm_reward with compute_mean_std_cross_steps=True."""
    by = defaultdict(list)
    for i, u in enumerate(b["uid"]):
        by[u].append(b["score"][i])
    out = []
    for i, u in enumerate(b["uid"]):
        vals = by[u]
        mean, std = (0.0, 1.0) if len(vals) == 1 else (sum(vals) / len(vals), _std(vals))
        x = b["score"][i]
        out.append(x - mean if remove_std else (x - mean) / (std + eps))
    return out


def _step_norm(values, step_group, remove_std, eps=1e-6):
    """verl-agent's step_norm_reward: a singleton has mean = itself, std 1 (so 0)."""
    by = defaultdict(list)
    for v, g in zip(values, step_group):
        by[g].append(v)
    out = []
    for v, g in zip(values, step_group):
        vals = by[g]
        mean = sum(vals) / len(vals)
        std = 1.0 if len(vals) == 1 else _std(vals)
        out.append(v - mean if remove_std else (v - mean) / (std + eps))
    return out


def _step_groups(b, similarity=None):
    """build_step_group: exact anchors, or are_similar clusters in row order."""
    groups = []
    clusters = defaultdict(list)  # uid -> [rep, ...]
    for u, obs in zip(b["uid"], b["anchor_obs"]):
        if similarity is None:
            groups.append((u, obs))
            continue
        for k, rep in enumerate(clusters[u]):
            if SequenceMatcher(None, obs, rep).ratio() >= similarity:
                groups.append((u, k))
                break
        else:
            clusters[u].append(obs)
            groups.append((u, len(clusters[u]) - 1))
    return groups


def _out(b, values):
    return pd.Series(dict(zip(b["row"], values)))


def _penalised_returns(b, gamma, penalty):
    """verl-agent's compute_step_discounted_returns per trajectory, then the trainer's
    invalid-action penalty (returns -= p·invalid)."""
    returns = [0.0] * len(b["row"])
    for tu in dict.fromkeys(b["traj_uid"]):
        idx = [i for i, x in enumerate(b["traj_uid"]) if x == tu]
        running = 0.0
        for i in reversed(idx):
            running = b["rewards"][i] + gamma * running
            returns[i] = running
    return [r - penalty * v for r, v in zip(returns, b["invalid"])]


def gigpo_original(steps, gamma=0.95, omega=1.0, mode="mean_norm", penalty=0.1,
                   similarity=None, step_rewards=False):
    """verl-agent: compute_step_discounted_returns per trajectory, then
    apply_invalid_action_penalty (step_rewards -= p·invalid), then
    compute_gigpo_outcome_advantage."""
    b = trainer_batch(steps, penalty, step_rewards)
    step_rewards = _penalised_returns(b, gamma, penalty)
    remove_std = mode == "mean_norm"
    episode = _episode_norm(b, remove_std)
    step = _step_norm(step_rewards, _step_groups(b, similarity), remove_std)
    return _out(b, [e + omega * s for e, s in zip(episode, step)])


SUCCESS, FAILURE = ("<terminal>", "success"), ("<terminal>", "failure")


def graphgpo_original(steps, gamma=0.1, omega_e=1.0, omega_s=1.0, penalty=0.1,
                      mode="mean_std_norm", normalize_distance=False, success_reward=10.0):
    """core_graph: ComplexGraph.from_data (edges anchor_obs -> next_obs, next_obs of the last
    step 'success' or 'failure'), all_to_target_shortest_paths (Dijkstra on the reversed graph,
    unreachable: largest finite distance + 1), compute_graph_path_returns (10·γ^d), then the
    trainer's penalty, then compute_graphgpo_outcome_advantage."""
    b = trainer_batch(steps, penalty)
    n = len(b["row"])
    next_obs = [None] * n
    for i in range(n):
        if i + 1 < n and b["traj_uid"][i + 1] == b["traj_uid"][i]:
            next_obs[i] = b["anchor_obs"][i + 1]
        else:
            next_obs[i] = SUCCESS if b["episode_rewards"][i] == success_reward else FAILURE
    dist_by_uid = {}
    for u in dict.fromkeys(b["uid"]):
        idx = [i for i in range(n) if b["uid"][i] == u]
        nodes = {b["anchor_obs"][i] for i in idx} | {next_obs[i] for i in idx}
        reverse = defaultdict(list)
        for i in idx:
            reverse[next_obs[i]].append(b["anchor_obs"][i])
        dist = {x: math.inf for x in nodes}
        dist[SUCCESS] = 0
        queue = deque([SUCCESS])  # unit weights: Dijkstra is a breadth-first search
        while queue:
            x = queue.popleft()
            for y in reverse[x]:
                if dist[y] == math.inf:
                    dist[y] = dist[x] + 1
                    queue.append(y)
        far = max((d for d in dist.values() if d != math.inf), default=0)
        dist_by_uid[u] = {x: (far + 1 if d == math.inf else d) for x, d in dist.items()}
    returns = []
    for i in range(n):
        d = dist_by_uid[b["uid"][i]]
        if normalize_distance:
            g = success_reward * gamma ** (d[next_obs[i]] - d[b["anchor_obs"][i]] + 1)
        else:
            g = success_reward * gamma ** d[next_obs[i]]
        returns.append(g - penalty * b["invalid"][i])
    remove_std = mode == "mean_norm"
    step = _step_norm(returns, _step_groups(b), remove_std)
    episode = _episode_norm(b, remove_std)
    return _out(b, [omega_s * s + omega_e * e for s, e in zip(step, episode)])


def _exact_deviations(values):
    """x - mean(x), each in exact rational arithmetic, and the sum of their squares; a
    deviation within the float mean's rounding (2·eps per member times the largest |x|) is
    taken as 0: that value is the mean (0.1, 0.3, 0.5 are not exactly tied in binary, yet
    their float mean is 0.3 exactly)."""
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / len(exact)
    dev = [v - mean for v in exact]
    bound = Fraction(2 * 2.0**-52) * len(values) * max(abs(v) for v in exact)
    return [0 if abs(d) <= bound else d for d in dev], sum(d * d for d in dev)


def _torch_deviations(values):
    """x - mean(x) with the original's arithmetic: torch's float64 ``Tensor.mean`` (its own
    summation order), and the sum of their squares left to right, as ``Tensor.std`` takes it."""
    import torch

    r = torch.tensor(values, dtype=torch.float64)
    dev = (r - r.mean()).tolist()
    squares = 0.0
    for d in dev:
        squares += d * d
    return dev, squares


def hgpo_original(steps, gamma=0.95, penalty=0.1, history_length=2, length_weight_alpha=1.0,
                  base_group=False, mode="mean_std_norm", step_rewards=False, eps=1e-6,
                  zero_within_rounding=False):
    """verl-agent's HGPO recipe as its trainer runs it: ``compute_step_discounted_returns``
    (per trajectory, R on the last step or the logged step rewards), then
    ``apply_invalid_action_penalty`` (each step's return minus p·invalid, and the score
    R - p·invalid), then ``hgpo_advantage_estimate``: per uid, the trajectories in sorted id
    order, each its anchor observations in batch order; ``clusters[(k, last k obs)]`` for
    k = 1 … min(H + 1, t + 1); clusters of one member skipped; a = (r - mean) / (population std
    + eps), or r - mean; with ``base_group`` the item (0, episode advantage) first
    (``trajectory_advantages``: mean and unbiased std over the uid's step rows, a single row
    mean 0 and std 1); ``aggregate_items``: the items with a != 0, w = (k+1)^alpha /
    (sum of those + eps), the sum of w·a, or 0.

    Deviations from a mean are the original's in float64: torch's mean of the members in their
    order (a float mean of equal returns off by an ulp keeps a noise item of ~1e-11 that takes
    its weight from the others, as in the original). ``zero_within_rounding``: deviations in
    exact arithmetic instead, one within the float mean's rounding taken as 0, so "a != 0" is
    decided as the formula means it (docs/estimators.md)."""
    deviations = _exact_deviations if zero_within_rounding else _torch_deviations
    b = trainer_batch(steps, penalty, step_rewards)
    n = len(b["row"])
    returns = _penalised_returns(b, gamma, penalty)

    base = [0.0] * n
    if base_group:
        for u in dict.fromkeys(b["uid"]):
            idx = [i for i in range(n) if b["uid"][i] == u]
            if len(idx) == 1:
                base[idx[0]] = b["score"][idx[0]]  # mean 0, std 1
                if mode == "mean_std_norm":
                    base[idx[0]] /= 1 + eps
                continue
            dev, squares = deviations([b["score"][i] for i in idx])
            std = math.sqrt(float(squares / (len(idx) - 1)))
            for i, d in zip(idx, dev):
                base[i] = float(d) if mode == "mean_norm" else float(d) / (std + eps)

    adv = [0.0] * n
    max_k = history_length + 1
    for u in dict.fromkeys(b["uid"]):
        group = [i for i in range(n) if b["uid"][i] == u]
        trajs = defaultdict(list)
        for i in group:
            trajs[b["traj_uid"][i]].append(i)
        trajs = [trajs[t] for t in sorted(trajs)]  # np.unique: sorted trajectory ids
        clusters = defaultdict(list)
        for rows in trajs:
            obs = [b["anchor_obs"][i] for i in rows]
            for si in range(len(rows)):
                for k in range(1, min(max_k, si + 1) + 1):
                    clusters[(k, tuple(obs[si - k + 1:si + 1]))].append(rows[si])
        items = defaultdict(list)
        for (k, _), members in clusters.items():
            if len(members) <= 1:
                continue
            dev, squares = deviations([returns[i] for i in members])
            std = math.sqrt(float(squares / len(members)))  # unbiased=False
            for i, d in zip(members, dev):
                a = d if mode == "mean_norm" else float(d) / (std + eps)
                items[i].append((k, a))
        for rows in trajs:
            for i in rows:
                mine = ([(0, base[i])] if base_group else []) + items[i]
                valid = [(k, a) for k, a in mine if a != 0]
                if not valid:
                    continue
                raw = [(k + 1) ** length_weight_alpha for k, _ in valid]
                total = sum(raw) + eps
                adv[i] = sum(w / total * float(a) for w, (_, a) in zip(raw, valid))
    return _out(b, adv)


def g2po_original(steps, w=1.0, mode="mean_std_norm", penalty=0.1, success_reward=10.0):
    """Nala-YN/G2PO core_g2po: compute_group_aggregation_values (γ 0.95 fixed), then
    compute_g2po_outcome_advantage; NaN where a prompt has a single step row."""
    b = trainer_batch(steps, penalty)
    n = len(b["row"])
    group_idx, next_group_idx, group_score = [0] * n, [0] * n, {}
    for u in dict.fromkeys(b["uid"]):
        idx = [i for i in range(n) if b["uid"][i] == u]
        obs2idx, members, total = {}, defaultdict(list), defaultdict(float)
        trajs = defaultdict(list)
        for i in idx:
            trajs[b["traj_uid"][i]].append(i)
        for rows in trajs.values():
            for i in rows:
                g = obs2idx.setdefault(b["anchor_obs"][i], len(obs2idx))
                group_idx[i] = (u, g)
                members[g].append(i)
        for rows in trajs.values():
            for k, i in enumerate(rows):
                if k + 1 < len(rows):
                    next_group_idx[i] = group_idx[rows[k + 1]]
                else:
                    next_group_idx[i] = (u, -1 if b["episode_rewards"][i] == success_reward
                                         else -2)
                total[group_idx[i]] += 0.95 ** (len(rows) - k) * b["episode_rewards"][i]
        for g, rows in members.items():
            group_score[(u, g)] = total[(u, g)] / len(rows)
        group_score[(u, -2)], group_score[(u, -1)] = 0.0, success_reward
    eps = 1e-6
    step = [0.0] * n
    for u in dict.fromkeys(b["uid"]):
        idx = [i for i in range(n) if b["uid"][i] == u]
        by_group = defaultdict(list)
        for i in idx:
            by_group[group_idx[i]].append(i)
        for rows in by_group.values():
            vals = [group_score[next_group_idx[i]] - b["invalid"][i] * penalty for i in rows]
            if len(vals) > 1:
                mean, std = sum(vals) / len(vals), _std(vals)
                for i, v in zip(rows, vals):
                    step[i] = (v - mean) / (std + eps) if mode == "mean_std_norm" else v - mean
        gains = [group_score[next_group_idx[i]] - group_score[group_idx[i]] for i in idx]
        mean, std = sum(gains) / len(gains), _std(gains)
        for i, v in zip(idx, gains):
            step[i] += (v - mean) / (std + eps) if mode == "mean_std_norm" else v - mean
    episode = _episode_norm(b, mode == "mean_norm")
    return _out(b, [e + w * s for e, s in zip(episode, step)])


def random_steps(seed: int, *, max_groups: int = 3, max_traj: int = 8, max_len: int = 8,
                 n_states: int = 5, long_keys: bool = False) -> pd.DataFrame:
    """A random step table as a trainer logs it: groups of rollouts over a few shared states
    (self-loops and cycles happen), rewards 0 or 10, about 20 % invalid actions. With
    ``long_keys`` the keys are ~250-character observations differing in a few words, so that
    difflib's autojunk and the similarity threshold matter."""
    rng = np.random.default_rng(seed)
    words = ["apple", "mug", "desk", "shelf", "lamp", "key", "box", "book"]
    rows = []
    for g in range(rng.integers(1, max_groups + 1)):
        for i in range(rng.integers(1, max_traj + 1)):
            reward = float(rng.choice([0.0, 10.0]))
            for t in range(rng.integers(1, max_len + 1)):
                s = int(rng.integers(n_states))
                if long_keys:
                    picked = " ".join(rng.choice(words, size=2))
                    key = (f"You are in room {s}. " + "You see a cabinet, a drawer. " * 8
                           + f"On the table: {picked}.")
                else:
                    key = f"s{s}"
                rows.append({"group_id": f"g{g}", "traj_id": f"r{i}", "t": t, "state_key": key,
                             "action": f"a{rng.integers(3)}", "episode_reward": reward,
                             "is_action_valid": bool(rng.random() > 0.2)})
    return pd.DataFrame(rows)
