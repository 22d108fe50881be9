"""The IRT fit's task bootstrap of the abilities' sd on a store's responses, and (``--former``) the estimator it
replaced, on the same arrays: CPU seconds and the largest relative difference of the sds.

``python bench/bench_irt_bootstrap.py --db STORE [--benchmark bench-0] [--lock FILE] [--former] [--json OUT]``

The responses are read once (under ``--lock``, an ``flock`` held only for the read); then, in this process, the JML
start (``jml_start``, on (agent, task) cells), ``bootstrap_sd`` as ``estimate`` calls it (100 replicates, 30 above
300,000 observations, from that start) and, with ``--former``, the former estimator (every observation stepped 50
times per replicate from its own 200-step start: ``tests/test_irt_bootstrap.py``'s reference). Both draw the same
replicates, so their sds agree to rounding.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_scale import held  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a store location")
    parser.add_argument("--benchmark", default="bench-0")
    parser.add_argument("--lock", type=Path, help="an flock file held while the responses are read")
    parser.add_argument("--former", action="store_true", help="also time the former estimator (minutes at 10M)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import store as rdb
    from analytics.irt import IrtSettings, bootstrap_sd, jml_start, load_responses, prepare_arrays
    from analytics.irt.fit import boot_replicates, cells_of

    out: dict[str, object] = {"db": args.db, "benchmark": args.benchmark, "load_average": os.getloadavg()[0]}
    with held(args.lock), rdb.reader(args.db) as con:
        obs = load_responses(con, benchmark=args.benchmark)
    arrays = prepare_arrays(obs)
    settings = IrtSettings()
    n_boot = boot_replicates(settings, arrays.y.size)  # as estimate() draws them
    out.update(observations=int(arrays.y.size), cells=len(cells_of(arrays).trials), replicates=n_boot)
    cpu = time.process_time()
    start = jml_start(arrays)
    out["jml_start_cpu_s"] = round(time.process_time() - cpu, 2)
    cpu = time.process_time()
    sd = bootstrap_sd(arrays, n_boot=n_boot, seed=settings.seed, start=start)
    out["bootstrap_cpu_s"] = round(time.process_time() - cpu, 2)
    if args.former:
        from tests.test_irt_bootstrap import _reference_sd

        cpu = time.process_time()
        former = _reference_sd(arrays, n_boot=n_boot, seed=settings.seed)
        out["former_cpu_s"] = round(time.process_time() - cpu, 2)  # its own 200-step start included
        out["max_relative_difference"] = float(np.max(np.abs(sd / former - 1)))
    out["sd_range"] = [round(float(sd.min()), 5), round(float(sd.max()), 5)]
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["load_average_end"] = os.getloadavg()[0]
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
