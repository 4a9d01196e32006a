"""A step's tokens and their colours: the scale that masked spans and outliers do not flatten,
the alignment of per-token values with tokens, and display tokens where the log has none."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.tokens import (
    CLIP_QUANTILE,
    Credit,
    TokenAlignmentError,
    available_colourings,
    colour_tokens,
    display_tokens,
    diverging_scale,
    step_tokens,
)


def one_step(n_policy: int = 200, n_masked: int = 30, gap: float = -50.0, seed: int = 0,
             outlier: float | None = None) -> pd.DataFrame:
    """One step of ``n_policy`` sampled tokens (log-probs between -3 and 0), then a masked span
    of ``n_masked`` tokens whose log-probs are a fake gap around ``gap`` nats."""
    rng = np.random.default_rng(seed)
    logp = -rng.uniform(0.0, 3.0, n_policy)
    if outlier is not None:
        logp[n_policy // 2] = outlier
    fake = gap + rng.normal(0.0, 5.0, n_masked)
    tokens = [f"w{i} " for i in range(n_policy + n_masked)]
    return pd.DataFrame({"traj_id": ["a"], "t": [0], "response": ["".join(tokens)],
                         "tokens": [tokens],
                         "token_logprobs": [np.r_[logp, fake].tolist()],
                         "loss_mask": [[True] * n_policy + [False] * n_masked]})


def test_a_masked_span_of_fake_fifty_nat_gaps_does_not_flatten_the_scale():
    rows = one_step()
    out = colour_tokens(rows, "logprob")
    policy = out.tokens[~out.tokens["masked"]]
    masked = out.tokens[out.tokens["masked"]]
    assert len(masked) == 30 and masked["colour"].isna().all()  # drawn as masked
    assert masked["value"].max() < -30 and not masked["clipped"].any()  # as the log says
    assert out.scale.lo > -3.0 and out.scale.hi <= 0.0  # the scale spans the policy's tokens
    assert out.scale.n_values == 200 and out.scale.n_left_out == 30
    colours = policy["colour"].to_numpy()
    assert colours.min() == 0.0 and colours.max() == 1.0 and colours.std() > 0.25
    # the same values with the span counted (no mask): the policy's tokens are squeezed
    naive = colour_tokens(rows.drop(columns="loss_mask"), "logprob")
    squeezed = naive.tokens["colour"].to_numpy()[:200]
    assert naive.scale.lo < -40 and squeezed.min() > 0.9


def test_an_outlier_is_clipped_and_counted_not_stretching_the_scale():
    out = colour_tokens(one_step(outlier=-40.0, n_masked=0), "logprob")
    tokens = out.tokens
    hit = tokens.iloc[100]
    assert hit["value"] == -40.0 and hit["clipped"] and hit["colour"] == 0.0
    assert out.scale.quantile == CLIP_QUANTILE and out.scale.n_clipped >= 1
    assert out.scale.lo > -3.0
    assert tokens.drop(index=100)["colour"].std() > 0.25


def test_the_advantage_is_one_value_per_step_on_a_diverging_scale_over_the_group():
    group = np.r_[np.linspace(-1.0, 1.0, 99), 25.0]  # one step far out
    rows = one_step(n_policy=5, n_masked=2)
    out = colour_tokens(rows, "advantage", Credit("g2po", np.array([0.5]), group))
    assert out.scale.kind == "diverging" and out.scale.lo == -out.scale.hi
    assert out.scale.hi == np.quantile(np.abs(group), CLIP_QUANTILE, method="higher") == 1.0
    assert out.scale.n_clipped == 1 and not out.per_token
    live = out.tokens[~out.tokens["masked"]]
    assert live["value"].eq(0.5).all()
    np.testing.assert_allclose(live["colour"], 0.5 / out.scale.hi)
    assert out.tokens["masked"].sum() == 2 and out.tokens["colour"].isna().sum() == 2
    zero = colour_tokens(rows, "advantage", Credit("g2po", np.array([0.0]), group))
    assert (zero.tokens.loc[~zero.tokens["masked"], "colour"] == 0.0).all()  # white at 0
    far = colour_tokens(rows, "advantage", Credit("g2po", np.array([25.0]), group))
    assert far.tokens.loc[~far.tokens["masked"], "clipped"].all()


def test_a_trajectory_colours_each_step_by_its_own_advantage():
    rows = pd.DataFrame({"traj_id": "a", "t": [0, 1, 2],
                         "response": ["go north", "open the door", "take key"]})
    credit = Credit("g2po", np.array([-1.0, 0.0, 2.0]))
    out = colour_tokens(rows, "advantage", credit)
    assert out.source == "split" and not out.per_token
    assert out.tokens.groupby("t")["value"].unique().map(list).tolist() == [[-1.0], [0.0],
                                                                           [2.0]]
    assert out.tokens["row"].tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2]
    assert "".join(out.tokens["text"]) == "go northopen the doortake key"


def test_per_token_values_that_do_not_line_up_are_an_error_naming_the_column():
    rows = one_step(n_policy=4, n_masked=0)
    rows.at[0, "token_logprobs"] = [-0.1, -0.2, -0.3]
    with pytest.raises(TokenAlignmentError, match=r"'token_logprobs' holds 3 values for the "
                                                  r"step's 4 tokens"):
        colour_tokens(rows, "logprob")
    rows = one_step(n_policy=4, n_masked=0)
    rows.at[0, "loss_mask"] = [True, False]
    with pytest.raises(TokenAlignmentError, match="'loss_mask' holds 2 values"):
        colour_tokens(rows, "advantage", Credit("g2po", np.array([1.0])))


def test_per_token_values_without_token_boundaries_cannot_be_placed():
    rows = one_step(n_policy=4, n_masked=0).drop(columns="tokens")
    assert available_colourings(rows) == ["advantage"]  # not offered
    with pytest.raises(TokenAlignmentError, match="no token boundaries"):
        colour_tokens(rows, "logprob")
    with pytest.raises(ValueError, match="needs a credit"):
        colour_tokens(rows, "advantage")
    assert colour_tokens(rows, "advantage", Credit("g", np.array([1.0]))).source == "split"


def test_colourings_offered_are_those_the_log_has():
    rows = one_step(n_policy=3, n_masked=1)
    assert available_colourings(rows) == ["advantage", "logprob", "mask"]
    assert available_colourings(rows, credit=False) == ["logprob", "mask"]
    mask = colour_tokens(rows, "mask")
    assert mask.tokens["masked"].tolist() == [False, False, False, True]
    assert mask.tokens["colour"].tolist()[:3] == [1.0, 1.0, 1.0]


def test_token_ids_stand_in_for_text_and_display_tokens_keep_every_character():
    assert step_tokens({"token_ids": np.array([17, 4]), "response": "x"}) == (["17 ", "4 "],
                                                                              "token_ids")
    assert step_tokens({"action": "look"}) == (["look"], "split")
    hostile = "<script>alert(1)</script>\n\n**bold** " + "a" * 3000 + " [x](javascript:y)"
    parts = display_tokens(hostile)
    assert "".join(parts) == hostile
    assert "a" * 3000 in parts and "\n\n" in parts and "<" in parts


def test_a_scale_without_values_still_draws():
    scale = diverging_scale(np.array([0.0, 0.0, np.nan]))
    assert (scale.lo, scale.hi, scale.n_values, scale.n_left_out) == (-1.0, 1.0, 2, 1)


def test_fewer_values_than_the_quantile_can_tell_are_never_clipped():
    few = np.r_[np.linspace(-1.0, 1.0, 13), 3.0]  # a small group: its largest is no outlier
    assert diverging_scale(few).hi == 3.0 and diverging_scale(few).n_clipped == 0
    many = diverging_scale(np.r_[np.linspace(-1.0, 1.0, 199), 3.0])  # 2 % of 200: 4
    assert 0.98 < many.hi < 1.0 and many.n_clipped == 3  # 3.0 and the two at |1.0|


def test_a_log_prob_is_clipped_below_only_and_an_entropy_above_only():
    rows = one_step(n_masked=0)
    rows["token_entropy"] = [(-np.asarray(rows.at[0, "token_logprobs"])).tolist()]
    logp = colour_tokens(rows, "logprob").scale
    ent = colour_tokens(rows, "entropy").scale
    values = np.asarray(rows.at[0, "token_logprobs"])
    assert logp.tail == "low" and logp.hi == values.max() and logp.lo > values.min()
    assert ent.tail == "high" and ent.lo == -values.max() and ent.hi < -values.min()
