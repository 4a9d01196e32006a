from app.safe import escape_html, escape_markdown, one_line, truncate
from tests.app.builders import XSS_IMG, XSS_MD, XSS_SCRIPT


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
    assert joined == "\\!\\[i\\]\\(https\\:/evil\\.example\\)"
