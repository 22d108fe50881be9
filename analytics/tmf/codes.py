"""A TMF frame's integer run and task codes: what a row's run or task is, found once per frame (``coded_rows``)
rather than by comparing text ids on each of 867k (run, task) rows at 10M attempts; and per-row run details taken
from the run's row by its code."""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np
import pandas as pd


def rows_where(frame: pd.DataFrame, mask: np.ndarray | pd.Series) -> pd.DataFrame:
    """The rows of ``frame`` where ``mask`` is true: ``frame`` itself when it keeps them all (no copy of every
    column of 867k (run, task) rows at 10M attempts; nothing changes a frame in place)."""
    keep = np.asarray(mask, dtype=bool)
    return frame if keep.all() else frame[keep]


CODE_COLUMNS = {"run_id": "run_code", "task_id": "task_code"}  # integer columns ``load`` adds: one id per code


def factorize_ids(rows: pd.DataFrame, id_col: str) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(rows[id_col])``: codes in order of first appearance and the ids (the same codes and ids),
    from the row's integer code (``CODE_COLUMNS``, one id per code) when ``rows`` has it, which hashes integers
    instead of every row's text."""
    code_col = CODE_COLUMNS.get(id_col)
    if code_col is None or code_col not in rows:
        codes, uniques = pd.factorize(rows[id_col])
        return codes, uniques
    codes, first = coded_rows(rows, code_col)
    ids = rows[id_col]
    return codes, pd.Index(ids.to_numpy()[first], dtype=ids.dtype)


def first_rows_of(rows: pd.DataFrame, id_col: str) -> np.ndarray:
    """``first_rows(factorize_ids(rows, id_col)[0])``: each id's first row (from ``coded_rows`` when ``rows`` has
    the id's code column)."""
    code_col = CODE_COLUMNS.get(id_col)
    if code_col is None or code_col not in rows:
        return first_rows(factorize_ids(rows, id_col)[0])
    return coded_rows(rows, code_col)[1]


def coded_rows(rows: pd.DataFrame, code_col: str) -> tuple[np.ndarray, np.ndarray]:
    """``factorize_codes`` of ``rows[code_col]`` and their ``first_rows``, made once per frame and column.

    One analysis asks for them about ten times of the same frame (``load``'s rows, or the same rows passed on whole
    by ``rows_where``): 0.1-0.2 CPU s of the first view's main thread for 867k rows at 10M attempts. The arrays
    are read-only (every caller shares them). An entry is checked against the column's array (the same memory,
    which the entry holds so it cannot be reused, of the same length) and dropped with its frame; frames are not
    changed in place here (``rows_where``), a frame whose column is replaced gets new codes."""
    column = np.asarray(rows[code_col].to_numpy())
    key = (id(rows), code_col)
    with _CODED_LOCK:
        held = _CODED.get(key)
    if held is not None and held[0]() is rows and _same_array(held[1], column):
        return held[2], held[3]
    codes = factorize_codes(column)  # a new array (never the frame's column itself)
    first = first_rows(codes)
    codes.flags.writeable = False
    first.flags.writeable = False
    try:
        ref = weakref.ref(rows, functools.partial(_forget_coded, key))
    except TypeError:  # not weakly referable: computed each time
        return codes, first
    with _CODED_LOCK:
        _CODED[key] = (ref, column, codes, first)
    return codes, first


_CODED: dict[tuple[int, str], tuple[weakref.ref[pd.DataFrame], np.ndarray, np.ndarray, np.ndarray]] = {}
_CODED_LOCK = threading.Lock()


def _forget_coded(key: tuple[int, str], _: object = None) -> None:
    with _CODED_LOCK:
        _CODED.pop(key, None)


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """The same values' memory: the same start, length, stride and type."""
    return (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
    )


def factorize_codes(codes: np.ndarray) -> np.ndarray:
    """``pd.factorize(codes)[0]`` of integer codes: a copy of ``codes`` themselves when they are numbered already in
    order of first appearance (as ``load`` gives a run's and a task's code: rows by run, then by task), without
    hashing every row (867k rows at 10M attempts).

    They are when the first is 0, none is negative and each is at most one more than every code before it: each
    new code is then the next integer, which is the code ``pd.factorize`` gives it (by induction, the codes seen
    so far are always 0..their running maximum)."""
    x = np.asarray(codes)
    if x.size and x.dtype.kind in "iu" and x[0] == 0:
        seen = np.maximum.accumulate(x)[:-1]  # the largest code before each row after the first
        if bool((x[1:] <= seen + 1).all()) and x.min() >= 0:
            return x.astype(np.intp)
    return pd.factorize(x)[0]


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of every code of ``codes`` (codes 0..k-1 in order of first appearance, as ``pd.factorize``
    gives them): ``np.unique(codes, return_index=True)[1]`` without a sort."""
    if codes.size == 0:
        return np.zeros(0, dtype=np.intp)
    # a code appears for the first time exactly where it exceeds every code before it
    before = np.maximum.accumulate(codes)[:-1]
    return np.flatnonzero(codes > np.concatenate([[-1], before]))


def last_rows(codes: np.ndarray) -> np.ndarray:
    """The last row of every code of ``codes`` (codes 0..k-1, each present), in code order: what
    ``np.maximum.at(last, codes, np.arange(codes.size))`` leaves in ``last``, without a ufunc call per row."""
    order = stable_order(codes)
    ends = np.flatnonzero(codes[order][1:] != codes[order][:-1])  # the last of each code's run in code order
    return order[np.append(ends, codes.size - 1)] if codes.size else np.zeros(0, dtype=np.intp)


def stable_order(codes: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")``; the identity when the codes never decrease (rows grouped by run, as
    ``load`` gives them)."""
    if codes.size == 0 or bool((codes[1:] >= codes[:-1]).all()):
        return np.arange(codes.size)
    return np.argsort(codes, kind="stable")


def ids_in(rows: pd.DataFrame, id_col: str, ids: object) -> np.ndarray:
    """``rows[id_col].isin(ids)`` as a boolean array, one lookup per distinct id when ``rows`` has its code."""
    code_col = CODE_COLUMNS.get(id_col)
    if code_col is None or code_col not in rows:
        return rows[id_col].isin(ids).to_numpy(dtype=bool)  # type: ignore[arg-type]
    codes, uniques = factorize_ids(rows, id_col)
    wanted = pd.Index(uniques).isin(ids)  # type: ignore[arg-type]
    return np.asarray(wanted, dtype=bool)[codes] if codes.size else np.zeros(0, dtype=bool)


def run_values(rows: pd.DataFrame, col: str, runs: pd.DataFrame | None = None) -> np.ndarray:
    """Per row of ``rows``, its run's ``col``: the row's own column when it has one (a frame built by hand), else
    the run's in ``runs`` (``load``'s runs, by the row's ``run_code``: run details are kept once per run)."""
    if col in rows or runs is None:
        return rows[col].to_numpy()
    return runs[col].to_numpy()[rows["run_code"].to_numpy()]


def run_is_agent(rows: pd.DataFrame, runs: pd.DataFrame | None = None) -> np.ndarray:
    """Per row of ``rows``, whether its run is not a human run: ``run_values(rows, "kind", runs) != "human"``,
    compared once per run when ``runs`` holds the kinds (not once per row: 867k rows at 10M attempts)."""
    if "kind" in rows or runs is None:
        return np.asarray(rows["kind"].to_numpy() != "human", dtype=bool)
    return np.asarray(runs["kind"].to_numpy() != "human", dtype=bool)[rows["run_code"].to_numpy()]


def run_values_at(rows: pd.DataFrame, col: str, runs: pd.DataFrame | None, at: np.ndarray) -> np.ndarray:
    """``run_values(rows, col, runs)[at]``, taking only the rows ``at`` (a run's details for its first row, not
    for each of 867k rows at 10M attempts)."""
    if col in rows or runs is None:
        return rows[col].to_numpy()[at]
    return runs[col].to_numpy()[rows["run_code"].to_numpy()[at]]
