"""Evaluation: datasets, replay, metrics, sweeps, comparison, plots, results.

Data flows one way: dataset -> replay(strategy) -> per-probe rows -> metrics ->
DataFrame -> comparison and plots. Names are imported lazily (plots pull in matplotlib).
"""

from __future__ import annotations

from .._lazy import lazy_exports

# Functions that share their module's name are bound eagerly: importing a submodule sets
# the package attribute to the module, which would otherwise shadow the function.
from .compare import compare
from .replay import replay
from .sweep import sweep

_EXPORTS: dict[str, str] = {
    "Dataset": "dataset", "Dialogue": "dataset", "Session": "dataset", "Turn": "dataset",
    "Probe": "dataset", "DatasetError": "dataset",
    "load_dataset": "loaders", "load_any": "dataset_files",
    "replay_dialogue": "replay",
    "compute_metrics": "metrics", "summarize": "metrics", "metric_columns": "metrics",
    "grid_points": "sweep_config", "run_config": "sweep", "read_config": "sweep_config",
    "import_user_module": "user_modules",
    "compare_pair": "compare", "bootstrap_ci": "compare", "pairwise": "compare",
    "cluster_bootstrap_ci": "stats", "sign_flip_p_value": "stats", "holm": "stats",
    "loss_split": "loss",
    "permutation_test": "compare", "to_markdown": "compare",
    "plot_metric_vs_param": "plots", "plot_pareto": "plots", "plot_by_category": "plots",
    "plot_metric_at_k": "plots", "pareto_front": "plots",
    "save_results": "results", "load_results": "results", "run_provenance": "provenance",
    "eval_report": "report", "report_text": "report",
    "inspect_probes": "probe_table", "ProbeTable": "probe_table", "miss_reasons": "diagnosis",
    "miss_counts": "diagnosis", "miss_crosstab": "diagnosis", "question_type": "question_form",
}

__all__ = sorted(_EXPORTS) + ["compare", "replay", "sweep"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
