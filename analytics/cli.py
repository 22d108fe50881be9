"""The command line, ``python -m analytics REPORT``: one registry (:data:`REPORTS`) of every report.

Each entry names the report, says in one line what it does, declares its own options and runs it. Options every
report shares are declared once here: ``--db``, ``--json`` and, for the reports that honour the global run filter,
``--benchmark``/``--eval-date``/``--from``/``--to`` (read back as one :class:`store.RunFilter`).

Like a page, this module sits on top: it reads through ``analytics`` (pure computation) and asks ``jobs`` (and
``ingest.rules``) to keep derived data through the store's one writer. Imports are lazy, inside each report's
functions, so one report's heavy dependencies (torch for IRT, scipy for the leaderboard) never slow the others
and ``--help`` imports nothing but this file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store import RunFilter, RunlensError, reader


@dataclass(frozen=True)
class Report:
    """One report of ``python -m analytics``.

    Attributes:
        name: the sub-command.
        summary: one line for ``--help``.
        options: adds the report's own options to its parser.
        run: runs it; returns the exit code.
        filtered: the report honours the run filter (``--benchmark``, ``--eval-date``, ``--from``, ``--to``).
        json_help: help of ``--json`` (empty: the report has no JSON output).
        as_of: the report only reads, and can read a team store's past snapshot (``--as-of``).
    """

    name: str
    summary: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    filtered: bool = False
    json_help: str = "print the JSON report"
    as_of: bool = False


def no_options(parser: argparse.ArgumentParser) -> None:
    """A report with only the shared options."""


def run_filter(args: argparse.Namespace) -> RunFilter:
    """The run filter the shared options name (``--eval-date`` means both ``--from`` and ``--to``)."""
    return RunFilter(
        benchmark=getattr(args, "benchmark", None),
        date_from=args.eval_date or args.date_from,
        date_to=args.eval_date or args.date_to,
    )


def print_json(payload: Any, **kwargs: Any) -> None:
    """One JSON document on stdout (``default=str`` for dates; UTF-8 text left as is)."""
    json.dump(payload, sys.stdout, indent=1, ensure_ascii=False, **kwargs)
    sys.stdout.write("\n")


def progress_bar(desc: str, *, enabled: bool, unit: str) -> Any:
    """A tqdm bar on stderr (None when disabled)."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=0, desc=desc, unit=unit, file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Reading reports
# ---------------------------------------------------------------------------------------------


def leaderboard_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--errored",
        choices=("failures", "excluded"),
        default="failures",
        help="errored attempts (status crashed) count as failures (default) or are left out, as Inspect does",
    )
    scorer_option(parser)
    parser.add_argument(
        "--rank-incomplete",
        action="store_true",
        help="rank incomplete runs (interrupted or errored logs, samples missing) too; by default they are shown "
        "apart and never lead",
    )


def scorer_option(parser: argparse.ArgumentParser) -> None:
    """``--scorer``: rank by one scorer of the scores table instead of the attempts' headline score."""
    parser.add_argument(
        "--scorer",
        default=None,
        help="rank by this scorer (an Inspect scorer, scorer/key of a dict score, or the key alone) instead of "
        "the headline score; an unknown name exits 2 listing the benchmark's scorers",
    )


def leaderboard_run(args: argparse.Namespace) -> int:
    from analytics import catalog, leaderboard, scorers

    flt = run_filter(args)
    with reader(args.db, as_of=args.as_of) as con:
        names = [flt.benchmark] if flt.benchmark else catalog.benchmark_names(con)
        if args.scorer and not flt.benchmark:  # every benchmark that has the scorer
            names = [b for b in names if args.scorer in _scorer_names(scorers.available_scorers(con, benchmark=b))]
            if not names:
                raise scorers.ScorerNotFoundError(
                    f"no benchmark has a scorer {args.scorer!r}; pick one with --benchmark"
                )
        excluded = args.errored == "excluded"
        reports = [
            leaderboard.report(
                con,
                benchmark=b,
                date_from=flt.date_from,
                date_to=flt.date_to,
                exclude_errored=excluded,
                scorer=args.scorer,
                rank_incomplete=args.rank_incomplete,
            )
            for b in names
        ]
    if args.json:
        print_json(reports[0] if flt.benchmark else reports)
        return 0
    for rep in reports:
        print(leaderboard.text_report(rep))
    return 0


def _scorer_names(names: list[str]) -> set[str]:
    """Scorer names and the dict keys that may stand for them (``fluency`` for ``multi/fluency``)."""
    return set(names) | {n.split("/", 1)[1] for n in names if "/" in n}


def errors_options(parser: argparse.ArgumentParser) -> None:
    from analytics.errors import SOURCES

    parser.add_argument("--source", choices=SOURCES, help="only labels from this source (default: all sources)")


def errors_run(args: argparse.Namespace) -> int:
    from analytics import errors

    flt = run_filter(args)
    with reader(args.db, as_of=args.as_of) as con:
        rep = errors.report(
            con, benchmark=flt.benchmark, date_from=flt.date_from, date_to=flt.date_to, sources=args.source
        )
    if args.json:
        print_json(rep)
        return 0
    print(errors.text_report(rep))
    return 0


def coverage_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", help="only this benchmark")


def coverage_run(args: argparse.Namespace) -> int:
    from analytics import catalog, trajectory

    with reader(args.db, as_of=args.as_of) as con:
        if args.benchmark:
            catalog.require_benchmark(con, args.benchmark)
        table = trajectory.coverage_table(con, benchmark=args.benchmark)
    if args.json:
        print_json({"rows": trajectory.coverage_rows(table)})
    else:
        print(table[list(trajectory.COVERAGE_KEYS)].to_string(index=False) if not table.empty else "no attempts")
    return 0


def tmf_options(parser: argparse.ArgumentParser) -> None:
    from analytics import tmf

    parser.add_argument("--benchmark", help="benchmark name (default: the one with most runs)")
    parser.add_argument("--slice", default="all", help="all, level=L3 or category=NAME")
    parser.add_argument("--hourly-usd", type=float, default=tmf.DEFAULT_HOURLY_USD, help="human hourly rate, USD")
    parser.add_argument("--human-minutes", type=float, help="minutes per task for tasks without human_minutes")
    parser.add_argument("--human-performance", type=float, help="human performance (0..1) if no human run")
    parser.add_argument("--performance", choices=tmf.PERFORMANCES, default="pass@1")
    parser.add_argument("--axis", choices=tuple(tmf.AXES), default="cost")
    parser.add_argument("--cost-source", choices=tmf.COST_SOURCES, default="logged")
    parser.add_argument("--reprice", action="store_true", help="reprice runs at the family's newest prices")
    parser.add_argument("--supply", choices=tmf.SUPPLIES, default="step")
    parser.add_argument("--willingness", type=float, default=1.0, help="share of the human cost a buyer pays")
    parser.add_argument("--exponent", type=float, default=1.0, help="shape of the acceptance curve")
    parser.add_argument("--seed", type=int, default=0)


def tmf_run(args: argparse.Namespace) -> int:
    from analytics import catalog, tmf

    opt = tmf.TmfOptions(
        performance=args.performance,
        axis=args.axis,
        cost_source=args.cost_source,
        is_repriced=args.reprice,
        supply=args.supply,
        hourly_usd=args.hourly_usd,
        human_minutes=args.human_minutes,
        human_performance=args.human_performance,
        willingness=args.willingness,
        exponent=args.exponent,
        seed=args.seed,
    )
    with reader(args.db, as_of=args.as_of) as con:
        bench = args.benchmark or catalog.default_benchmark(con)
        if bench is None:
            raise tmf.TmfError("the database holds no runs")
        inputs = tmf.load(con, benchmark=bench)
    if inputs.tasks.empty:
        raise tmf.TmfError(f"benchmark {bench!r} has no attempts")
    result = tmf.analyse(inputs, slice_name=args.slice, options=opt)
    rep = tmf.report(result)
    if args.json:
        print_json({"benchmark": bench, **rep}, default=str)
        return 0
    print(tmf.text_report(bench, args.slice, result, rep))
    return 0


def gem_options(parser: argparse.ArgumentParser) -> None:
    from analytics.gem import SOURCES

    parser.add_argument("--benchmark", help="GEM benchmark (default: every benchmark with GEM data)")
    parser.add_argument(
        "--source",
        choices=SOURCES,
        default="log",
        help="quantitative metrics as logged, or computed by `gem-metrics` (default: log)",
    )
    parser.add_argument("--rater", help="LLM judge for the qualitative scores (default: the runs' judge)")


def gem_run(args: argparse.Namespace) -> int:
    from analytics import gem

    with reader(args.db, as_of=args.as_of) as con:
        names = gem.chosen_benchmarks(con, args.benchmark)
        reps = [gem.report(con, benchmark=b, source=args.source, rater=args.rater) for b in names]
    if args.json:
        print_json({"rows": [r for rep in reps for r in rep["rows"]]})
        return 0
    for rep in reps:
        print(gem.text_report(rep))
    return 0


def irt_options(parser: argparse.ArgumentParser) -> None:
    from analytics.irt import MODELS

    parser.add_argument("--benchmark", help="benchmark to fit (default: the one with most runs)")
    parser.add_argument("--model", choices=MODELS, default="1pl", help="IRT model (default 1pl)")


def irt_run(args: argparse.Namespace) -> int:
    """The cached fit of the current data, else fit and store it (through ``jobs.irt``)."""
    from analytics import catalog, irt
    from jobs.irt import fit_and_store
    from store import writer

    with reader(args.db) as con:
        benchmark = args.benchmark or catalog.default_benchmark(con)
        if benchmark is None:
            raise irt.IrtError("the database holds no runs")
        fit = irt.get_fit(con, benchmark=benchmark, model=args.model)
    if fit is None or not fit.is_current:
        shown = sys.stderr.isatty()

        def show(frac: float, msg: str) -> None:
            print(f"\rfitting {benchmark} ({args.model}): {msg}   ", end="", file=sys.stderr, flush=True)

        with writer(args.db) as con:
            fit = fit_and_store(con, benchmark=benchmark, model=args.model, progress=show if shown else None)
        if shown:
            print(file=sys.stderr)
    if args.json:
        print_json(irt.fit_json(fit))
        return 0
    print(irt.text_report(benchmark, fit))
    return 0


def search_options(parser: argparse.ArgumentParser) -> None:
    from analytics.search import DEFAULT_LIMIT

    parser.add_argument("query", help="phrase (default), words (--words) or RE2 regular expression (--regex)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--regex", action="store_true", help="the query is an RE2 regular expression")
    how.add_argument("--words", action="store_true", help="every word, whole, in any order")
    parser.add_argument("--run", action="append", dest="runs", help="only this run (repeatable)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help=f"hits listed (default {DEFAULT_LIMIT})")


def search_run(args: argparse.Namespace) -> int:
    from analytics import search

    flt = run_filter(args)
    with reader(args.db, as_of=args.as_of) as con:
        result = search.search(
            con,
            query=args.query,
            mode="regex" if args.regex else "words" if args.words else "phrase",
            benchmark=flt.benchmark,
            date_from=flt.date_from,
            date_to=flt.date_to,
            run_ids=args.runs,
            limit=args.limit,
        )
    if args.json:
        print_json(search.to_json(result))
        return 0
    print(search.text_report(result))
    return 0


def search_index_options(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--rebuild", action="store_true", help="build the index anew instead of adding to it")
    how.add_argument("--drop", action="store_true", help="delete the index file (phrase search then scans)")


def search_index_run(args: argparse.Namespace) -> int:
    """Build, refresh or drop transcript search's index file (jobs.search_index)."""
    import dataclasses

    from jobs import search_index

    if args.drop:
        dropped = search_index.drop(args.db)
        if args.json:
            print_json({"dropped": dropped})
        else:
            print("index dropped" if dropped else "no index")
        return 0
    done = search_index.refresh(args.db, rebuild=args.rebuild)
    if args.json:
        print_json(dataclasses.asdict(done))
        return 0
    print(
        f"search index {done.path}: {done.attempts_added:,} attempts added, {done.attempts_removed:,} removed; "
        f"{done.attempts_covered:,} covered ({done.attempts_not_indexable:,} without a known file are always scanned), "
        f"{done.rows:,} texts, {done.text_chars:,} characters, {done.index_bytes / 1e6:,.0f} MB, {done.seconds} s"
    )
    return 0


def gate_options(parser: argparse.ArgumentParser) -> None:
    from analytics import compare
    from analytics.gate import GATE_METRICS

    parser.add_argument("--baseline", required=True, help="run id of the reference run")
    parser.add_argument("--candidate", required=True, help="run id of the run under test")
    parser.add_argument("--metric", choices=GATE_METRICS, default=None, help="default: the benchmark's metric")
    parser.add_argument("--alpha", type=float, default=compare.ALPHA, help="false-alarm rate allowed (default 0.05)")
    parser.add_argument("--seed", type=int, default=0)
    scorer_option(parser)
    parser.add_argument(
        "--two-sided", action="store_true", help="two-sided test (default: one-sided in the bad direction)"
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=0.0,
        help="non-inferiority: fail only if worse by more than this (a fraction, e.g. 0.02; USD for cost)",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="anytime-valid: read tasks in the order they ran and stop as soon as the answer is known",
    )
    parser.add_argument(
        "--stop-delta",
        type=float,
        default=None,
        help="with --sequential: pass early once a regression this large is ruled out (default 0.05)",
    )


def gate_run(args: argparse.Namespace) -> int:
    """The exit code is the verdict: 0 not worse, 1 significantly worse, 2 not comparable."""
    from analytics import gate

    if not 0 < args.alpha < 1:
        raise RunlensError(f"--alpha must be between 0 and 1, got {args.alpha}")
    with reader(args.db, as_of=args.as_of) as con:
        result = gate.gate(
            con,
            baseline=args.baseline,
            candidate=args.candidate,
            metric=args.metric,
            alpha=args.alpha,
            seed=args.seed,
            scorer=args.scorer,
            sided="two-sided" if args.two_sided else "one-sided",
            margin=args.margin,
            sequential=args.sequential,
            stop_delta=gate.STOP_DELTA if args.stop_delta is None else args.stop_delta,
        )
    if args.json:
        print_json(gate.report(result))
    else:
        print(gate.text_report(result))
    return result.exit_code


def plan_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", required=True, help="benchmark name")
    parser.add_argument("--delta", type=float, required=True, help="the regression to detect, a fraction (0.05)")
    parser.add_argument("--baseline", help="run whose variances are used (default: the ranked run with most attempts)")
    parser.add_argument("--samples", type=int, help="a number of samples per task to plan for besides 1, 2, 3, 5, 10")
    parser.add_argument("--alpha", type=float, default=0.05, help="the gate's false-alarm rate (default 0.05)")
    parser.add_argument("--two-sided", action="store_true", help="plan for a two-sided gate")


def plan_run(args: argparse.Namespace) -> int:
    """Tasks and samples a comparison needs to detect --delta with 80% power."""
    from analytics import plan

    with reader(args.db, as_of=args.as_of) as con:
        result = plan.plan(
            con,
            benchmark=args.benchmark,
            delta=args.delta,
            baseline=args.baseline,
            samples=args.samples,
            alpha=args.alpha,
            sided="two-sided" if args.two_sided else "one-sided",
        )
    print_json(plan.report(result)) if args.json else print(plan.text_report(result))
    return 0


def sql_options(parser: argparse.ArgumentParser) -> None:
    from analytics.sql_console import SandboxLimits

    parser.add_argument("query", help='one SQL statement, e.g. "SELECT * FROM v_runs"; "-" reads stdin')
    parser.add_argument("--timeout-s", type=float, default=SandboxLimits.timeout_s, help="statement timeout")
    parser.add_argument("--memory-limit", default=SandboxLimits.memory_limit, help="DuckDB memory limit")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="print at most this many rows (default: the full result, byte-capped)",
    )


def sql_run(args: argparse.Namespace) -> int:
    """CSV on stdout; refused (exit 3), failed (1) or bounded (4) with the reason on stderr."""
    from analytics import sql_console as sb

    sql = sys.stdin.read() if args.query == "-" else args.query
    limits = sb.SandboxLimits(
        timeout_s=args.timeout_s, memory_limit=args.memory_limit, max_rows=args.max_rows or sb.SandboxLimits.max_rows
    )
    try:
        if args.json or args.max_rows:
            result = sb.run_query(sql, db=args.db, limits=limits)
            if args.json:
                print(json.dumps(sb.result_json(result), default=str, indent=2))
            else:
                sys.stdout.write(sb.result_csv(result))
        else:  # streamed through a file: the full result is never held in this process
            import shutil
            import tempfile

            with tempfile.TemporaryDirectory(prefix="runlens-sql-") as tmp:
                dest = Path(tmp) / "result.csv"
                sb.export_to(sql, "csv", dest, db=args.db, limits=limits)
                with dest.open("rb") as fh:
                    shutil.copyfileobj(fh, sys.stdout.buffer)
            sys.stdout.flush()
    except sb.SqlRefused as exc:
        print(f"python -m analytics sql: {exc}", file=sys.stderr)
        return sb.EXIT_REFUSED
    except sb.SqlFailed as exc:
        print(f"python -m analytics sql: {exc.message}", file=sys.stderr)
        return sb.EXIT_BOUNDED if exc.kind in ("timeout", "memory", "too_large") else sb.EXIT_FAILED
    return 0


# ---------------------------------------------------------------------------------------------
# Reports that keep derived data (through jobs/ and the store's one writer)
# ---------------------------------------------------------------------------------------------


def rules_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", help="only this benchmark")
    parser.add_argument("--graph", help="tool graph JSON file to use instead of the declared one (with --benchmark)")
    parser.add_argument("--force", action="store_true", help="recompute even when the graph did not change")


def rules_run(args: argparse.Namespace) -> int:
    """Recompute rule findings where the graph changed and say how many each benchmark got."""
    from analytics import errors
    from ingest import rules

    graph = rules.read_graph_file(args.graph) if args.graph else None
    done = rules.refresh_rules(args.db, benchmark=args.benchmark, force=args.force, graph=graph)
    if args.json:
        print(json.dumps({"recomputed": done}))
        return 0
    for name, n in done.items():
        print(f"{name}: {n} rule findings")
    if not done:
        print("rule findings are up to date")
    with reader(args.db) as con:
        counts = errors.rule_counts(con)
    print(", ".join(f"{c}: {n}" for c, n in counts) or "no rule findings")
    return 0


def judge_options(parser: argparse.ArgumentParser) -> None:
    from analytics.judge import PROMPT_FILES

    parser.add_argument("--benchmark", required=True, help="benchmark whose attempts are judged")
    parser.add_argument("--run", dest="run_id", help="only this run")
    parser.add_argument("--failed-only", action="store_true", help="only attempts that did not pass")
    parser.add_argument("--limit", type=int, help="judge at most the first N selected attempts")
    parser.add_argument("--prompt", choices=sorted(PROMPT_FILES), default="adbench-stage1", help="judge prompt")
    parser.add_argument("--retry-failures", action="store_true", help="judge again attempts whose judging failed")


def judge_run(args: argparse.Namespace) -> int:
    """A judge job against the configured OpenAI-compatible endpoint (exit 130 when interrupted)."""
    from analytics import llm
    from jobs.judge import run_judge

    summary = run_judge(
        args.db,
        benchmark=args.benchmark,
        cfg=llm.require_config(),
        prompt_name=args.prompt,
        run_id=args.run_id,
        is_failed_only=args.failed_only,
        limit=args.limit,
        retry_failures=args.retry_failures,
        show_progress=not args.json,
    )
    payload = summary.__dict__
    if args.json:
        print_json(payload)
    else:
        print(", ".join(f"{k} {v}" for k, v in payload.items()))
    if summary.is_interrupted:
        print("interrupted: finished verdicts are saved; run the same command again to continue", file=sys.stderr)
        return 130
    return 0


def gem_metrics_options(parser: argparse.ArgumentParser) -> None:
    from analytics.embeddings import DEFAULT_BATCH, DEFAULT_MODEL

    parser.add_argument("--benchmark", help="GEM benchmark (default: every benchmark with GEM data)")
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"{DEFAULT_MODEL} (the packaged offline copy) or a sentence-transformers folder",
    )
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, help="sentences per model call")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def gem_metrics_run(args: argparse.Namespace) -> int:
    """Compute and store the embedding metrics, with a progress bar for large runs."""
    from analytics import gem
    from analytics.embeddings import Embedder
    from jobs.gem_metrics import compute_gem_metrics
    from store import writer

    embedder = Embedder(args.model, batch_size=args.batch_size)
    with writer(args.db) as con:
        for bench in gem.chosen_benchmarks(con, args.benchmark):
            bar = progress_bar(bench, enabled=not args.no_progress, unit="response")

            def progress(done: int, total: int, bar: Any = bar) -> None:
                if bar is not None:
                    bar.total = total
                    bar.n = done
                    bar.refresh()

            n = compute_gem_metrics(
                con, benchmark=bench, encode=embedder.encode, model=embedder.name, progress=progress
            )
            if bar is not None:
                bar.close()
            print(f"{bench}: stored {n} computed metric values (model {embedder.name})")
    return 0


def clusters_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", required=True, help="benchmark whose failed attempts are clustered")
    parser.add_argument("--run", help="only this run's failed attempts")
    parser.add_argument(
        "--model",
        default="minilm-static-256@v1",
        choices=("minilm-static-256@v1", "all-MiniLM-L6-v2"),
        help="embedding model: the static model distilled from MiniLM (default, thousands a second) or the full "
        "all-MiniLM-L6-v2 (tens a second)",
    )


def clusters_run(args: argparse.Namespace) -> int:
    """Embed the failures not cached yet (through the one writer), cluster, name, and print the report."""
    from analytics import clusters as cl
    from analytics.llm import llm_config
    from jobs.failures import embed_failures, label_clusters

    embed_failures(args.db, benchmark=args.benchmark, run_id=args.run, model=args.model)
    with reader(args.db) as con:
        clusters = cl.failure_clusters(con, benchmark=args.benchmark, run_id=args.run, model=args.model)
    if clusters is None:
        raise cl.ClusterError("some failures still have no embedding; run the command again")
    cfg = llm_config()
    if cfg is not None:  # one-line LLM labels, cached in the DB (a cluster seen before costs no call)
        label_clusters(args.db, clusters, cfg=cfg)
        with reader(args.db) as con:
            clusters = cl.apply_llm_labels(con, clusters, model=cfg.model)
    if args.json:
        print_json(cl.to_json(clusters))
        return 0
    print(cl.text_report(clusters))
    return 0


def doctor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--republish", action="store_true", help="also republish the read snapshot")
    parser.add_argument("--no-rehash", action="store_true", help="do not re-hash source files still on disk")


def doctor_run(args: argparse.Namespace) -> int:
    """Check the database (it waits for a running writer); exit 1 when anything is wrong."""
    from analytics import doctor
    from store import open as open_store
    from store import writer

    path = open_store(args.db)
    if not path.exists():
        print(f"{path}: no such database")
        return 1
    with writer(path, publish_snapshot=args.republish) as con:
        rep = doctor.check(con, str(path), rehash_sources=not args.no_rehash)
    if args.json:
        print_json(doctor.to_json(rep))
    else:
        print(doctor.text_report(str(path), rep))
    return 0 if rep.ok else 1


def export_parquet_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="folder to write (created; must be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a previous export in --out")


def export_parquet_run(args: argparse.Namespace) -> int:
    """Export and print a summary (or the marker with ``--json``)."""
    from store.export_parquet import export_parquet

    marker = export_parquet(args.db, args.out, overwrite=args.overwrite)
    if args.json:
        print_json(marker)
        return 0
    for table, spec in marker["tables"].items():
        parts = f" partitioned by {', '.join(spec['partition_by'])}" if spec["partition_by"] else ""
        print(f"{table}: {spec['rows']:,} rows{parts}")
    print(f"wrote {args.out} in {marker['seconds']:.1f} s; use it with RUNLENS_DB={args.out}")
    return 0


def migrate_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", help="the store to copy (default: --db, $RUNLENS_DB or the file)")
    parser.add_argument("--to", dest="target", required=True, help="the new store: a DuckDB file or ducklake:...")


def migrate_store_run(args: argparse.Namespace) -> int:
    """Copy a store into a new one (file to team store or back) and check every table's rows and digest."""
    from store.transfer import copy_store

    def progress(table: str, n: int) -> None:
        print(f"\r{table}: {n:,} rows".ljust(60), end="", file=sys.stderr, flush=True)

    checks = copy_store(args.source or args.db, args.target, progress=None if args.json else progress)
    if args.json:
        print_json({"tables": [{**vars(c), "ok": c.ok} for c in checks], "ok": all(c.ok for c in checks)})
        return 0
    print(file=sys.stderr)
    for c in checks:
        print(f"{c.table:<16} {c.n_source:>12,} rows  digest {'matches' if c.ok else 'DIFFERS'}")
    print(f"copied {sum(c.n_source for c in checks):,} rows; check the target with python -m analytics doctor --db ...")
    return 0


def maintain_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-days",
        type=float,
        default=7.0,
        help="keep time travel (--as-of) for this many days; older snapshots and their files go (default 7)",
    )


def maintain_run(args: argparse.Namespace) -> int:
    """Compact a team store and expire old snapshots."""
    from store.transfer import maintain

    if args.keep_days < 0:
        raise RunlensError(f"--keep-days must be 0 or more, got {args.keep_days}")
    done = maintain(args.db, keep=dt.timedelta(days=args.keep_days))
    if args.json:
        print_json(vars(done))
        return 0
    print(
        f"flushed inlined rows of {done.flushed_tables} table(s), merged files of {done.merged_tables}, "
        f"expired {done.expired_snapshots} snapshot(s), removed {done.removed_files} file(s) in {done.seconds:.1f} s"
    )
    return 0


# ---------------------------------------------------------------------------------------------
# The registry and the entry point
# ---------------------------------------------------------------------------------------------

REPORTS: dict[str, Report] = {
    r.name: r
    for r in (
        Report("leaderboard", "Pass@k per run on shared tasks, with intervals and ranks", leaderboard_options,
               leaderboard_run, filtered=True, as_of=True),
        Report("doctor", "check the database's schema, counts and source files (exit 1 on a problem)",
               doctor_options, doctor_run, json_help="print the report as JSON"),
        Report("sql", "one read-only SQL statement through the sandbox (CSV on stdout)", sql_options, sql_run,
               json_help="print {columns, types, rows, n_rows, is_truncated, elapsed_s} instead of CSV"),
        Report("coverage", "trajectory coverage, recall and precision per run and slice", coverage_options,
               coverage_run, json_help='print {"rows": [...]} on stdout', as_of=True),
        Report("rules", "recompute rule findings from the tool graphs", rules_options, rules_run,
               json_help='print {"recomputed": {benchmark: n_findings}}'),
        Report("errors", "error distributions per run (AD-Bench Table 3 layout)", errors_options, errors_run,
               filtered=True, as_of=True),
        Report("judge", "LLM-judge the selected attempts (OpenAI-compatible endpoint)", judge_options, judge_run,
               json_help="print the job summary as JSON"),
        Report("tmf", "Tech-Market-Fit of one benchmark slice (xbench 5.2)", tmf_options, tmf_run, as_of=True),
        Report("gem", "GEM-Bench Tables 2, 3 and 6 per dataset x solution", gem_options, gem_run, as_of=True),
        Report("gem-metrics", "compute and store GEM embedding metrics (offline model)", gem_metrics_options,
               gem_metrics_run, json_help=""),
        Report("irt", "IRT abilities over time (fit and store when the data changed)", irt_options, irt_run,
               json_help="print the abilities and items as JSON"),
        Report("export-parquet", "export every table to a Parquet folder (RUNLENS_DB can point at it)",
               export_parquet_options, export_parquet_run, json_help="print the marker (tables, rows, columns) as JSON"),
        Report("search", "transcript search: phrase, words or regular expression", search_options, search_run,
               filtered=True, as_of=True),
        Report("search-index", "build or refresh transcript search's index", search_index_options, search_index_run,
               json_help="print what was done as JSON"),
        Report("clusters", "failure clusters of a benchmark (embeds what is missing first)", clusters_options,
               clusters_run),
        Report("migrate-store", "copy a store into a new one (DuckDB file <-> team store), checking every table",
               migrate_store_options, migrate_store_run, json_help="print each table's rows and digests as JSON"),
        Report("maintain", "compact a team store (DuckLake) and expire snapshots older than --keep-days",
               maintain_options, maintain_run, json_help="print what was done as JSON"),
        Report("gate", "CI gate: is the candidate run significantly worse than the baseline?", gate_options,
               gate_run, json_help="print the result as JSON", as_of=True),
        Report("plan", "tasks and samples needed to detect a regression of --delta with 80% power", plan_options,
               plan_run, json_help="print the plan as JSON", as_of=True),
    )
}  # fmt: skip


def add_shared_options(parser: argparse.ArgumentParser, report: Report) -> None:
    """``--db`` for every report; ``--json`` and the run filter for those that have them."""
    parser.add_argument(
        "--db",
        help="database path, a local lake ducklake:sqlite:<catalog file> or a team store "
        "ducklake:postgres:<libpq string> (default: $RUNLENS_DB or the local lake data/runlens.lake)",
    )
    if report.filtered:
        parser.add_argument("--benchmark", help="benchmark name (default: every benchmark)")
        parser.add_argument("--eval-date", type=dt.date.fromisoformat, help="only runs evaluated on this date")
        parser.add_argument("--from", dest="date_from", type=dt.date.fromisoformat, help="runs on or after this date")
        parser.add_argument("--to", dest="date_to", type=dt.date.fromisoformat, help="runs on or before this date")
    if report.json_help:
        parser.add_argument("--json", action="store_true", help=report.json_help)
    if report.as_of:
        parser.add_argument(
            "--as-of",
            metavar="SNAPSHOT|TIME",
            help="read a team store (DuckLake) as it was: a snapshot id, or a time such as 2026-11-24T09:00 (UTC)",
        )


def build_parser(report: str | None = None) -> argparse.ArgumentParser:
    """One sub-command per report; only ``report``'s options are declared (``--help`` lists names and summaries)."""
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Runlens reports over the database.")
    subs = parser.add_subparsers(dest="report", required=True, metavar="REPORT", help=", ".join(REPORTS))
    for name, rep in REPORTS.items():
        sub = subs.add_parser(name, help=rep.summary.replace("%", "%%"), description=rep.summary)
        if name != report:
            continue  # a name only: its options are declared (and its modules imported) when it is the one asked for
        add_shared_options(sub, rep)
        rep.options(sub)
        sub.set_defaults(_run=rep.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one report; the project's own errors print their message and exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in REPORTS else None).parse_args(argv)
    if not hasattr(args, "json"):
        args.json = False
    try:
        return int(args._run(args))
    except RunlensError as exc:
        print(f"python -m analytics {args.report}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
