"""GEM-Bench reads (the only module of ``analytics.gem`` that queries): the GEM benchmarks, attempts, metric and rating
rows, raters, metric sources and the responses behind the tables."""

from __future__ import annotations

import duckdb
import pandas as pd

from analytics.gem.formulas import GemError
from store import query_df

ATTEMPTS_SQL = """
SELECT a.attempt_id, a.run_id, r.agent AS solution, coalesce(t.category, 'all') AS dataset, a.task_id, a.sample,
       coalesce(TRY_CAST(json_extract_string(r.extra, '$.ads_per_response') AS INTEGER), 1) AS k,
       coalesce(json_extract_string(r.extra, '$.gem_role'), '') = 'baseline' AS is_baseline,
       a.input_tokens, a.output_tokens
FROM attempts a JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE r.benchmark = ?
"""


GEM_BENCH_SQL = """
SELECT DISTINCT r.benchmark FROM attempt_metrics m JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
WHERE m.name IN ('response_flow', 'response_coherence', 'ad_flow', 'ad_coherence', 'injection')
UNION
SELECT DISTINCT r.benchmark FROM ratings g JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
WHERE split_part(g.dimension, '/', 1) IN ('accuracy', 'naturalness', 'personality', 'trust', 'notice')
UNION
SELECT benchmark FROM benchmarks WHERE json_extract_string(extra, '$.gem') = 'true'
ORDER BY 1
"""


def gem_benchmarks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Benchmarks holding GEM-style data (response metrics, GEM judge dimensions, or ``"gem": true``)."""
    return [str(b) for b in query_df(con, GEM_BENCH_SQL)["benchmark"]]


def attempts(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per attempt with its dataset, solution, k (ads per response), baseline flag and tokens."""
    return query_df(con, ATTEMPTS_SQL, [benchmark])


def metric_rows(con: duckdb.DuckDBPyConnection, *, benchmark: str, source: str, model: str | None) -> pd.DataFrame:
    """The response metrics (and the logged clicks) of ``benchmark`` from ``source`` (``model``: one embedding model,
    None: any): attempt_id, name, value, source, model."""
    return query_df(
        con,
        """
        SELECT m.attempt_id, m.name, m.value, m.source, m.model FROM attempt_metrics m
        JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE r.benchmark = ? AND m.name IN ('response_flow', 'response_coherence', 'ad_flow', 'ad_coherence',
                                             'injection', 'click')
          AND (m.source = ? OR (m.name = 'click' AND m.source = 'log')) AND (? IS NULL OR m.model = ?
               OR m.source = 'log')""",
        [benchmark, source, model, model],
    )


def run_judges(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """The judges named on the benchmark's runs, most runs first: judge, n."""
    return query_df(
        con,
        "SELECT judge, count(*) AS n FROM runs WHERE benchmark = ? AND judge IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1",
        [benchmark],
    )


def llm_raters(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> list[str]:
    """LLM raters of the benchmark, most ratings first."""
    df = query_df(
        con,
        """SELECT g.rater, count(*) AS n FROM ratings g JOIN attempts a USING (attempt_id)
                          JOIN runs r USING (run_id) WHERE r.benchmark = ? AND g.rater_kind = 'llm'
                          GROUP BY 1 ORDER BY 2 DESC, 1""",
        [benchmark],
    )
    return [str(r) for r in df["rater"]]


def rating_rows(con: duckdb.DuckDBPyConnection, *, benchmark: str, rater_kind: str | None = None) -> pd.DataFrame:
    """Stored ratings of the benchmark's attempts (of one ``rater_kind``, None: all): attempt_id, rater, rater_kind,
    dimension, value."""
    return query_df(
        con,
        """SELECT g.attempt_id, g.rater, g.rater_kind, g.dimension, g.value FROM ratings g
                          JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
                          WHERE r.benchmark = ? AND (? IS NULL OR g.rater_kind = ?)""",
        [benchmark, rater_kind, rater_kind],
    )


def sources(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Metric sources and models present for the embedding metrics of ``benchmark``."""
    return query_df(
        con,
        """SELECT m.source, coalesce(m.model, '') AS model, count(*) AS n FROM attempt_metrics m
                            JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
                            WHERE r.benchmark = ? AND m.name = 'response_flow' GROUP BY ALL ORDER BY 1, 2""",
        [benchmark],
    )


RESPONSES_SQL = """
SELECT a.attempt_id, a.run_id, r.agent AS solution, coalesce(t.category, 'all') AS dataset, a.task_id, a.sample,
       coalesce(TRY_CAST(json_extract_string(r.extra, '$.ads_per_response') AS INTEGER), 1) AS k,
       t.query, a.answer, coalesce(json_extract(a.extra, '$.ads'), json_extract(a.extra, '$.ad'))::VARCHAR AS ads
FROM attempts a JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE r.benchmark = ? AND (? IS NULL OR coalesce(t.category, 'all') = ?) AND (? IS NULL OR r.agent = ?)
ORDER BY a.task_id, a.sample, a.run_id
"""


def responses(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, dataset: str | None = None, solution: str | None = None
) -> pd.DataFrame:
    """Attempts with their query, response text and ads (JSON text)."""
    return query_df(con, RESPONSES_SQL, [benchmark, dataset, dataset, solution, solution])


def chosen_benchmarks(con: duckdb.DuckDBPyConnection, benchmark: str | None) -> list[str]:
    """``[benchmark]`` when it holds GEM-style data, every GEM benchmark when None; GemError otherwise."""
    found = gem_benchmarks(con)
    if benchmark and benchmark not in found:
        raise GemError(
            f"benchmark {benchmark!r} holds no GEM-style data (GEM benchmarks: {', '.join(found) or 'none'})"
        )
    names = [benchmark] if benchmark else found
    if not names:
        raise GemError("no GEM-style data in the database (see docs/gem.md)")
    return names
