"""Runlens: the entry script. The app's pages (``PAGES``: files in views/, each with its URL, title and icon, in
its sidebar section), then the router (ui/shell.py: st.navigation over ``PAGES``, the shared chrome: database,
demo banner, filters) runs the chosen page.

A new page: its file in views/ and ONE ``st.Page(...)`` line here (tests/test_pages.py reads this list).
"""

from __future__ import annotations

import streamlit as st

from ui.shell import run_app

# Paths are relative to this file. The page folder is not named ``pages/``: beside a folder of that name Streamlit
# would run each page file alone (its legacy multipage mode) until st.navigation had run once in the process.
PAGES = {
    "Results": [
        # the leaderboard at /leaderboard, first: a link to views/leaderboard.py (the menu's, the Upload page's)
        # is to the first page of that file, and carries its URL; a link to the root page had none ("?benchmark=x"),
        # so opened in a new tab it stayed on the page it was on
        st.Page("views/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:", url_path="leaderboard"),
        # the same page at the root URL, not listed twice in the sidebar
        st.Page("views/leaderboard.py", title="Leaderboard", url_path="home", default=True, visibility="hidden"),
        st.Page("views/progress.py", title="Progress", icon=":material/trending_up:", url_path="progress"),
        st.Page("views/tmf.py", title="Tech-Market-Fit", icon=":material/paid:", url_path="tmf"),
    ],
    "Analysis": [
        st.Page("views/errors.py", title="Errors", icon=":material/bug_report:", url_path="errors"),
        st.Page("views/drilldown.py", title="Drilldown", icon=":material/manage_search:", url_path="drilldown"),
        st.Page("views/search.py", title="Search", icon=":material/search:", url_path="search"),
        st.Page("views/clusters.py", title="Failure clusters", icon=":material/hub:", url_path="clusters"),
        st.Page("views/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
        st.Page("views/diff.py", title="Version diff", icon=":material/compare_arrows:", url_path="diff"),
        st.Page("views/gem.py", title="GEM-Bench", icon=":material/campaign:", url_path="gem"),
    ],
    "Data": [
        st.Page("views/sql.py", title="SQL", icon=":material/terminal:", url_path="sql"),
        st.Page("views/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
    ],
}

run_app(PAGES)
