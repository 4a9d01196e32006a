from app.safe import (
    Markdown,
    escape_html,
    escape_inline_markdown,
    escape_markdown,
    fmt,
    one_line,
    truncate,
)
from tests.app.browser import ROOT
from tests.app.builders import XSS_IMG, XSS_MD, XSS_SCRIPT
from tests.app.markdown_rule import RULE, app_files, check_source


def test_escape_html_leaves_no_tag_or_attribute_open():
    out = escape_html(XSS_SCRIPT + XSS_IMG)
    assert "<" not in out and ">" not in out and '"' not in out
    assert "&lt;script&gt;" in out


def test_escape_markdown_breaks_links_images_html_and_latex():
    out = escape_markdown(XSS_MD + " ![i](x) <b>")
    assert "](" not in out.replace("\\](", "").replace("\\]\\(", "")
    assert "\\[click\\]\\(javascript\\:" in out
    assert "\\$x^2\\$" in out and "\\*\\*bold\\*\\*" in out and "\\<b\\>" in out
    assert "\n" not in escape_markdown("a\nb")
    assert escape_markdown("a\nb", newlines=True) == "a  \nb"


def test_truncate_and_one_line():
    assert truncate("abc", 5) == "abc"
    assert truncate("a" * 10, 5) == "aaaa…"
    assert one_line(" a \n\t b ") == "a b"


def test_escape_markdown_breaks_streamlits_own_directives_and_folder_name_links():
    # Streamlit's colour, icon and emoji directives need bare colons
    out = escape_markdown(":red[alarm] :material/home: :smile:")
    assert ":" not in out.replace("\\:", "")
    # a markdown image split over a folder and a run name, once joined by the path
    joined = escape_markdown("![i](https:" + "/" + "evil.example)")
    assert joined == "\\!\\[i\\]\\(https\\:\u2060/evil\\.example\\)"


def test_fmt_escapes_the_values_and_keeps_the_template():
    name = "![pixinj](https://evil.example) **boldinj** :red[redinj] ~~delinj~~"
    out = fmt("Training step of **{}** · {:.0%} · {:,} rows", name, 0.25, 1234567)
    assert isinstance(out, Markdown)
    assert out == (f"Training step of **{escape_inline_markdown(name)}** · 25% · 1,234,567 "
                   "rows")
    assert escape_inline_markdown(name) == ("!\\[pixinj\\](https:\u2060//evil.example) "
                                            "\\*\\*boldinj\\*\\* :\u2060red\\[redinj\\] "
                                            "\\~\\~delinj\\~\\~")
    # a fmt result inside another is escaped once; numbers keep their sign (metric deltas)
    inner = fmt("**{}**", "_a_b_")
    assert fmt("{} and {}", inner, "*c*") == "**\\_a_b\\_** and \\*c\\*"
    assert fmt("{:+.0%} vs {}", -0.5, 3).startswith("-50%")
    assert fmt("{who} ran", who="[x](javascript:alert(1))") == \
        "\\[x\\](javascript:\u2060alert(1)) ran"


def test_inline_escaping_leaves_ordinary_names_alone_and_breaks_every_markup():
    for plain in ("group_id", "run (2)", "reward: 10", "0.8", "State-merge rate", "a.b.c",
                  "R&D", "50% of x", "100 steps!", "task #3", "x | y", "{a}", "12:30:45"):
        assert escape_inline_markdown(plain) == plain, plain
    cases = {
        "_em_": "\\_em\\_", "a*b*c": "a\\*b\\*c", "`code`": "\\`code\\`",
        ":smile:": ":\u2060smile:", ":material/home:": ":\u2060material/home:",
        ":100:": ":\u2060100:",
        "https://e.org": "https:\u2060//e.org", "www.e.org": "www\u2060.e.org",
        "a WWW.e.org": "a WWW\u2060.e.org", "me@e.org": "me@\u2060e.org",
        "&lt;b&gt;": "\\&lt;b\\&gt;",
        "<b>x</b>": "\\<b\\>x\\</b\\>", "$x$": "\\$x\\$", "# h": "\\# h",
        "- item": "\\- item", "+ item": "\\+ item", "12. item": "12\\. item",
        "3) item": "3\\) item", "> quote": "\\> quote", "=== x": "\\=== x",
        "| a | b |": "\\| a | b |", "    code block": "code block", "a\nb\r\nc": "a b c",
        "back\\slash": "back\\\\slash",
    }
    for text, escaped in cases.items():
        assert escape_inline_markdown(text) == escaped, (text, escape_inline_markdown(text))


#: Each a way the Drill-in label's bug could be written again; the rule must catch every one.
CAUGHT = {
    "the Drill-in label": 'st.selectbox(f"Training step of {active.name}", steps)',
    "a variable holding an f-string": 'label = f"Run {name}"\nst.caption(label)',
    "a parameter": "def show(name):\n    st.info(name)",
    "an attribute": "cols[0].button(fix.label, key='k')",
    "a help tooltip": 'st.button("Go", help=alarm.detail)',
    "a str.format": 'st.markdown("Run **{}**".format(name))',
    "%-formatting": 'st.warning("Run %s" % name)',
    "concatenation": 'st.expander("Report: " + name)',
    "a loop variable": "for ns in names:\n    st.subheader(ns)",
    "a metric value": "st.metric('Runs', stats['n'])",
    "a tab label": "st.tabs(['Steps', f'{name}'])",
    "radio options from a name": "def f(names):\n    st.radio('Pick', names)",
    "a format_func of pills": "st.pills('P', opts, format_func=lambda o: labels[o])",
    "a positional format_func": "st.radio('P', opts, 0, lambda o: f'{o}')",
    "fmt with an f-string template": 'st.caption(fmt(f"Run {name}"))',
    "fmt with a variable template": "st.caption(fmt(template, name))",
    "a spinner": 'with st.spinner(f"Reading {name}…"):\n    pass',
    "a progress text": 'bar.progress(0.5, text=f"{name}")',
    "a message title": 'st.error("x", title=name)',
    "HTML allowed": 'st.markdown("<b>x</b>", unsafe_allow_html=True)',
    "st.table": "st.table(frame)",
    "st.write": "st.write(name)",
    "escaping by hand": 'st.caption(escape_markdown(name))',
    "an element through a name": 'show = st.info if ok else st.warning\nshow(f"Run {name}")',
    "an element by getattr": 'getattr(st, level)(fmt("Run {}", name))',
    "a column's help tooltip": 'st.column_config.NumberColumn("reward", help=f"of {run}")',
    "a column's help, imported": 'column_config.TextColumn("run", help=opened.name)',
}
#: The same texts written the one way: no finding.
ALLOWED = [
    'st.selectbox(fmt("Training step of {}", active.name), steps)',
    'label = fmt("Run {}", name) if name else "No run"\nst.caption(label)',
    "def show(name):\n    st.info(fmt('{} holds no groups.', name))",
    "TABS = ('Steps', 'Node')\nst.tabs(list(TABS))",
    "st.radio('Pick', ['a', 'b'], format_func=lambda o: fmt('{}', o))",
    "st.metric('Rows', len(rows), fmt('{:+.0%}', change))",
    "import logging\nlogging.getLogger('app').error(f'{name} failed')",
    'st.caption("Plain text, written here.")',
    "def md(template, *values):\n    st.markdown(fmt(template, *values))",
    'show = st.info if ok else st.warning\nshow(fmt("Run {}", name))',
    'st.column_config.NumberColumn(v, format="percent", help=fmt("of {}", run))',
]


def test_the_rule_catches_every_way_of_building_text_outside_fmt():
    for what, source in CAUGHT.items():
        assert check_source(source), f"{what} slipped through: {source}"
    for source in ALLOWED:
        assert check_source(source) == [], source


def test_every_app_file_hands_streamlit_text_only_through_fmt():
    findings = [str(f) for path in app_files(ROOT) for f in
                check_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)),
                             ROOT)]
    assert len(list(app_files(ROOT))) > 20
    assert not findings, RULE + "\n" + "\n".join(findings)
