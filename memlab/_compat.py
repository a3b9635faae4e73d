"""Old import paths, in one place: each still resolves, with a DeprecationWarning naming the
new home. Nothing in memlab imports an old path; ``memlab/__init__.py`` installs the finder.

- ``MOVED_MODULES``: an old module -> its new module (the old name is an alias of it), or
  -> ``{name: new module}`` when its names went to several homes (the old name is then a
  small module that looks each name up on first use).
- ``MOVED_NAMES``: a module that still exists -> ``{old name: new module}``, names that
  were re-exported there; a module ``__getattr__`` finds them.

Homes are named by string and imported on first use only, so this module sits at the
bottom layer (the layering test exempts it from its check of imports by string).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any, Sequence

_STEPS = "memlab.memories.layered.steps"

MOVED_MODULES: dict[str, str | dict[str, str]] = {
    "memlab.llm.loopback": "memlab.offline.loopback",
    "memlab.llm.offline": "memlab.offline.llm",
    "memlab.llm.text": "memlab.text",
    "memlab.retrieval.filters": "memlab.filters",
    "memlab.summarize": "memlab.summarizers",
    "memlab.memories.layered.summarize": "memlab.summarizers",
    "memlab.memories.layered.extraction": {
        **{name: "memlab.extraction" for name in ("CATEGORY_KEYWORDS", "ExtractedMemory", "Extractor",
                                                    "LLMExtractor", "RuleBasedExtractor", "parse_extraction")},
        "MEMORY_TYPES": "memlab.records"},
    "memlab.strategies.base": {"Context": "memlab.strategy", "Strategy": "memlab.strategy",
                               "registry": "memlab.strategies.registry"},
    "memlab.memories.layered.working": {
        "Answer": f"{_STEPS}.answer", "Filter": f"{_STEPS}.filter", "Load": f"{_STEPS}.load",
        "CONFLICT_INSTRUCTION": f"{_STEPS}.load", "DEFAULT_SYSTEM_PROMPT": f"{_STEPS}.load",
        "MEMORY_HEADER": f"{_STEPS}.load", "Retrieve": f"{_STEPS}.retrieve", "Update": f"{_STEPS}.update",
        "Layers": f"{_STEPS}.state", "Step": f"{_STEPS}.state", "WorkingState": f"{_STEPS}.state",
        "LongTermRetriever": "memlab.memories.layered.long_term",
        "HyDEExpander": "memlab.retrieval.llm_expansion", "LLMQueryRewriter": "memlab.retrieval.llm_expansion",
        "MultiQueryExpander": "memlab.retrieval.llm_expansion",
        "LLMRelevanceFilter": "memlab.retrieval.llm_filter"},
}

MOVED_NAMES: dict[str, dict[str, str]] = {
    "memlab.base": {"Registry": "memlab.registry"},
    "memlab.eval.calibration": {n: "memlab.eval.calibration_set" for n in (
        "DEFAULT_SEED", "LOCOMO_CODES", "LOCOMO_PER_CATEGORY", "LONGMEMEVAL_PER_TYPE",
        "LONGMEMEVAL_TYPES", "MAX_GOLD_WORDS", "NEGATIVE_KINDS", "POSITIVE_KINDS", "build_pairs", "has_date",
        "has_number", "locomo_questions", "longmemeval_questions", "reword", "wrong_date", "wrong_number")},
    "memlab.llm": {"OfflineLLM": "memlab.offline.llm"},
    "memlab.eval.replay": {"load_any": "memlab.eval.dataset_files",
                           "PARAM_PREFIX": "memlab.eval.configuration",
                           "flat_params": "memlab.eval.configuration"},
    "memlab.eval.sweep": {"load_any": "memlab.eval.dataset_files",
                          **{n: "memlab.eval.sweep_config" for n in ("grid_points", "read_config")},
                          **{n: "memlab.eval.sweep_outputs" for n in ("PLOT_FUNCTIONS", "PLOT_KINDS", "make_plot",
                                                                        "plot_file_name", "summary_markdown")}},
    "memlab.strategies.builtins": {**{n: "memlab.embeddings.named" for n in ("EMBEDDERS", "default_cache_path",
                                                                             "make_embedder")},
                                   "strong_tokenizer": "memlab.strategies.parts",
                                   "get": "memlab.strategies.spec", "names": "memlab.strategies.spec"},
    "memlab.strategies.retrieval": {"source_ids": "memlab.strategy"},
    "memlab.strategies.sessions": {n: "memlab.strategies.builtins" for n in ("bm25_session_prior", "bm25_sessions")},
    "memlab.strategies.recall_plus": {"recall_plus": "memlab.strategies.builtins"},
    "memlab.retrieval.tokenize": {"porter_stem": "memlab.text"},
    "memlab.eval.answers": {"locomo_f1": "memlab.eval.locomo_score", "probe_locomo_f1": "memlab.eval.locomo_score"},
    "memlab.eval.loaders": {n: "memlab.eval.loaders.checks" for n in ("first_char", "iter_json_array", "read_json")},
    "memlab.eval.loaders.native": {n: "memlab.eval.loaders.checks" for n in ("MAX_ERRORS", "check_dialogue")},
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: import it from {new}", DeprecationWarning, stacklevel=3)


def _name_getattr(module: str, names: dict[str, str], fallback: Any = None) -> Any:
    """A module ``__getattr__`` that finds ``names`` in their new homes (then ``fallback``)."""

    def __getattr__(name: str) -> Any:
        home = names.get(name)
        if home is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn(f"{module}.{name}", home)
        return getattr(importlib.import_module(home), name)

    return __getattr__


class _Alias(importlib.abc.Loader):
    """Loads an old module path: the new module itself, or a module of moved names."""

    def __init__(self, target: str | dict[str, str]) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        if isinstance(self.target, str):
            _warn(name, self.target)
            # the import system returns what sys.modules holds once this returns
            sys.modules[name] = importlib.import_module(self.target)
        else:
            homes = sorted(set(self.target.values()))
            module.__doc__ = f"Deprecated import path: its names live in {', '.join(homes)}."
            module.__getattr__ = _name_getattr(name, self.target)  # type: ignore[method-assign]
            module.__all__ = sorted(self.target)  # type: ignore[attr-defined]


class _WithOldNames(importlib.abc.Loader):
    """Runs a module's own loader, then gives the module a ``__getattr__`` for its old names."""

    def __init__(self, loader: Any, names: dict[str, str]) -> None:
        self.loader, self.names = loader, names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        own = module.__dict__.get("__getattr__")
        module.__getattr__ = _name_getattr(module.__name__, self.names, own)  # type: ignore[method-assign]

    def __getattr__(self, attr: str) -> Any:  # get_source, get_code, is_package, ... for tools
        return getattr(self.loader, attr)


class CompatFinder(importlib.abc.MetaPathFinder):
    """The meta path finder for the old paths; every other module is left to the others."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        moved = MOVED_MODULES.get(fullname)
        if moved is not None:
            return importlib.machinery.ModuleSpec(fullname, _Alias(moved))
        names = MOVED_NAMES.get(fullname)
        if names is not None:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _WithOldNames(spec.loader, names)
            return spec
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before the path finder, which would
    otherwise load the modules of ``MOVED_NAMES`` without their old names."""
    if not any(isinstance(f, CompatFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, CompatFinder())
