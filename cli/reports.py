"""The analysis reports of ``python -m analytics`` (registered in :data:`cli.main.REPORTS`).

Each report is an ``<name>_options(parser)`` (its own options; the shared ones are declared in :mod:`cli.main`) and
an ``<name>_run(args) -> int``. Like a page, this module sits on top: it reads through ``analytics`` (pure
computation) and asks ``jobs`` to keep derived data through the store's one writer. Imports are lazy, inside each
report's functions, so one report's heavy dependencies (torch for IRT, scipy for the leaderboard) never slow the
others and ``--help`` imports nothing but the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from cli.common import print_json, progress_bar, run_filter
from store import RunFilter, RunlensError, reader

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
                dataclasses.replace(flt, benchmark=b),
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

    with reader(args.db, as_of=args.as_of) as con:
        rep = errors.report(con, run_filter=run_filter(args), sources=args.source)
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
        table = trajectory.coverage_table(con, RunFilter(benchmark=args.benchmark))
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
        inputs = tmf.load(con, RunFilter(benchmark=bench))
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


def job_location(db: str | None) -> str:
    """``--db`` as a job's process opens it (it runs in the project's folder): the default store named, a file's
    path absolute."""
    from pathlib import Path

    from store import resolve_db_path

    location = resolve_db_path(db)
    return str(location.resolve() if isinstance(location, Path) else location)


def irt_options(parser: argparse.ArgumentParser) -> None:
    from analytics.irt import MODELS

    parser.add_argument("--benchmark", help="benchmark to fit (default: the one with most runs)")
    parser.add_argument("--model", choices=MODELS, default="1pl", help="IRT model (default 1pl)")


def irt_run(args: argparse.Namespace) -> int:
    """The cached fit of the current data, else fit and store it (``python -m jobs.irt``, its own process under the
    fit's caps, as the Progress page runs it)."""
    from analytics import catalog, irt
    from jobs.irt import fit_in_process

    with reader(args.db) as con:
        benchmark = args.benchmark or catalog.default_benchmark(con)
        if benchmark is None:
            raise irt.IrtError("the database holds no runs")
        fit = irt.get_fit(con, benchmark=benchmark, model=args.model)
    if fit is None or not fit.is_current:
        shown = sys.stderr.isatty()

        def show(frac: float, msg: str) -> None:
            print(f"\rfitting {benchmark} ({args.model}): {msg}   ", end="", file=sys.stderr, flush=True)

        key = fit_in_process(
            job_location(args.db), benchmark=benchmark, model=args.model, progress=show if shown else None
        )
        with reader(args.db) as con:
            fit = irt.read_fit(con, key)
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
    parser.add_argument(
        "--count-all",
        action="store_true",
        help="read every candidate so the counts are exact (through the index a search stops once its page is full)",
    )


def search_run(args: argparse.Namespace) -> int:
    import dataclasses

    from analytics import search

    flt = dataclasses.replace(run_filter(args), run_ids=tuple(args.runs) if args.runs is not None else None)
    with reader(args.db, as_of=args.as_of) as con:
        result = search.search(
            con,
            run_filter=flt,
            query=args.query,
            mode="regex" if args.regex else "words" if args.words else "phrase",
            limit=args.limit,
            count_all=args.count_all,
        )
    if args.json:
        print_json(search.to_json(result))
        return 0
    print(search.text_report(result))
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
    from jobs.rules import refresh_rules

    graph = rules.read_graph_file(args.graph) if args.graph else None
    done = refresh_rules(args.db, benchmark=args.benchmark, force=args.force, graph=graph)
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
    parser.add_argument(
        "--recompute",
        action="store_true",
        help="compute the clustering again even when one is stored for the failures as they are now",
    )


def clusters_run(args: argparse.Namespace) -> int:
    """The stored clustering of the failures as they are now (migration 010, what the Failure clusters page reads);
    when none is stored for them (or with ``--recompute``), compute it first through the one writer (documents and
    vectors of what is missing, the clustering, stored; ``python -m jobs.clusters_worker``, its own process under the
    job's caps, as the Failure clusters page runs it), then name and print it."""
    from analytics import clusters as cl
    from analytics.llm import llm_config
    from jobs import clusters_worker, worker_process
    from jobs.failures import label_clusters

    clusters = None
    if not args.recompute:
        with reader(args.db) as con:
            clusters = cl.stored_clusters(con, benchmark=args.benchmark, run_id=args.run, model=args.model)
    if clusters is None:
        request = clusters_worker.worker_request(
            job_location(args.db), benchmark=args.benchmark, run_id=args.run, model=args.model, force=args.recompute
        )
        worker_process.run("jobs.clusters_worker", request)
        with reader(args.db) as con:
            clusters = cl.stored_clusters(con, benchmark=args.benchmark, run_id=args.run, model=args.model)
    if clusters is None:
        raise cl.ClusterError("the failures changed while they were clustered; run the command again")
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
