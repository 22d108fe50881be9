"""Failure clusters: failed attempts grouped by what went wrong, named, with evidence and trends.

``load`` (each failure's rows, cached vectors and labels: the only queries; ``failure_clusters`` loads and
clusters), ``documents`` (the document of each failure, from its rows), ``compute`` (the clustering), ``compute_summary`` (names, evidence, trends), ``report`` (tables, JSON,
text), ``figures`` (Plotly).
docs/failure_analysis.md explains the method and its measurements."""

from analytics.clusters.compute import (
    CUT_DISTANCE,
    MAX_POINTS,
    MIN_SIZE,
    SEED,
    centred,
    cluster_vectors,
    context_features,
    document_features,
    document_parts,
    renumber,
)
from analytics.clusters.compute_summary import (
    LABEL_PROMPT_VERSION,
    UNCLUSTERED,
    ClusterError,
    Clusters,
    build_clusters,
    clean_label,
    content_key,
    distinctive_terms,
    key_phrases,
    label_messages,
    label_quality,
    representatives,
    share_trend,
    summary_from_json,
    summary_to_json,
    trend_sentence,
)
from analytics.clusters.documents import answer_against_reference, strip_run_specific
from analytics.clusters.figures import CLUSTER_COLORS, fig_clusters_by_run
from analytics.clusters.load import (
    CLUSTER_VERSION,
    DOC_VERSION,
    apply_llm_labels,
    cached_failure_vectors,
    cached_labels,
    clustering_key,
    document_table,
    failure_clusters,
    failure_documents,
    failure_frame,
    failure_texts,
    read_vectors,
    stored_clusters,
    stored_failure_texts,
    stored_members,
    undocumented_failures,
)
from analytics.clusters.report import by_run_frame, cut_at_word, display_table, text_report, to_json

__all__ = [
    "CLUSTER_COLORS", "CLUSTER_VERSION", "CUT_DISTANCE", "DOC_VERSION", "LABEL_PROMPT_VERSION", "MAX_POINTS", "MIN_SIZE", "SEED",
    "UNCLUSTERED", "ClusterError", "Clusters", "answer_against_reference", "apply_llm_labels", "build_clusters",
    "by_run_frame", "cached_failure_vectors", "cached_labels", "centred", "clean_label",
    "cluster_vectors", "clustering_key", "context_features", "content_key", "cut_at_word", "document_table", "display_table", "distinctive_terms", "document_features", "document_parts",
    "failure_clusters",
    "failure_documents", "failure_frame", "failure_texts", "fig_clusters_by_run", "key_phrases", "label_messages",
    "label_quality", "read_vectors", "renumber", "representatives", "share_trend", "stored_clusters",
    "stored_failure_texts", "stored_members", "strip_run_specific", "summary_from_json", "summary_to_json", "text_report", "to_json",
    "trend_sentence", "undocumented_failures",
]  # fmt: skip
