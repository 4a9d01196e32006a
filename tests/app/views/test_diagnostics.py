import html as html_lib
import re

from app.views.diagnostics import PAIRS_SHOWN, diff_html
from tests.app.builders import XSS_IMG, XSS_SCRIPT, app_test, texts


def test_diagnostics_show_merge_numbers_duplicates_and_variances(runs_root):
    at = app_test("diagnostics", ["--log", str(runs_root)])
    assert not at.exception
    labels = {m.label for m in at.metric}
    assert {"State nodes", "Singleton nodes", "Merge rate", "Most visits"} <= labels
    assert len(at.get("plotly_chart")) == 1
    at.slider(key="diag_threshold").set_value(0.5).run()
    assert not at.exception
    assert "pair(s), most similar first" in texts(at)  # synthetic keys share long padding
    pairs = next(d.value for d in at.dataframe if "similarity" in d.value.columns)
    drawn = at.get("html")
    assert len(drawn) == min(PAIRS_SHOWN, len(pairs))
    assert not at.get("progress")  # the bar is gone once the answer is drawn
    first = pairs.iloc[0]
    assert not first["key_a"].endswith("…") and first["key_a"] != first["key_b"]  # whole keys
    at.checkbox(key="diag_whole_step").check().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2
    assert "share with variance 0" in texts(at)


def test_the_differing_characters_are_marked_and_log_text_is_escaped():
    html = diff_html("room 12 <b>door</b>", "room 13 <b>door</b>")
    assert html.count("<span") == 2  # the 2 in A, the 3 in B
    assert ">2</span>" in html and ">3</span>" in html
    assert "&lt;b&gt;door&lt;/b&gt;" in html and "<b>door" not in html
    hostile = diff_html(XSS_SCRIPT + " a", XSS_IMG + " a")
    assert "<script" not in hostile and "<img" not in hostile
    ours = re.sub(r"</?(div|span|b)( style=\"[^\"]*\")?>", "", hostile)
    assert "<" not in ours  # every other tag was escaped text
    assert html_lib.unescape(ours) == f"A {XSS_SCRIPT} aB {XSS_IMG} a"
    long = diff_html("x" * 500 + "A" + "y" * 500, "x" * 500 + "B" + "y" * 500, context=20)
    assert "…" in long and len(long) < 1200


def test_hostile_keys_are_drawn_as_text(hostile_run):
    at = app_test("diagnostics", ["--log", str(hostile_run)])
    at.slider(key="diag_threshold").set_value(0.5).run()
    assert not at.exception
    drawn = [h.proto.body for h in at.get("html")]
    assert drawn and any("&lt;" in body for body in drawn)
    assert not any(tag in body for body in drawn for tag in ("<script", "<img", "<a "))
