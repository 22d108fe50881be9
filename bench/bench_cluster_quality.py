"""How far failure clusters match known causes: ``python bench/bench_cluster_quality.py [--minilm-max 1000]
[--max-failures N] [--demo] [--generator failure_sets|ops|web|code] [--more-held-out] [--fresh] [--tuning
[--more-tuning]] [--confusion ARI] [--keep DIR] [--json OUT.json]``.

1. **Held-out sets** of four independent generators, 4-12 causes, 200-20,000 failures, two transcript styles
   each: ``failure_sets`` (tests/failure_sets.py; seeds 100-107), ``ops`` (tests/failure_sets_ops.py: another
   vocabulary, the AD-Bench error taxonomy and sandbox failures, other step layouts and noise; seeds 200-207),
   ``web`` (tests/failure_sets_web.py: a web-shop browsing agent, driver boilerplate and a coarse error code shared
   by causes inside the failing text; seeds 300-307, written before any result on it was seen) and ``code``
   (tests/failure_sets_code.py: a coding agent on SWE-bench-like tasks, test-runner and traceback boilerplate
   shared by the causes, causes in a tool's error, the test output, a model call's error, the answer or the
   trajectory's shape; styles ``agent`` and ``terminal``; seeds 400-407, written and committed before any result on
   it was seen, and in no fresh or more-held-out list). Nothing was tuned on these seeds: the weights and
   the cut were chosen on seeds 1-8 of the first two generators, failure-doc@v2's reading of runner output,
   failure-doc@v3's consequences, failure-doc@v4's footers and failure-doc@v5's code shown, moved-past failures
   and killed commands on seeds 1-8 of ``code``. Each set is ingested into
   a throwaway store, its failures' documents are read (``analytics.clusters.failure_texts``), each distinct
   document is embedded once (as the cache does) by the static model (the default) and, for sets of at most
   ``--minilm-max`` failures, by the full all-MiniLM-L6-v2; clustered (``build_clusters``); the adjusted Rand
   index against the causes is printed with the number of clusters and of distinct documents, the unclustered
   share and the times.
``--more-held-out`` adds ``web`` seeds 310-317 and 320-327 (the second generated after clusters@v9's choice).
``--fresh`` runs sets used for no choice (``fresh_sets``: seeds 110-117, 210-217, 330-337 and, of ``code``, 500-507
and 510-517 in the held-out shapes, and ``web`` 340-345 in the small shapes) instead of the held-out list.
``--keep DIR`` ingests each set into ``DIR/<generator>-<seed>.duckdb`` and reuses that store when it is there (a
variant of the clustering is then measured on the same failures without ingesting them again).
``--tuning`` runs the tuning seeds (1-8 of each generator, in the held-out list's shapes; ``code``'s since
failure-doc@v2) instead, the only sets a change is chosen on; ``--more-tuning`` adds tuning
sets of ``web`` (seeds 21-28 in the held-out list's shapes, and six small sets, seeds 41-46, of 4-6 causes and
200-400 failures: a cause's wordings at small n) and of ``code`` (seeds 21-28 and 31-38 in its held-out shapes,
since failure-doc@v6); ``--confusion 0.8`` prints the table of cause by cluster of every
set under ARI 0.8 (a column with several causes: they joined; a row over several clusters: a cause split).

2. ``--demo``: the AD-Bench demo's failures against the log's error codes (failures with exactly one code,
   ``analytics.clusters.label_quality``), same two models (MiniLM only if the failures are few enough).

Everything is seeded; nothing outside a temporary folder is written.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics import clusters as cl  # noqa: E402
from analytics.embeddings import STATIC_MODEL, Embedder, StaticEmbedder  # noqa: E402
from ingest.pipeline import ingest_paths  # noqa: E402
from store import reader  # noqa: E402
from tests import failure_sets, failure_sets_code, failure_sets_ops, failure_sets_web  # noqa: E402

HELD_OUT = [  # generator, seed, causes, failures, style
    ("failure_sets", 100, 4, 200, "agent"),
    ("failure_sets", 101, 6, 1000, "chat"),
    ("failure_sets", 102, 8, 500, "agent"),
    ("failure_sets", 103, 12, 3000, "agent"),
    ("failure_sets", 104, 10, 2000, "chat"),
    ("failure_sets", 105, 5, 20000, "agent"),
    ("failure_sets", 106, 7, 800, "chat"),
    ("failure_sets", 107, 11, 6000, "chat"),
    ("ops", 200, 4, 300, "trace"),
    ("ops", 201, 6, 1200, "notebook"),
    ("ops", 202, 8, 600, "trace"),
    ("ops", 203, 12, 4000, "notebook"),
    ("ops", 204, 10, 2500, "trace"),
    ("ops", 205, 5, 20000, "notebook"),
    ("ops", 206, 7, 900, "trace"),
    ("ops", 207, 11, 8000, "notebook"),
    ("web", 300, 4, 250, "browser"),
    ("web", 301, 6, 1500, "script"),
    ("web", 302, 8, 700, "browser"),
    ("web", 303, 12, 5000, "script"),
    ("web", 304, 10, 2000, "browser"),
    ("web", 305, 5, 20000, "script"),
    ("web", 306, 7, 400, "browser"),
    ("web", 307, 11, 9000, "script"),
    ("code", 400, 4, 200, "agent"),
    ("code", 401, 6, 1000, "terminal"),
    ("code", 402, 8, 500, "agent"),
    ("code", 403, 12, 3000, "agent"),
    ("code", 404, 10, 2000, "terminal"),
    ("code", 405, 5, 20000, "agent"),
    ("code", 406, 7, 800, "terminal"),
    ("code", 407, 11, 6000, "terminal"),
]
GENERATORS = {
    "failure_sets": failure_sets.failure_set,
    "ops": failure_sets_ops.failure_set,
    "web": failure_sets_web.failure_set,
    "code": failure_sets_code.failure_set,
}


def _embedders(n: int, minilm_max: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [(STATIC_MODEL, StaticEmbedder())]
    if n <= minilm_max:
        out.append(("all-MiniLM-L6-v2", Embedder()))
    return out


def _encode_distinct(emb: Any, texts: list[str]) -> Any:
    """Vectors of ``texts`` with each distinct text embedded once (as the cache does: one vector per text)."""
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(texts, dtype=object))
    return emb.encode([str(u) for u in uniques])[codes]


TUNED = ("failure_sets", "ops", "web", "code")  # the generators with tuning sets


def in_shapes(gen: str, base: int) -> list[tuple[str, int, int, int, str]]:
    """Sets of ``gen`` in the shapes (causes, failures, style) of its held-out list, seeds ``base``, ``base + 1``, ..."""
    shapes = [row for row in HELD_OUT if row[0] == gen]
    return [(gen, base + i, k, n, style) for i, (_, _, k, n, style) in enumerate(shapes)]


def tuning_sets() -> list[tuple[str, int, int, int, str]]:
    """The tuning sets: seeds 1-8 of each generator in ``TUNED``, in the shapes (causes, failures, style) of its
    held-out list."""
    return [row for gen in TUNED for row in in_shapes(gen, 1)]


SMALL_WEB = [(4, 250, "browser"), (4, 200, "script"), (5, 300, "browser"), (4, 300, "script"), (6, 250, "browser"),
             (5, 400, "script")]  # fmt: skip


def more_tuning_sets() -> list[tuple[str, int, int, int, str]]:
    """More tuning sets: ``web`` seeds 21-28 in its held-out shapes and the small sets 41-46 (``SMALL_WEB``); ``code``
    seeds 21-28 and 31-38 in its held-out shapes (added after failure-doc@v6: eight sets no longer told small changes
    apart)."""
    small = [("web", 41 + i, k, n, style) for i, (k, n, style) in enumerate(SMALL_WEB)]
    return in_shapes("web", 21) + small + in_shapes("code", 21) + in_shapes("code", 31)


def more_held_out_sets() -> list[tuple[str, int, int, int, str]]:
    """More held-out sets of ``web``, in its held-out shapes: seeds 310-317 (seen only after clusters@v7's choice)
    and 320-327 (generated after clusters@v9's)."""
    return in_shapes("web", 310) + in_shapes("web", 320)


def fresh_sets() -> list[tuple[str, int, int, int, str]]:
    """Sets never used for a choice: each generator's held-out shapes with seeds 110-117 (``failure_sets``), 210-217
    (``ops``) and 330-337 (``web``), and ``web`` 340-345 in the ``SMALL_WEB`` shapes (first generated after
    clusters@v9); ``code`` 500-507 and 510-517 in its held-out shapes (first generated after failure-doc@v5) and
    600-607, 610-617 (first generated after failure-doc@v12, before failure-doc@v13's choice, which read 500)."""
    out = in_shapes("failure_sets", 110) + in_shapes("ops", 210) + in_shapes("web", 330)
    out += [("web", 340 + i, k, n, style) for i, (k, n, style) in enumerate(SMALL_WEB)]
    return out + in_shapes("code", 500) + in_shapes("code", 510) + in_shapes("code", 600) + in_shapes("code", 610)


def held_out(
    folder: Path,
    minilm_max: int,
    generators: list[str] | None = None,
    max_failures: int = 0,
    *,
    tuning: bool = False,
    more_tuning: bool = False,
    confusion: float = 0.0,
    more_held_out: bool = False,
    fresh: bool = False,
    keep: Path | None = None,
) -> list[dict[str, Any]]:
    """ARI of each held-out set and model (``max_failures``: only sets of at most that many failures; ``tuning``:
    the tuning seeds instead, ``more_tuning``: and ``more_tuning_sets``; ``fresh``: ``fresh_sets`` instead;
    ``confusion``: print the table of cause by cluster of every set under that ARI; ``keep``: the folder whose
    stores are kept and reused)."""
    import pandas as pd
    from sklearn.metrics import adjusted_rand_score

    rows = []
    sets = (tuning_sets() + (more_tuning_sets() if more_tuning else [])) if tuning else HELD_OUT
    if fresh and not tuning:
        sets = fresh_sets()
    elif more_held_out and not tuning:
        sets = sets + more_held_out_sets()
    for gen, seed, k, n, style in sets:
        if (generators and gen not in generators) or (max_failures and n > max_failures):
            continue
        fs = GENERATORS[gen](seed=seed, n_causes=k, n_failures=n, style=style)
        db = (keep or folder) / f"{gen}-{seed}.duckdb"
        if keep is None or not db.exists():
            (res,) = ingest_paths([fs.write(folder / f"held-{seed}.jsonl")], db=db)
            if res.outcome != "ingested":
                raise SystemExit(f"{gen} seed {seed}: {res.outcome}: {res.error}")
        with reader(db) as con:
            failures = cl.failure_texts(con, benchmark=fs.benchmark)
        keys = zip(failures["run_id"], failures["task_id"], failures["sample"], strict=True)
        truth = [fs.truth[(r, t, int(s))] for r, t, s in keys]
        for name, emb in _embedders(n, minilm_max):
            t0 = time.perf_counter()
            vecs = _encode_distinct(emb, failures["text"].tolist())
            t1 = time.perf_counter()
            clusters = cl.build_clusters(failures, vecs, model=name)
            t2 = time.perf_counter()
            labels = clusters.members["cluster_id"]
            row = {
                "generator": gen, "seed": seed, "causes": k, "failures": n, "style": style, "model": name,
                "clusters": int((clusters.summary["cluster_id"] >= 0).sum()), "distinct": failures["text"].nunique(),
                "unclustered": round(float((labels == -1).mean()), 4),
                "ari": round(float(adjusted_rand_score(truth, labels)), 3),
                "embed_s": round(t1 - t0, 2), "cluster_s": round(t2 - t1, 2),
            }  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
            if row["ari"] < confusion:  # which causes join (a column with several) or split (a row with several)
                table = pd.crosstab(pd.Series(truth, name="cause"), pd.Series(labels.to_numpy(), name="cluster"))
                print(table.to_string(), flush=True)
    for gen in dict.fromkeys(str(r["generator"]) for r in rows):
        for name in dict.fromkeys(str(r["model"]) for r in rows):
            aris = [float(str(r["ari"])) for r in rows if r["generator"] == gen and r["model"] == name]
            print(
                f"# {gen} {name}: {sum(a >= 0.8 for a in aris)} of {len(aris)} sets reach ARI 0.8, "
                f"lowest {min(aris):.3f}, mean {sum(aris) / len(aris):.3f}",
                flush=True,
            )
    return rows


def demo(folder: Path, minilm_max: int) -> list[dict[str, Any]]:
    """The AD-Bench demo's clusters against its error codes."""
    from data.demo import adbench

    db = folder / "adb.duckdb"
    ingest_paths(adbench.generate(folder), db=db)
    with reader(db) as con:
        failures = cl.failure_texts(con, benchmark="ad-bench")
    rows = []
    for name, emb in _embedders(len(failures), minilm_max):
        clusters = cl.build_clusters(failures, _encode_distinct(emb, failures["text"].tolist()), model=name)
        q = cl.label_quality(clusters.members)
        row = {
            "set": "ad-bench demo", "failures": len(failures), "model": name,
            "clusters": int((clusters.summary["cluster_id"] >= 0).sum()),
            "ari": round(q["ari"], 3), "purity": round(q["purity"], 3), "single_code": q["n"],
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print one JSON line per set and model; with ``--json``, write them all to a file."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minilm-max", type=int, default=1000, help="largest set also embedded by the full MiniLM")
    ap.add_argument("--max-failures", type=int, default=0, help="only held-out sets of at most this many failures")
    ap.add_argument("--demo", action="store_true", help="also the AD-Bench demo against its error codes")
    ap.add_argument("--skip-held-out", action="store_true")
    ap.add_argument("--generator", action="append", choices=sorted(GENERATORS), help="only these generators' sets")
    ap.add_argument("--tuning", action="store_true", help="the tuning seeds 1-8 of each generator instead")
    ap.add_argument(
        "--more-tuning", action="store_true", help="with --tuning: also web seeds 21-28 and 41-46, code 21-28 and 31-38"
    )
    ap.add_argument("--more-held-out", action="store_true", help="also web seeds 310-317 and 320-327")
    ap.add_argument("--fresh", action="store_true", help="the sets never used for a choice (fresh_sets) instead")
    ap.add_argument("--keep", type=Path, help="keep each set's store in this folder and reuse it when there")
    ap.add_argument("--confusion", type=float, default=0.0, help="print cause by cluster for sets under this ARI")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="runlens-cluster-quality-") as tmp:
        out = (
            []
            if args.skip_held_out
            else held_out(
                Path(tmp),
                args.minilm_max,
                args.generator,
                args.max_failures,
                tuning=args.tuning,
                more_tuning=args.more_tuning,
                confusion=args.confusion,
                more_held_out=args.more_held_out,
                fresh=args.fresh,
                keep=args.keep,
            )
        )
        if args.demo:
            out += demo(Path(tmp), args.minilm_max)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
