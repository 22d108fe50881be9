"""Put a store back to an older schema version, as a store written by an older Runlens would be: every table a
later migration creates is dropped (and every column it adds) and ``meta`` records the older version, so the next
writer applies the later migrations again (their backfills included)."""

from __future__ import annotations

import re

import duckdb

import store as rdb

_CREATE_TABLE = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_ADD_COLUMN = re.compile(r"\bALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)", re.IGNORECASE)


def roll_back(con: duckdb.DuckDBPyConnection, version: int) -> list[str]:
    """Drop the tables and added columns of the migrations after ``version`` and record ``version``; return the
    tables dropped."""
    dropped = []
    for number, _name, sql in rdb.migrations():
        if number > version:
            for table in _CREATE_TABLE.findall(sql):
                con.execute(f"DROP TABLE IF EXISTS {table}")
                dropped.append(table)
            for table, column in _ADD_COLUMN.findall(sql):  # a column added to an earlier table (gone or not)
                con.execute(f"ALTER TABLE IF EXISTS {table} DROP COLUMN IF EXISTS {column}")
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    return dropped
