"""The paired task bootstrap of a TMF analysis, in two parts: the replicates' points and frontiers (``replicates``:
what the runs' tasks give, whatever the market) and their value, stage and best run under one acceptance curve
(``uncertainty``: what a new hourly rate, willingness or exponent recomputes)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics import stats
from analytics.tmf.codes import (
    factorize_ids,
    ids_in,
    rows_where,
)
from analytics.tmf.model import (
    BOOT_GRID_POINTS,
    Acceptance,
    row_costs,
    upper_hull,
    value_from_arrays,
    values_from_frontiers,
)


@dataclass(frozen=True)
class Uncertainty:
    """A seeded paired task bootstrap of the whole TMF analysis over the comparison set (``bootstrap_tmf``).

    Attributes:
        n_replicates: resamples drawn (tasks with replacement, one draw shared by every run: paired).
        n_tasks: tasks resampled (the comparison set of the slice).
        stage_probability: {"1", "2", "3"} -> share of replicates in that stage.
        p_frontier: run id -> share of replicates where the run is on the frontier.
        p_best: run id -> share of replicates where the run is the best operating point; runs tied exactly (the
            same cost and performance in a replicate) share that replicate evenly. Both are bootstrap shares: how
            stable the estimate is under resampling of tasks, not the probability that a run is the best.
        value_ci95: 95% percentile interval of the value per task (area).
    """

    n_replicates: int
    n_tasks: int
    stage_probability: dict[str, float]
    p_frontier: dict[str, float]
    p_best: dict[str, float]
    value_ci95: tuple[float, float]


@dataclass(frozen=True)
class Replicates:
    """Every bootstrap replicate's run points and frontier (and hull vertices for the hull supply): the part of the
    bootstrap that no market assumption changes.

    Attributes:
        n_tasks: tasks resampled.
        ids: run ids (text), the columns of ``x`` and ``y``.
        x, y: ``(replicates, runs)`` cost (or latency) and performance of each run in each replicate; NaN where a
            run has no usable point in it.
        on_front: ``(replicates, runs)`` frontier membership.
        order: ``(replicates, width)`` each replicate's frontier runs by increasing x, then performance, then run
            id, in its first ``sizes`` entries.
        sizes: frontier size per replicate.
        hull: per replicate, the hull vertices' columns in frontier order (None: no hull; the frontier is the
            supply); only for the hull supply.
    """

    n_tasks: int
    ids: np.ndarray
    x: np.ndarray
    y: np.ndarray
    on_front: np.ndarray
    order: np.ndarray
    sizes: np.ndarray
    hull: tuple[np.ndarray | None, ...] | None = None

    def frontiers(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each replicate's frontier ``(x, y, run ids)`` sorted by x."""
        return [
            (x[o[:k]], y[o[:k]], self.ids[o[:k]])
            for x, y, o, k in zip(self.x, self.y, self.order, self.sizes, strict=True)
        ]


def replicates(
    rows: pd.DataFrame,
    points: pd.DataFrame,
    *,
    cost_source: str,
    axis: str,
    performance: str,
    supply: str,
    seed: int,
    n_replicates: int,
    slice_name: str,
    cur: pd.DataFrame | None = None,
    runs: pd.DataFrame | None = None,
) -> Replicates | None:
    """Resample the tasks of ``rows`` (one seeded draw for all runs) and find every replicate's points and frontier.

    Only runs of ``points`` that are agents with a cost and a finite performance take part; None when no row is
    left. ``runs``: the run details when ``rows`` has only their ``run_code``.
    """
    usable = points[(points["kind"] != "human") & points["has_cost"]]
    usable = usable[np.isfinite(usable["performance"].to_numpy(dtype=float))]
    rows = rows_where(rows, ids_in(rows, "run_id", usable["run_id"]))
    if rows.empty:
        return None
    cost, _ = row_costs(rows, cost_source=cost_source, cur=cur, runs=runs)
    x = cost if axis == "cost" else rows["latency_s"].to_numpy(dtype=float)
    y = rows["c"].to_numpy(dtype=float) / rows["n"].to_numpy(dtype=float)
    if performance == "mean_score":
        y = rows["score"].to_numpy(dtype=float)
    t_codes, t_ids = factorize_ids(rows, "task_id")
    r_codes, r_ids = factorize_ids(rows, "run_id")
    # the tasks x runs of x, then of y, side by side in one matrix (its two halves filled in place: no copy of
    # each and of the two stacked, 14 MB at 66,667 tasks x 13 runs)
    both = np.full((len(t_ids), 2 * len(r_ids)), np.nan)
    both[t_codes, r_codes], both[t_codes, r_codes + len(r_ids)] = x, y
    counts = resample_counts(len(t_ids), seed=seed, slice_name=slice_name, n_replicates=n_replicates)
    bx, by = np.hsplit(_replicate_means(counts, both), 2)
    ids = np.array([str(r) for r in r_ids], dtype=object)
    rank = np.argsort(np.argsort(ids))  # run-id order, the last tie-break of the analysis
    ok = np.isfinite(bx) & np.isfinite(by) & (bx > 0)
    # two runs whose task values differ in their last bits are at one point (``stats.settled``), tied
    xs, ys = stats.settled(np.where(ok, bx, np.nan)), stats.settled(np.where(ok, by, np.nan))
    on_front = _pareto_masks(xs, ys)
    # each replicate's frontier by increasing x, then performance, then run id (as ``_sorted_rows``; the keys
    # order every run, so one sort of all runs with the others put last gives the same rows)
    inf = np.inf
    order = np.lexsort((np.broadcast_to(rank, xs.shape), np.where(on_front, ys, inf), np.where(on_front, xs, inf)))
    sizes = on_front.sum(axis=1)
    hull = None
    if supply == "hull":
        hulls: list[np.ndarray | None] = []
        for xr, yr in zip(xs, ys, strict=True):
            hmask = np.zeros(len(ids), dtype=bool)
            hmask[upper_hull(xr, yr)] = True
            hulls.append(_sorted_rows(hmask, xr, yr, rank) if hmask.any() else None)
        hull = tuple(hulls)
    return Replicates(len(t_ids), ids, xs, ys, on_front, order, sizes, hull)


def uncertainty(rep: Replicates, acceptance: Acceptance) -> Uncertainty:
    """Stage, frontier membership, best run(s) and value area of every replicate of ``rep`` under ``acceptance``.

    The best operating point's run comes with every run at exactly the same cost and performance in that
    replicate (exact ties: they share the replicate), never only the one with the first run id.

    The value grid is coarser than the estimate's (``BOOT_GRID_POINTS``): the frontier's knots are on it either
    way, so the stage and the best point are unchanged and the area of a linear acceptance curve stays exact.
    """
    frontiers = rep.frontiers()
    if rep.hull is not None:
        values = []
        for x, y, (fx, fy, fids), v in zip(rep.x, rep.y, frontiers, rep.hull, strict=True):
            vx, vy = (fx, fy) if v is None else (x[v], y[v])
            values.append(
                value_from_arrays(fx, fy, fids, acceptance, vx=vx, vy=vy, supply="hull", grid_points=BOOT_GRID_POINTS)
            )
    else:  # the step supply: every replicate's value in one pass (the same numbers as one call each)
        values = values_from_frontiers(frontiers, acceptance, grid_points=BOOT_GRID_POINTS)
    n = len(frontiers)
    stages = np.array([val.stage for val in values], dtype=int)
    area = np.array([val.area for val in values], dtype=float)
    run_ids = [str(r) for r in rep.ids]
    tied = _tied_runs([val.best_run_id for val in values], run_ids, rep.x, rep.y)
    return Uncertainty(
        n,
        rep.n_tasks,
        {str(k): float((stages == k).mean()) for k in (1, 2, 3)},
        {r: float(rep.on_front[:, j].mean()) for j, r in enumerate(run_ids)},
        dict(zip(run_ids, _best_shares(tied, n), strict=True)),
        (float(np.nanquantile(area, 0.025)), float(np.nanquantile(area, 0.975))),
    )


def _tied_runs(best: list[str | None], run_ids: list[str], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(replicates, runs)``: the replicate's best run and every run at exactly its cost and performance (no run
    where the replicate has no best run)."""
    col = {r: j for j, r in enumerate(run_ids)}
    j = np.array([-1 if b is None else col[b] for b in best], dtype=np.intp)
    has = j >= 0
    at = np.arange(len(best))
    jx, jy = x[at, np.maximum(j, 0)], y[at, np.maximum(j, 0)]
    same = (x == jx[:, None]) & (y == jy[:, None]) & has[:, None]
    alone = has & ~same.any(axis=1)  # a best run whose own point is not a number: itself only
    same[at[alone], j[alone]] = True
    return same


def _best_shares(tied: np.ndarray, n: int) -> list[float]:
    """Per run, the share of the ``n`` replicates where it is the best run (``tied``: ``_tied_runs``), a replicate
    of ``k`` tied runs counting ``1/k`` for each, summed in replicate order (the same sums as adding them one by
    one)."""
    k = tied.sum(axis=1)
    share = np.zeros((tied.shape[0] + 1, tied.shape[1]))  # a first row of zeros: the sum of no replicate is 0
    with np.errstate(divide="ignore"):
        share[1:] = np.where(tied, 1.0 / k[:, None], 0.0)  # no best run in a replicate: it counts for nobody
    return [float(v) / n for v in np.cumsum(share, axis=0)[-1]]


def _replicate_means(counts: stats.ResampleCounts, matrix: np.ndarray) -> np.ndarray:
    """``_weighted_means(counts.dense(), matrix)`` without the float matrix of counts: its products in blocks of
    replicates (``ResampleCounts.sums``: the same means to about 1e-15 relative), the values' and the counts'
    products one product."""
    ok = np.isfinite(matrix)
    if ok.all():  # as ``_weighted_means``: the resample's size, not summed
        return _counts_sums(counts, matrix) / float(counts.shape[1])
    k = matrix.shape[1]
    sums = _counts_sums(counts, np.hstack([np.where(ok, matrix, 0.0), ok.astype(float)]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[:, :k] / sums[:, k:]


def _counts_sums(counts: stats.ResampleCounts, matrix: np.ndarray) -> np.ndarray:
    """``counts.sums(matrix)`` with its blocks shared between this thread and a second one (``_SUMMER``): the same
    blocks of replicates (``stats.SUMS_BLOCK`` bytes of float counts), each one product on one BLAS thread, so the
    same sums bit for bit, whichever thread multiplies which block. Each thread takes the next block not taken yet
    (on a loaded machine the second may start late or not at all: this thread then multiplies the rest), into a
    buffer of its own. At 10M attempts the page's first view multiplied 16 blocks of 66,667 x 52 on one core
    (0.10-0.14 s) while the other, the draw's, was idle: 0.06-0.10 s wall shared (BENCHMARKS.md "TMF first render at
    ten million, eleventh pass")."""
    from threadpoolctl import threadpool_limits

    n_boot, n_units = counts.shape
    step = max(1, stats.SUMS_BLOCK // (8 * max(n_units, 1)))
    if n_boot <= step:  # one block: nothing to share
        return counts.sums(matrix)
    out = np.empty((n_boot, matrix.shape[1]))
    blocks = iter(range(0, n_boot, step))
    taking = threading.Lock()

    def work() -> None:
        buf: np.ndarray | None = None
        while True:
            with taking:
                start = next(blocks, None)
            if start is None:
                return
            stop = min(start + step, n_boot)
            if buf is None:
                buf = np.empty((step, n_units))
            np.matmul(counts._rows(start, stop, buf), matrix, out=out[start:stop])

    # one BLAS thread each, as ``ResampleCounts.sums`` (under its lock: one caller sets and restores the limit)
    with stats._ONE_BLAS_THREAD, threadpool_limits(1, user_api="blas"):
        other = _SUMMER.submit(work)
        try:
            work()
        finally:
            other.result()
    return out


_SUMMER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tmf-replicate-sums")


def _weighted_means(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Per replicate and run, the mean of the finite cells over the resampled tasks: ``(replicates, runs)``. The
    reference of ``_replicate_means`` (one product over the whole float matrix of counts)."""
    ok = np.isfinite(matrix)
    if ok.all():  # every run has every task: each count is the resample's size, the number of units (columns of
        # ``weights``: a row of ``stats.resample_weights`` sums to it exactly, its counts being integers), not summed
        return (weights @ matrix) / float(weights.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.where(ok, matrix, 0.0)) / (weights @ ok.astype(float))


def _pareto_masks(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``pareto_mask`` of every row of ``x`` and ``y`` at once (the same masks): sorted by x then -y, a point is on
    the frontier when it is the best of its x and beats every strictly cheaper point."""
    valid = np.isfinite(x) & np.isfinite(y)
    x, y = np.where(valid, x, np.inf), np.where(valid, y, -np.inf)  # the invalid sort last and are never kept
    order = np.lexsort((-y, x), axis=-1)
    sx, sy, svalid = (np.take_along_axis(a, order, axis=-1) for a in (x, y, valid))
    cols = np.arange(x.shape[-1])
    is_start = np.ones(sx.shape, dtype=bool)
    is_start[:, 1:] = sx[:, 1:] != sx[:, :-1]
    start = np.maximum.accumulate(np.where(is_start, cols, 0), axis=-1)  # first point of each one's x
    top = np.take_along_axis(sy, start, axis=-1)
    best_so_far = np.maximum.accumulate(sy, axis=-1)
    cheaper = np.where(start > 0, np.take_along_axis(best_so_far, np.maximum(start - 1, 0), axis=-1), -np.inf)
    keep = svalid & (sy == top) & (top > cheaper)
    mask = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(mask, order, keep, axis=-1)
    return mask


def _sorted_rows(mask: np.ndarray, x: np.ndarray, y: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Indices of ``mask`` by increasing x, then performance, then run id (as the analysis sorts)."""
    rows = np.flatnonzero(mask)
    return rows[np.lexsort((rank[rows], y[rows], x[rows]))]


WeightsKey = tuple[int, int, str, int]  # (tasks, seed, slice name, replicates): what the seeded counts depend on


class _SharedDraw:
    """``stats.resample_counts(n_units, rng, n_boot=n_boot)``, drawn a block of replicates at a time by whichever
    thread asks for the next block: the thread of ``prefetch_weights`` from the start, and the thread that takes the
    result (``result``) as soon as it asks for it, instead of waiting. Each block's integers come from the generator
    under a lock, in block order (the generator gives the same integers in blocks of any size: ``_DRAW_BLOCK``), and
    are counted outside it: the same counts, row for row, while one core counts a block as the other draws the next
    (the page's first view waited for the draw on the other core at 10M attempts: 33 million integers, 33 MB of
    counts as bytes)."""

    def __init__(self, n_units: int, rng: np.random.Generator, n_boot: int) -> None:
        self._rng, self._n_units, self._n_boot = rng, n_units, n_boot
        self._block = max(1, _DRAW_BLOCK // max(n_units, 1))
        self._out: stats.ResampleCounts | None = None
        self._next = 0  # the first replicate no thread has drawn yet
        self._drawing = threading.Lock()  # the generator, and which block is next
        self._counting = threading.Condition()
        self._busy = 0  # blocks drawn and being counted
        self._error: BaseException | None = None
        self._stopped = False

    def stop(self) -> None:
        """Draw no more blocks (nobody will take the counts): the drawing thread ends after its block in hand."""
        self._stopped = True

    def work(self) -> None:
        """Draw and count blocks until none is left (the prefetching thread's task; ``result`` calls it too)."""
        while True:
            with self._drawing:
                start = self._next
                if start >= self._n_boot or self._error is not None or self._stopped:
                    return
                stop = min(start + self._block, self._n_boot)
                try:
                    if self._out is None:
                        self._out = stats.ResampleCounts(self._n_boot, self._n_units)
                    idx = self._rng.integers(0, self._n_units, size=(stop - start, self._n_units))
                except BaseException as exc:
                    self._error = exc
                    raise
                self._next = stop
                out = self._out
                with self._counting:
                    self._busy += 1
            try:
                out.count(start, idx)
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                with self._counting:
                    self._busy -= 1
                    self._counting.notify_all()

    def result(self) -> stats.ResampleCounts:
        """The counts: the blocks left are drawn here too, then the blocks in hand elsewhere are waited for."""
        try:
            self.work()
        finally:
            with self._counting:
                self._counting.wait_for(lambda: self._busy == 0)
        if self._error is not None:
            raise self._error
        if self._out is None:  # no replicate (``prefetch_weights`` starts none)
            return stats.ResampleCounts(self._n_boot, self._n_units)
        return self._out


_DRAW_BLOCK = stats.DRAW_BLOCK  # draws held at once, as ``stats.resample_weights`` holds them
_PREFETCHED: dict[WeightsKey, _SharedDraw] = {}
_PREFETCH_LOCK = threading.Lock()
_DRAWER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tmf-resample-weights")  # one draw at a time


def resample_counts(n_tasks: int, *, seed: int, slice_name: str, n_replicates: int) -> stats.ResampleCounts:
    """The bootstrap's seeded resample counts of ``n_tasks`` tasks (``stats.resample_counts`` with the slice's
    generator: ``stats.resample_weights``' counts): ``prefetch_weights``'s counts of the same key when one was
    started (the same draw: the counts depend on nothing else; this thread draws its blocks left with the drawing
    thread), else drawn here."""
    key = (int(n_tasks), int(seed), str(slice_name), int(n_replicates))
    with _PREFETCH_LOCK:
        started = _PREFETCHED.pop(key, None)
    if started is not None:
        return started.result()
    return stats.resample_counts(n_tasks, stats.stable_rng(seed, "tmf-boot", slice_name), n_boot=n_replicates)


def prefetch_weights(n_tasks: int, *, seed: int, slice_name: str, n_replicates: int) -> WeightsKey | None:
    """Start drawing ``resample_counts(n_tasks, ...)`` in a thread of its own, so the draw (33 million seeded
    integers and their counts at 10M attempts) runs while the caller reads and prepares the rows on the other core;
    ``resample_counts`` of the same key takes the result (and draws the blocks still left beside that thread).
    Returns the key (for ``discard_weights``), None when nothing is drawn (no task or no replicate, or the same key is
    being drawn already)."""
    key = (int(n_tasks), int(seed), str(slice_name), int(n_replicates))
    if n_tasks <= 0 or n_replicates <= 0:
        return None
    with _PREFETCH_LOCK:
        if key in _PREFETCHED:
            return None
        draw = _SharedDraw(int(n_tasks), stats.stable_rng(seed, "tmf-boot", slice_name), int(n_replicates))
        _PREFETCHED[key] = draw
        _DRAWER.submit(draw.work)
    return key


def discard_weights(key: WeightsKey | None) -> None:
    """Forget a ``prefetch_weights`` draw that nobody took (the analysis resampled another number of tasks, or
    none), so its counts are not kept."""
    if key is not None:
        with _PREFETCH_LOCK:
            draw = _PREFETCHED.pop(key, None)
        if draw is not None:
            draw.stop()
