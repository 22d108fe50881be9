"""Links with stale or hand-edited filter parameters open with a notice, never an exception."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from analytics.catalog import Catalog
from tests.apptest import open_page
from ui.shell import start_benchmark, url_filters

CATALOG = Catalog(
    benchmarks=("ad-bench", "xbench"),
    agents={"ad-bench": ("o3", "Qwen3-8B"), "xbench": ("o3",)},
    date_min=dt.date(2025, 1, 15),
    date_max=dt.date(2026, 1, 15),
    n_runs=3,
    n_attempts=30,
    is_demo=False,
)


def test_a_valid_link_is_taken_as_it_is() -> None:
    params = {"benchmark": "xbench", "agents": "o3", "from": "2025-02-01", "to": "2025-12-31"}
    assert url_filters(params, CATALOG) == ("xbench", ["o3"], (dt.date(2025, 2, 1), dt.date(2025, 12, 31)), [])


def test_dates_past_the_newest_run_are_clamped_with_a_notice() -> None:
    _, _, dates, notices = url_filters({"from": "2025-06-01", "to": "2026-01-31"}, CATALOG)
    assert dates == (dt.date(2025, 6, 1), dt.date(2026, 1, 15))
    assert len(notices) == 1 and "narrowed" in notices[0]


def test_a_range_outside_the_data_or_malformed_shows_all_dates() -> None:
    for params in ({"from": "2027-01-01", "to": "2027-02-01"}, {"to": "31/01/2026"}, {"from": "2024-13-01"}):
        _, _, dates, notices = url_filters(params, CATALOG)
        assert dates == () and len(notices) == 1, params


def test_reversed_and_one_sided_ranges() -> None:
    assert url_filters({"from": "2025-12-01", "to": "2025-03-01"}, CATALOG)[2] == (
        dt.date(2025, 3, 1),
        dt.date(2025, 12, 1),
    )
    assert url_filters({"from": "2025-12-01"}, CATALOG)[2] == (dt.date(2025, 12, 1), dt.date(2026, 1, 15))


def test_unknown_benchmark_and_agents_are_replaced_or_dropped_with_notices() -> None:
    bench, agents, _, notices = url_filters({"benchmark": "gone", "agents": "o3,Nope"}, CATALOG)
    assert bench == "ad-bench" and agents == ["o3"]
    assert len(notices) == 2 and "'gone'" in notices[0] and "'Nope'" in notices[1]


@pytest.mark.parametrize(
    "params",
    [
        {"to": "2099-01-31"},
        {"from": "1999-01-01", "to": "not-a-date"},
        {"benchmark": "![x](http://127.0.0.1:9/beacon.png)", "agents": "[a](http://127.0.0.1:9)"},
    ],
)
def test_stale_links_open_every_page_with_a_notice(
    params: dict[str, str], fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, **params)
    notices = [w.value for w in at.warning if "link" in w.value or "dates" in w.value]
    assert notices, [w.value for w in at.warning]
    if "benchmark" in params:
        # names from the link are shown literally: every bracket and colon of the payload is escaped
        assert any("\\!\\[x\\]\\(http\\:" in n for n in notices), notices
        assert any("\\[a\\]\\(http\\:" in n for n in notices), notices


def test_back_to_an_earlier_url_restores_its_filters(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Filters come from the session on every rerun, except when the URL no longer holds what the sidebar last
    wrote there (the browser's Back or Forward): then the URL's filters are taken."""
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench")
    lo, hi = at.session_state["flt_dates"] or (None, None)
    assert lo is None  # all dates
    first_day = min(at.date_input[0].min, at.date_input[0].max)
    at.date_input[0].set_value((first_day, first_day)).run()
    assert at.query_params["from"] in (first_day.isoformat(), [first_day.isoformat()])
    for key in ("from", "to"):  # Back: the URL before the dates were set
        del at.query_params[key]
    at.run()
    assert not at.exception and not at.session_state["flt_dates"]
    assert at.session_state["flt_benchmark"] == "mini-bench"
    at.run()  # a plain rerun keeps the session's filters
    assert not at.session_state["flt_dates"] and "from" not in at.query_params


def test_page_settings_travel_in_the_link(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A few view settings beyond the filters: the leaderboard's breakdown, the diff's outcome basis and its
    regressions-only switch; an unknown value gives a notice and the default."""
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench", by="category")
    assert at.segmented_control(key="lb_breakdown").value == "category"
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench", by="bogus")
    assert at.segmented_control(key="lb_breakdown").value == "level"
    notices = [i.value.replace("\\", "") for i in at.info]  # plain text: Markdown escaped
    assert any("by 'bogus' is not one of level, category" in n for n in notices), notices
    at = open_page("views/diff.py", fixture_db, monkeypatch, benchmark="mini-bench", regressions_only="1")
    assert at.toggle(key="df_worse").value is True
    at.session_state["flt_benchmark"] = "mini-bench"
    at.toggle(key="df_worse").set_value(False).run()
    assert at.toggle(key="df_worse").value is False and "regressions_only" not in at.query_params


def test_a_visit_without_a_benchmark_opens_the_last_used_else_the_newest_never_the_first_name() -> None:
    newest = Catalog(
        benchmarks=("...", "ad-bench", "zeta"),
        agents={"...": ("x",), "ad-bench": ("a",), "zeta": ("z",)},
        date_min=dt.date(2025, 1, 1),
        date_max=dt.date(2026, 1, 1),
        n_runs=3,
        n_attempts=30,
        is_demo=False,
        newest_first=("zeta", "ad-bench", "..."),
    )
    assert start_benchmark(newest) == "zeta"  # the most recent runs, not the alphabetically first "..."
    assert start_benchmark(newest, "ad-bench") == "ad-bench"  # where the user was
    assert start_benchmark(newest, "deleted-bench") == "zeta"  # a last benchmark since deleted: the newest
    assert url_filters({}, newest, last_used="ad-bench")[0] == "ad-bench"


def test_the_sidebar_counts_follow_the_filters(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import store as rdb
    from analytics.catalog import catalog, filtered_counts, filtered_run_count

    with rdb.reader(fixture_db) as con:
        everything = catalog(con)
        bench = everything.benchmarks[0]
        agent = everything.agents[bench][0]
        all_runs, all_attempts = filtered_counts(con, rdb.RunFilter(benchmark=bench))
        one_runs, one_attempts = filtered_counts(con, rdb.RunFilter(benchmark=bench, agents=(agent,)))
        (expected,) = rdb.query_rows(
            con,
            "SELECT count(*) FROM attempts JOIN runs USING (run_id) WHERE benchmark = ? AND agent = ?",
            [bench, agent],
        )
        assert filtered_run_count(con, rdb.RunFilter(benchmark=bench, agents=(agent,))) == one_runs
        assert filtered_run_count(con, rdb.RunFilter(benchmark=bench)) == all_runs
        # the sidebar counts a view without dates from the catalog's rows: the same as the runs table's count
        views = [
            (b, agents) for b in (*everything.benchmarks, None) for agents in ((), everything.agents.get(b, ())[:1])
        ]
        views += [(bench, (agent, "no-such-agent")), (bench, tuple(everything.agents[bench]))]
        for b, agents in views:
            expected_runs = filtered_run_count(con, rdb.RunFilter(benchmark=b, agents=tuple(agents)))
            assert everything.run_count(b, agents) == expected_runs, (b, agents)
        assert everything.run_count(bench) == all_runs and everything.run_count(bench, (agent,)) == one_runs
    assert one_attempts == expected[0] and 0 < one_runs < all_runs and one_attempts < all_attempts
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark=bench, agents=agent)
    captions = [c.value for c in at.sidebar.caption]
    # the view's runs, and the store's runs and attempts (runs-level reads: the cost does not grow with attempts)
    store_wide = f"(the store: {everything.n_runs} runs, {everything.n_attempts} attempts)"
    assert any(c.startswith(f"{one_runs} run") and store_wide in c for c in captions), captions


def test_every_agent_picked_is_the_view_without_an_agent_filter(
    fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Picking "Select all" in the sidebar (or a link naming every agent) shows the unfiltered view: the same filter, so
    the results cached for it are used (a list of every agent was a new filter, the leaderboard computed again)."""
    at = open_page("views/leaderboard.py", fixture_db, monkeypatch)
    unfiltered = [d.value for d in at.dataframe]
    bench = at.session_state["flt_benchmark"]
    agents = at.sidebar.multiselect[0].options
    assert len(agents) > 1
    at.sidebar.multiselect[0].set_value(agents).run()
    assert not at.exception
    assert at.session_state["flt_agents"] == [] and "agents" not in at.query_params
    assert [d.value.equals(u) for d, u in zip(at.dataframe, unfiltered, strict=True)] == [True] * len(unfiltered)
    linked = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark=bench, agents=",".join(agents))
    assert linked.sidebar.multiselect[0].value == [] and "agents" not in linked.query_params
    one = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark=bench, agents=agents[0])
    assert one.sidebar.multiselect[0].value == [agents[0]]  # a real choice stays
