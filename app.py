"""Runlens: the router. The shared chrome (ui/shell.py: database, demo banner, filters), then the chosen page."""

from __future__ import annotations

import streamlit as st

from ui.shell import render_shell

st.set_page_config(page_title="Runlens", page_icon=":material/query_stats:", layout="wide")

# Sections for the sidebar; every page file is listed once (tests/test_pages.py reads this list).
PAGES = {
    "Results": [
        st.Page("pages/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:", url_path="leaderboard",
                default=True),
        st.Page("pages/progress.py", title="Progress", icon=":material/trending_up:", url_path="progress"),
        st.Page("pages/tmf.py", title="Tech-Market-Fit", icon=":material/paid:", url_path="tmf"),
    ],
    "Analysis": [
        st.Page("pages/errors.py", title="Errors", icon=":material/bug_report:", url_path="errors"),
        st.Page("pages/drilldown.py", title="Drilldown", icon=":material/manage_search:", url_path="drilldown"),
        st.Page("pages/diff.py", title="Version diff", icon=":material/compare_arrows:", url_path="diff"),
        st.Page("pages/gem.py", title="GEM-Bench", icon=":material/campaign:", url_path="gem"),
    ],
    "Data": [
        st.Page("pages/sql.py", title="SQL", icon=":material/terminal:", url_path="sql"),
        st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
    ],
}


def main() -> None:
    """Route to the chosen page after drawing the shared chrome."""
    nav = st.navigation(PAGES)
    render_shell()
    nav.run()


main()
