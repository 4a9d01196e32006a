"""Names from logs never become markup, and opening a log from the app works, in a real
browser (Debian's headless Chromium, driven by Playwright, on the app served by ``streamlit
run`` on localhost): runs whose folder names are markdown and HTML payloads, each made the
active run on every page of the app, and a CSV with its own column names opened through the
upload and the mapping form.
"""

from __future__ import annotations

import pytest

from app.safe import JOINER
from app.shell import PAGES
from tests.app.browser import (
    ARTIFACTS,
    ROOT,
    canvas_ink,
    choose,
    graph_frame,
    serve_app,
    wait_idle,
    watch,
)
from tests.app.builders import MARKDOWN_CASES, group_steps, write_run

VIEWPORT = {"width": 1600, "height": 1100}
#: Folder names that are markup: a markdown image whose URL is split by the folder's slash
#: (``![i](https:/evil.example)`` once joined, which a browser fetches as
#: https://evil.example/), bold text, an HTML tag with a handler, Streamlit's colour directive
#: with emphasis and strike-through, a javascript: link.
IMAGE_FOLDER, IMAGE_RUN = "![i](https:", "evil.example)"
BOLD_RUN = "**bold** _em_"
TAG_RUN = "<img src=x onerror=window.__xss=7>"
STYLE_RUN = "**boldinj** :red[redinj] *eminj* ~~delinj~~"
#: Emphasis around a colour directive, with one-letter words: inside a page's own bold, a
#: label that let it through drew a coloured span (any coloured text is a hit: the app has none).
COLOUR_RUN = "**a** :red[b] *c*"
LINK_RUN = "[jsinj](javascript:window.__xss=8)"
HOSTILE_RUNS = (f"{IMAGE_FOLDER}/{IMAGE_RUN}", BOLD_RUN, TAG_RUN, STYLE_RUN, LINK_RUN,
                COLOUR_RUN)
UPLOAD_NAME = "[up](http:evil.example) **up**.csv"


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    write_run(root / IMAGE_FOLDER / IMAGE_RUN, 2, hostile_text=True, rows=200)
    write_run(root / BOLD_RUN, 1, seed=5, rows=200)
    write_run(root / TAG_RUN, 1, seed=7, hostile_text=True, rows=200)
    write_run(root / STYLE_RUN, 2, seed=9, rows=200)
    write_run(root / LINK_RUN, 2, seed=11, rows=200)
    write_run(root / COLOUR_RUN, 2, seed=13, hostile_text=True, rows=200)
    (root / "**noteinj** [n](http:evil.example).bin").write_bytes(b"\x00\x01not a log")
    return root


@pytest.fixture(scope="module")
def app_url(hostile_root):
    with serve_app(["--log", str(hostile_root)]) as url:
        yield url


#: Elements a name would make if it became markdown or HTML: emphasis, strike-through and
#: colour from ``**…**``, ``_…_``, ``~~…~~``, ``:red[…]`` (an element holding just the marked
#: word; any coloured text at all, and emphasis holding COLOUR_RUN's one-letter words), images
#: and links from ``![…](…)`` / ``[…](…)``, the ``<img>`` tag.
MARKUP = """() => {
    const hits = [];
    const words = /^(bold|em|up|noteinj|boldinj|redinj|eminj|delinj|jsinj)$/;
    for (const el of document.querySelectorAll('body *')) {
        const t = el.textContent.trim();  // "**bold**" in a bold headline is fine; "bold" not
        if (words.test(t)) hits.push(el.tagName + ':' + t);
    }
    for (const el of document.querySelectorAll('[data-testid="stMarkdownColoredText"]')) {
        hits.push('colour:' + el.textContent.trim());
    }
    for (const el of document.querySelectorAll('strong, b, em, i, del, s')) {
        const t = el.textContent.trim();
        if (/^[abc]$/.test(t)) hits.push(el.tagName + ':' + t);
    }
    for (const el of document.querySelectorAll('img')) {
        const src = el.getAttribute('src') || '';
        if (src === 'x' || src.includes('evil')) hits.push('img:' + src);
    }
    for (const el of document.querySelectorAll('a')) {
        const href = el.getAttribute('href') || '';
        if (href.includes('evil') || /^javascript:/i.test(href)) hits.push('a:' + href);
    }
    return {hits, xss: typeof window.__xss};
}"""


def assert_no_markup(page, seen, where: str) -> None:
    for frame in page.frames:
        try:
            found = frame.evaluate(MARKUP)
        except Exception:  # a frame navigating away: checked on the next page
            continue
        assert found == {"hits": [], "xss": "undefined"}, (where, frame.url, found)
    assert seen.dialogs == [], (where, seen.dialogs)
    assert seen.external() == [], (where, "requests left localhost", seen.external())
    assert not page.locator("[data-testid='stException']").count(), where


def active_run(page) -> str:
    """The run the sidebar's "Run to inspect" shows."""
    return page.get_by_role("combobox", name="Run to inspect").first.input_value()


def test_hostile_names_render_as_text_on_every_page(browser, app_url):
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    page.goto(app_url)
    graph_frame(page, timeout=60_000)
    wait_idle(page)
    body = page.inner_text("body").replace(JOINER, "")  # the joiner fmt puts in ":red"
    # each name shows, as the text it is (the run chooser, the headline)
    for name in HOSTILE_RUNS:
        assert name in body, name
    assert_no_markup(page, seen, "group")
    # each hostile run the one inspected, on every page: its headline, its groups, its
    # reports, the Run overview's Drill-in label, the pages across training steps
    for run in HOSTILE_RUNS:
        choose(page, "Run to inspect", option_text=run)
        wait_idle(page)
        assert active_run(page) == run
        for _module, title, _url in PAGES.values():
            page.get_by_role("link", name=title).first.click()
            page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)
            wait_idle(page)
            assert active_run(page) == run, (title, active_run(page))
            assert_no_markup(page, seen, f"{title}, {run}")
            if title == PAGES["overview"][1]:
                label = page.get_by_text("Training step of ", exact=False).first
                assert label.inner_text().replace(JOINER, "").strip() == \
                    f"Training step of {run}"
    page.screenshot(path=str(ARTIFACTS / "app-hostile-names.png"))
    # an upload with a hostile name: its entry, its success message and its report
    page.goto(app_url)
    wait_idle(page)
    csv = group_steps(rows=150).to_csv(index=False).encode()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": UPLOAD_NAME, "mimeType": "text/csv", "buffer": csv}])
    page.get_by_text("Opened upload:").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert f"upload: {UPLOAD_NAME}" in page.inner_text("body")
    assert_no_markup(page, seen, "upload")
    assert seen.console_errors == [], seen.console_errors
    page.close()


def test_a_csv_with_its_own_column_names_opens_through_the_mapping_form(browser, app_url):
    steps = group_steps(rows=200)
    custom = steps.rename(columns={"group_id": "task_uid", "traj_id": "rollout", "t": "turn",
                                   "state_key": "s_text", "action": "act",
                                   "episode_reward": "outcome_score"})
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    page.goto(app_url)
    graph_frame(page, timeout=60_000)
    wait_idle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": "custom.csv", "mimeType": "text/csv",
                "buffer": custom.to_csv(index=False).encode()}])
    page.get_by_text("has no column for").first.wait_for(timeout=60_000)
    wait_idle(page)
    form = page.locator("[data-testid='stForm']")
    # prefilled with the loaders' suggestions; the state column is the user's to choose
    assert form.get_by_role("combobox", name="t", exact=True).input_value() == "turn"
    assert form.get_by_role("combobox", name="group_id").input_value() == "task_uid"
    assert form.get_by_role("combobox", name="episode_reward").input_value() == \
        "outcome_score"
    assert form.get_by_role("combobox", name="state_key").input_value() == "(none)"
    box = form.get_by_role("combobox", name="state_key")
    box.click()
    box.press_sequentially("s_tex")  # the selectbox filters its options as one types
    page.get_by_role("option", name="s_text").first.click()
    assert box.input_value() == "s_text"
    page.screenshot(path=str(ARTIFACTS / "app-mapping-form.png"))
    form.get_by_role("button", name="Open with this mapping").click()
    page.get_by_text("Opened upload: custom.csv").first.wait_for(timeout=60_000)
    # chosen and shown at once: the graph of the uploaded table is drawn
    groups = sorted(steps["group_id"].astype(str).unique())
    frame = graph_frame(page, timeout=60_000,
                        condition=f"document.title.includes('group {groups[0]},')")
    assert frame.evaluate("window.g2po.nodes.length") > 1
    assert canvas_ink(frame) > 1_000
    assert page.get_by_role("combobox", name="Run to inspect").input_value() == \
        "upload: custom.csv"
    wait_idle(page)
    page.screenshot(path=str(ARTIFACTS / "app-mapped-upload.png"))
    assert seen.external() == [] and seen.console_errors == []
    page.close()


#: Elements markdown makes (emphasis, code, links, images, headings, lists, quotes, rules,
#: formulas, Streamlit's icons) that text through fmt must never become.
MADE = """(root) => [...root.querySelectorAll(
    'a, img, strong, b, em, i, del, s, code, h1, h2, h3, h4, h5, h6, li, blockquote, pre, hr, ' +
    '.katex, [data-testid="stIconMaterial"], [data-testid="stMarkdownColoredText"]')]
    .filter(e => !/^keyboard_arrow_(right|down)$/.test(e.textContent))  // the expander's own
    .map(e => e.tagName + ':' + e.textContent.slice(0, 40))"""


def test_text_through_fmt_shows_as_written_in_every_kind_of_element(browser):
    """Every text of MARKDOWN_CASES through app.safe.fmt in a markdown block, a caption, an
    info box, a checkbox, selectbox, radio option, metric and expander: nothing but the text."""
    with serve_app([], script=ROOT / "tests" / "app" / "markdown_page.py") as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        page.goto(url)
        page.get_by_text("done").first.wait_for(timeout=60_000)
        wait_idle(page)
        for i, text in enumerate(MARKDOWN_CASES):
            box = page.locator(f".st-key-case{i}")
            made = box.evaluate(MADE)
            assert made == [], (text, made)
            shown = box.inner_text().replace(JOINER, "")
            # as written: in the markdown, caption, info, the five labels and the metric value
            assert shown.count(" ".join(text.split()) if text.startswith(" ") else text) >= 8, \
                (text, shown)
        assert page.evaluate("typeof window.__xss") == "undefined"
        # an ordinary name is its own accessible name (no escapes read out)
        plain = MARKDOWN_CASES[-1]
        assert page.get_by_role("combobox", name=plain, exact=True).count() == 1
        assert seen.external() == [] and seen.dialogs == [], seen.external()
        page.screenshot(path=str(ARTIFACTS / "app-markdown-cases.png"), full_page=True)
        page.close()
