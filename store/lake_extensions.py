"""The DuckDB extensions a lake needs, from PyPI only: ``ducklake``, ``postgres_scanner`` (PyPI's
``duckdb-extension-postgres``), ``sqlite_scanner`` and ``httpfs`` are loaded from the binaries the
``duckdb-extension-*`` packages ship (by their paths, or through an extension folder of links made here); nothing
is downloaded at run time. Also the S3 secret made from the usual AWS variables (store/lake.py uses both)."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

import duckdb

from store.errors import LakeError

# The extensions a lake needs, by the name DuckDB loads them under and the PyPI package that ships the binary.
EXTENSIONS = {
    "ducklake": ("duckdb_extension_ducklake", "ducklake"),
    "postgres_scanner": ("duckdb_extension_postgres", "postgres"),
    "httpfs": ("duckdb_extension_httpfs", "httpfs"),
    "sqlite_scanner": ("duckdb_extension_sqlite_scanner", "sqlite_scanner"),
}

_EXT_GUARD = threading.Lock()
_EXT_DIR: Path | None = None
_BINARIES: dict[str, Path] = {}


def shipped_binary(name: str) -> Path:
    """The binary of extension ``name`` (a key of ``EXTENSIONS``) inside the installed PyPI package that ships it.

    Raises:
        LakeError: the package is missing, or built for another DuckDB version than the one installed.
    """
    found = _BINARIES.get(name)
    if found is not None:
        return found
    package, shipped = EXTENSIONS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise LakeError(f"the {package.replace('_', '-')} package is not installed (requirements.txt pins it)")
    binary = Path(spec.origin).parent / "extensions" / f"v{duckdb.__version__}" / f"{shipped}.duckdb_extension"
    if not binary.is_file():
        raise LakeError(
            f"{package.replace('_', '-')} has no binary for DuckDB {duckdb.__version__} ({binary}); "
            "its version must equal DuckDB's (requirements.txt)"
        )
    _BINARIES[name] = binary.resolve()
    return _BINARIES[name]


def extension_dir() -> Path:
    """A DuckDB extension folder whose entries link to the binaries the PyPI packages ship (made once).

    Raises:
        LakeError: a package is missing, or built for another DuckDB version than the one installed.
    """
    global _EXT_DIR
    with _EXT_GUARD:
        if _EXT_DIR is not None:
            return _EXT_DIR
        version = f"v{duckdb.__version__}"
        probe = duckdb.connect(":memory:")
        try:
            platform = probe.execute("PRAGMA platform").fetchall()[0][0]
        finally:
            probe.close()
        root = Path(os.environ.get("RUNLENS_CACHE_DIR") or Path(tempfile.gettempdir()) / f"runlens-{os.getuid()}")
        folder = root / "duckdb-extensions" / version / platform
        folder.mkdir(parents=True, exist_ok=True)
        for name in EXTENSIONS:
            binary = shipped_binary(name)
            link = folder / f"{name}.duckdb_extension"
            if not link.exists() or link.resolve() != binary.resolve():
                tmp = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(binary)
                os.replace(tmp, link)  # atomic: another process never sees a half-made link
        _EXT_DIR = root / "duckdb-extensions"
        return _EXT_DIR


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def s3_secret(con: duckdb.DuckDBPyConnection) -> None:
    """An S3 secret from the usual AWS variables, when any is set (no variable: public or no S3 access)."""
    env = os.environ
    if not any(env.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL", "AWS_REGION")):
        return
    options = ["TYPE s3"]
    if env.get("AWS_ACCESS_KEY_ID"):
        options.append(f"KEY_ID {sql_literal(env['AWS_ACCESS_KEY_ID'])}")
        options.append(f"SECRET {sql_literal(env.get('AWS_SECRET_ACCESS_KEY', ''))}")
    if env.get("AWS_SESSION_TOKEN"):
        options.append(f"SESSION_TOKEN {sql_literal(env['AWS_SESSION_TOKEN'])}")
    options.append(f"REGION {sql_literal(env.get('AWS_REGION') or env.get('AWS_DEFAULT_REGION') or 'us-east-1')}")
    endpoint = env.get("AWS_ENDPOINT_URL")
    if endpoint:
        url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options.append(f"ENDPOINT {sql_literal(url.netloc + url.path.rstrip('/'))}")
        options.append("URL_STYLE 'path'")  # MinIO, Ceph and local servers serve buckets as paths
        options.append(f"USE_SSL {'true' if url.scheme == 'https' else 'false'}")
    con.execute(f"CREATE OR REPLACE SECRET runlens_s3 ({', '.join(options)})")


def enable_s3(con: duckdb.DuckDBPyConnection) -> None:
    """Load httpfs into ``con`` from the shipped binary and create the S3 secret (reading a Parquet export that sits
    on object storage)."""
    con.execute(f"SET extension_directory = {sql_literal(str(extension_dir()))}")
    con.execute("LOAD httpfs")
    s3_secret(con)
