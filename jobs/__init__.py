"""Derived-data jobs: compute with ``analytics`` (which only reads) and keep the result through the store's one
writer (``store.derived``). Embeddings and cluster labels of failures, GEM embedding metrics, IRT fits, LLM
judge verdicts, rule findings recomputed for whole benchmarks (``rules``) and human reviews (``reviews``) are made
here; the rule findings ingest makes inside each file's transaction are ``ingest/rules.py``'s. Pages (through
``ui.common.write``) and the command line (``cli/``) call these jobs; analytics and ingest never do."""
