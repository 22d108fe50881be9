"""Derived-data jobs: compute with ``analytics`` (which only reads) and keep the result through the store's one
writer (``store.derived``). Embeddings and cluster labels of failures, GEM embedding metrics, IRT fits and LLM
judge verdicts are made here; rule findings, which ingest makes inside each file's transaction, are in
``ingest/rules.py``. Pages (through ``ui.common.write``) and ``python -m analytics`` call these jobs; analytics
never does."""
