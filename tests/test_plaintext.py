"""analytics.plaintext: log text shown literally by Streamlit's Markdown and by Plotly (issue 18)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px

from analytics.figures import plain_figure
from analytics.plaintext import WORD_JOINER, md_plain, plotly_plain, plotly_unplain

PAYLOAD = '![x](http://127.0.0.1:9/b.png) <a href="http://e.x/">l</a> www.example.com a@b.co :red[x] $x$ **b**'


def test_md_plain_escapes_every_markdown_character() -> None:
    out = md_plain(PAYLOAD)
    assert "\\!\\[x\\]\\(" in out and "\\<a" in out and "\\*\\*b\\*\\*" in out and "\\:red\\[x\\]" in out
    assert "\\$x\\$" in out
    # what a reader sees: the same characters once the escapes and the invisible joiners are dropped
    assert out.replace("\\", "").replace(WORD_JOINER, "") == PAYLOAD


def test_md_plain_breaks_bare_urls_and_addresses_for_the_autolinker() -> None:
    out = md_plain("see http://a.b/c and www.example.com or a@b.co")
    assert f"http\\:{WORD_JOINER}\\/\\/" in out and f"www{WORD_JOINER}\\." in out and f"\\@{WORD_JOINER}b" in out
    assert "http://" not in out.replace("\\", "") and "www." not in out.replace("\\", "")


def test_md_plain_cuts_long_labels_and_takes_any_value() -> None:
    assert md_plain("abcdef", max_chars=4) == "abc…"
    assert md_plain(None) == "" and md_plain(12) == "12"


def test_plotly_plain_round_trips() -> None:
    text = '<a href="x">&amp;</a>'
    assert plotly_plain(text) == '&lt;a href="x"&gt;&amp;amp;&lt;/a&gt;'
    assert plotly_unplain(plotly_plain(text)) == text
    assert plotly_unplain([plotly_plain("<b>"), 3]) == ["<b>", 3]
    assert plotly_plain(3.5) == 3.5


def test_plain_figure_escapes_data_and_keeps_only_formatting_tags() -> None:
    df = pd.DataFrame({"agent": ['<a href="http://e.x/">A</a>', "B"], "v": [1.0, 2.0], "id": ["<r1>", "r2"]})
    fig = px.bar(df, x="agent", y="v", color="agent", custom_data=["id"], title="T <b>x</b> <a href='u'>l</a>")
    safe = plain_figure(fig)
    trace = safe.data[0]
    assert trace.x[0].startswith("&lt;a href=") and trace.name.startswith("&lt;a href=")
    assert list(trace.customdata[0]) == ["&lt;r1&gt;"]
    assert "<br>" in trace.hovertemplate and "<a " not in trace.hovertemplate
    assert safe.layout.title.text == "T <b>x</b> &lt;a href='u'&gt;l&lt;/a&gt;"
    assert safe.to_plotly_json()["data"][0]["y"] == fig.to_plotly_json()["data"][0]["y"]  # numbers untouched
    assert fig.data[0].x[0].startswith("<a href=")  # the original is not changed


def test_ids_read_back_from_a_chart_selection_are_the_originals() -> None:
    from types import SimpleNamespace

    from ui.common import selected_custom_data

    run_id = "<run & co>"
    escaped = plotly_plain(run_id)
    event = SimpleNamespace(selection=SimpleNamespace(points=[{"customdata": [escaped, "PE"]}, {"x": 1}]))
    assert selected_custom_data(event) == [[run_id, "PE"]]


def test_plain_figure_is_what_a_validated_figure_would_be() -> None:
    """plain_figure skips Plotly's second validation: the figure it gives is the one a validated rebuild gives."""
    import json

    import plotly.graph_objects as go
    import plotly.io

    df = pd.DataFrame({"agent": ["<i>A</i> & co", "B"], "v": [1.5, 2.0], "id": ["<r1>", "r2"]})
    figs = [
        px.bar(df, x="agent", y="v", color="agent", custom_data=["id"], title="T <b>x</b>"),
        px.scatter(df, x="v", y="v", text="agent", hover_data=["id"], log_x=True),
    ]
    for fig in figs:
        safe = plain_figure(fig)
        validated = go.Figure(safe.to_plotly_json())
        assert json.loads(plotly.io.to_json(safe)) == json.loads(plotly.io.to_json(validated))
