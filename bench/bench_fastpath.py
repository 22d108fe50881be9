"""CPU time of decoding and validating native logs, with and without the fast path for attempt lines.

``python bench/bench_fastpath.py FILE.jsonl [FILE.jsonl ...] [--repeat 5]``

Each file's bytes go through ``parse_native`` and ``Normaliser.feed`` (no hashing, no Arrow, no database),
alternately with the fast path (ingest/fastpath.py) and without it (``decode_attempt`` patched to decline every
line), ``--repeat`` times each; the best CPU time of each path is reported per attempt. The garbage collector is
paused, as it is while ingest validates a file.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ingest.native  # noqa: E402
from ingest.errors import ProblemCollector  # noqa: E402
from ingest.records import Known, Normaliser  # noqa: E402


def validate_cpu_s(path: Path, data: bytes) -> tuple[float, int]:
    """CPU seconds to decode and validate ``data``, and the number of attempts."""
    started = time.process_time()
    bundle = Normaliser(Known(), ProblemCollector()).feed(ingest.native.parse_native(path, data, ProblemCollector()))
    return time.process_time() - started, len(bundle.attempts)


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    fast_decoder = ingest.native.decode_attempt
    print("| file | attempts | fast path µs/attempt | general path µs/attempt | speed-up |")
    print("|---|---:|---:|---:|---:|")
    gc.disable()
    try:
        for path in args.files:
            data = path.read_bytes()
            best = {"fast": float("inf"), "general": float("inf")}
            n = 0
            for _ in range(args.repeat):
                for mode in best:
                    ingest.native.decode_attempt = fast_decoder if mode == "fast" else (lambda raw: None)
                    seconds, n = validate_cpu_s(path, data)
                    best[mode] = min(best[mode], seconds)
            per = {mode: seconds / max(n, 1) * 1e6 for mode, seconds in best.items()}
            print(
                f"| {path.name} | {n:,} | {per['fast']:.1f} | {per['general']:.1f} | "
                f"{per['general'] / per['fast']:.2f}x |"
            )
    finally:
        ingest.native.decode_attempt = fast_decoder
        gc.enable()
    return 0


if __name__ == "__main__":
    sys.exit(main())
