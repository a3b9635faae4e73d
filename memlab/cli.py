"""The ``memlab`` command: eval, sweep, compare, strategies, serve-llm.

    memlab eval DATASET [--format F] [--option key=value ...] [--strategy NAME] [--set key=value ...]
                [--k 5] [--budget TOKENS ...] [--json] [--progress | --quiet]
                [--probe-position end|after_evidence] [--categories A,B] [--n-jobs N]
                [--output FILE] [--max-failures N] [--answer-llm LLM] [--judge-llm LLM]
                [--allow-uncalibrated-judge] [--judge-prompt-set NAME] [--import FILE.py ...]
    memlab sweep CONFIG.toml [--output DIR] [--n-jobs N] [--fresh] [--progress | --quiet]
    memlab compare RESULTS [RESULTS ...] --metric M [--a LABEL --b LABEL] [--json]
                   [--n-resamples N] [--seed S] [--show N [--dataset FILE]]
    memlab strategies [--import FILE.py ...]
    memlab serve-llm [--model NAME | PATH.gguf] [--host 127.0.0.1] [--port 8077] [--api-key KEY]
                     [--alias NAME] [--chat-format F] [--n-ctx N] [--n-threads N] [--n-gpu-layers N]
    memlab --version

Bad input ends with one line on stderr and exit status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, NoReturn, Sequence

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one readable line instead of usage + message
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="memlab", description="Evaluate memory strategies of LLM agents.")
    p.add_argument("--version", action="store_true", help="print memlab's version and where it is imported from")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    e = sub.add_parser("eval", help="replay a dataset into one strategy and print metrics")
    e.add_argument("dataset", help="dataset file, a folder a format reads whole, or a folder of native files")
    # no argparse choices: a format registered by an --import module is known only after it runs
    e.add_argument("--format", default=None, metavar="FORMAT",
                   help="a registered dataset format (native, locomo, longmemeval, ...; default: detect)")
    e.add_argument("--strategy", default="bm25", help="registered strategy name (default: bm25)")
    e.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a strategy parameter (factory argument or nested key); repeatable; "
                        "VALUE is JSON if it parses, else a string")
    e.add_argument("--k", type=int, default=5, help="cut-off k for the metrics (default 5)")
    e.add_argument("--budget", dest="budgets", type=int, action="append", default=[], metavar="TOKENS",
                   help="token budget for token-matched metrics (recall@<B>tok, hit_rate@<B>tok, "
                        "tokens@<B>tok); repeatable")
    e.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    _progress_flags(e)
    e.add_argument("--probe-position", choices=["end", "after_evidence"], default=None,
                   help="LoCoMo: ask each question at the end (default) or right after its evidence")
    e.add_argument("--option", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the dataset format's loader, e.g. --option roles=all (LongMemEval: "
                        "every turn, not only user turns); repeatable; true/false, numbers and a,b lists "
                        "are read by the option's type")
    e.add_argument("--categories", default=None, help="comma-separated probe categories to keep")
    e.add_argument("--n-jobs", type=int, default=1, help="dialogues replayed in parallel (joblib)")
    e.add_argument("--output", default=None, help="also save per-probe rows (.parquet or .csv)")
    e.add_argument("--max-failures", type=int, default=None, metavar="N",
                   help="stop when more than N probes' LLM steps failed for good (default: 5%% of "
                        "the probes, at least 3); each failed probe is a row with 'error' set")
    e.add_argument("--answer-llm", type=_llm_name, default=None, metavar="LLM",
                   help="also answer each probe from its context and score token F1: offline, openai "
                        "(MEMLAB_LLM_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY), local (the default local model), "
                        "local:NAME (a registered model) or local:PATH.gguf")
    e.add_argument("--judge-llm", type=_llm_name, default=None, metavar="LLM",
                   help="also label answers CORRECT/WRONG with an LLM judge (needs --answer-llm; same names as "
                        "--answer-llm). The judge is first calibrated on pairs built from LoCoMo and LongMemEval "
                        "(cached) and refused below 90%% accuracy or outside a 5-95%% CORRECT rate")
    e.add_argument("--allow-uncalibrated-judge", action="store_true",
                   help="use a judge that failed (or could not run) the calibration; the result records it")
    e.add_argument("--judge-prompt-set", default="lenient", metavar="NAME",
                   help="the judge's prompts: lenient (default), strict, or longmemeval (LongMemEval's "
                        "yes/no prompt per question type); NAME or NAME@VERSION")
    e.add_argument("--import", dest="imports", action="append", default=[], metavar="FILE.py",
                   help="a Python file that registers strategies; repeatable")
    s = sub.add_parser("sweep", help="run a sweep file: results table, summary and plots")
    s.add_argument("config", help="sweep file (TOML)")
    s.add_argument("--output", default=None,
                   help="output folder (default: the file's [run] output, else runs/<file name>)")
    s.add_argument("--n-jobs", type=int, default=None, help="dialogues replayed in parallel")
    s.add_argument("--fresh", action="store_true",
                   help="recompute every cell (default: reuse the cells an interrupted run of the "
                        "same configuration left in OUTPUT/cells)")
    _progress_flags(s)
    c = sub.add_parser("compare", help="paired comparison of strategies on one metric, clustered by dialogue")
    c.add_argument("results", nargs="+", help="results files (.parquet/.csv from eval --output or a sweep)")
    c.add_argument("--metric", required=True, help="per-probe metric column, e.g. recall@512tok")
    c.add_argument("--a", default=None, help="label of strategy A (a value of the strategy column)")
    c.add_argument("--b", default=None, help="label of strategy B")
    c.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    c.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap / permutation resamples")
    c.add_argument("--seed", type=int, default=0, help="random seed of the resampling (default 0)")
    c.add_argument("--show", type=int, default=0, metavar="N",
                   help="then the N probes where A beats B most and the N where B beats A most")
    c.add_argument("--dataset", default=None,
                   help="the dataset the results were run on: --show prints its turns' text")
    st = sub.add_parser("strategies", help="list the registered strategies")
    st.add_argument("--import", dest="imports", action="append", default=[], metavar="FILE.py",
                    help="a Python file that registers strategies: they are listed too, with their "
                         "parameters; repeatable")
    _serve_llm_parser(sub)
    return p


def _serve_llm_parser(sub: Any) -> None:
    v = sub.add_parser("serve-llm", help="serve a GGUF model as an OpenAI-compatible endpoint (llama.cpp)")
    v.add_argument("--model", default=None,
                   help="a registered model name (memlab.llm.models: qwen2.5-coder-1.5b, the default; "
                        "qwen2.5-coder-0.5b; gemma-3-270m) or a GGUF file")
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    v.add_argument("--port", type=int, default=8077, help="port (default 8077)")
    v.add_argument("--api-key", default=os.environ.get("MEMLAB_SERVE_API_KEY"),
                   help="require this bearer key (default: $MEMLAB_SERVE_API_KEY; none: no key asked)")
    v.add_argument("--alias", default="local", help="model name the server reports (default: local)")
    v.add_argument("--chat-format", default=None, help="llama.cpp chat format (default: the model's own)")
    v.add_argument("--n-ctx", type=int, default=8192, help="context window in tokens (default 8192)")
    v.add_argument("--n-threads", type=int, default=None,
                   help="CPU threads (default: the CPUs other work leaves free, by the load average)")
    v.add_argument("--n-gpu-layers", type=int, default=None,
                   help="layers on the GPU of a GPU build (-1: all; default: all when a GPU is visible, else 0)")


def _llm_name(value: str) -> str:
    """An --answer-llm / --judge-llm value: offline, openai, local, local:NAME or local:PATH.gguf."""
    if value in ("offline", "openai", "local") or (value.startswith("local:") and len(value) > len("local:")):
        return value
    from .llm.models import MODELS

    raise argparse.ArgumentTypeError(f"expected offline, openai, local, local:NAME ({', '.join(MODELS)}) or "
                                     f"local:PATH.gguf, got {value!r}")


def _local_model(value: str | None) -> dict[str, Any]:
    """serve-llm --model: a registered name -> model=..., anything else -> model_path=..."""
    from .llm.models import MODELS

    if value is None:
        return {}
    return {"model": value} if value in MODELS else {"model_path": value}


def cmd_serve_llm(args: argparse.Namespace) -> int:
    from .llm.local import LocalLLM
    from .llm.local_server import serve

    if not 0 < args.port < 65536:
        raise _UsageError(f"memlab serve-llm: --port must be in 1..65535, got {args.port}")
    llm = LocalLLM(**_local_model(args.model), chat_format=args.chat_format, n_ctx=args.n_ctx,
                   n_threads=args.n_threads, n_gpu_layers=args.n_gpu_layers)
    print(f"memlab serve-llm: {llm.resolved_path().name} as {args.alias!r} on http://{args.host}:{args.port}/v1"
          f"{' (API key required)' if args.api_key else ''}", file=sys.stderr, flush=True)
    serve(llm, host=args.host, port=args.port, api_key=args.api_key, model_alias=args.alias)
    return 0


def _progress_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", action="store_true",
                   help="draw progress bars on stderr even when it is not a terminal")
    g.add_argument("--quiet", action="store_true", help="no progress bars")


def _show_progress(args: argparse.Namespace) -> bool:
    """Bars go to stderr (so --json output stays clean): on a terminal, or when asked."""
    if args.quiet:
        return False
    return bool(args.progress or sys.stderr.isatty())


def parse_set(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise _UsageError(f"memlab eval: --set expects KEY=VALUE, got {item!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip()] = value
    return out


def _loader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The dataset loader's options: each ``--option KEY=VALUE`` read by the option's type
    (``memlab.eval.loaders.parse_loader_options``), and ``--probe-position``."""
    from .eval.dataset import DatasetError
    from .eval.dataset_files import dataset_format
    from .eval.loaders import parse_loader_options

    texts: dict[str, str] = {}
    for item in args.options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _UsageError(f"memlab eval: --option expects KEY=VALUE, got {item!r}")
        texts[key.strip()] = value.strip()
    if args.probe_position and "probe_position" in texts:
        raise _UsageError("memlab eval: give --probe-position or --option probe_position=..., not both")
    options: dict[str, Any] = dict(texts)
    fmt = dataset_format(args.dataset, args.format) if texts else None
    if fmt is not None:  # else the load says what is wrong with the file (missing, unknown format)
        try:
            options = parse_loader_options(fmt, texts)
        except DatasetError as exc:
            raise _UsageError(f"memlab eval: --option: {exc}") from None
    if args.probe_position:
        options["probe_position"] = args.probe_position
    return options


def cmd_eval(args: argparse.Namespace) -> int:
    from .base import MemlabError
    from .eval.report import eval_report
    from .eval.results import save_results
    from .eval.streaming import StreamedDataset, open_dataset, replay_any
    from .eval.sweep import import_user_module
    from .strategies import get

    if args.k < 1:
        raise _UsageError(f"memlab eval: --k must be at least 1, got {args.k}")
    if args.max_failures is not None and args.max_failures < 0:
        raise _UsageError(f"memlab eval: --max-failures must be >= 0, got {args.max_failures}")
    if args.n_jobs == 0:
        raise _UsageError("memlab eval: --n-jobs must be non-zero (-1: every core), got 0")
    bad = [b for b in args.budgets if b < 1]
    if bad:
        raise _UsageError(f"memlab eval: --budget must be a positive number of tokens, got {bad[0]}")
    for module in args.imports:
        import_user_module(module)
    _check_strategy_name(args.strategy)  # before the dataset is read
    if args.format is not None:
        from .eval.loaders import get_loader

        get_loader(args.format)  # an unknown format: one line with did-you-mean and the registered ones
    options = _loader_options(args)
    # a format whose loader can iterate streams (LongMemEval: one question held at a time, the S
    # file is 278 MB of JSON); the others are read whole
    dataset = open_dataset(args.dataset, args.format, **options)
    if args.categories:
        dataset = dataset.subset(categories=[c.strip() for c in args.categories.split(",")])
    streamed = isinstance(dataset, StreamedDataset)
    if not streamed and dataset.n_probes == 0:
        raise MemlabError(f"{args.dataset}: no probes (questions) to evaluate")
    strategy = get(args.strategy, **parse_set(args.sets))
    answerer = judge = None
    if args.judge_llm and not args.answer_llm:
        raise _UsageError("memlab eval: --judge-llm needs --answer-llm")
    if args.answer_llm:
        from .eval.answers import Answerer, LLMJudge
        from .offline.named import make_llm

        answerer = Answerer(make_llm(args.answer_llm))
        # the judge keeps its own llama.cpp context (kv_slot): the answerer's prompts would
        # otherwise evict its prompt prefix between two questions
        judge = (LLMJudge(make_llm(args.judge_llm, kv_slot="judge"), prompt_set=args.judge_prompt_set)
                 if args.judge_llm else None)
    calibration, refusal = _calibrate_judge(judge, args) if judge is not None else (None, None)
    ks = sorted({1, args.k})
    start = time.perf_counter()
    budgets = sorted(set(args.budgets))
    rows = replay_any(strategy, dataset, ks=ks, k_max=args.k, label=args.strategy, n_jobs=args.n_jobs,
                      progress=_show_progress(args), answerer=answerer, judge=judge, budgets=budgets,
                      max_failures=args.max_failures)
    seconds = time.perf_counter() - start
    if streamed and dataset.n_probes == 0:  # counted as it streamed
        raise MemlabError(f"{args.dataset}: no probes (questions) to evaluate")
    if args.output:
        save_results(rows, args.output)
    result = eval_report(rows, dataset, strategy=args.strategy, k=args.k, budgets=budgets, seconds=seconds,
                         judge=judge, calibration=calibration, refusal=refusal,
                         allow_uncalibrated_judge=args.allow_uncalibrated_judge, data=[args.dataset])
    if args.json:
        print(json.dumps(result, sort_keys=False))
    else:
        _print_summary(result, rows, args.k)
    return 0


def _calibrate_judge(judge: Any, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """The judge's calibration (memlab.eval.calibration, cached) and the gate's refusal line (None
    when it passes), reported on stderr before any answer is made. A refused judge, or one that
    cannot be calibrated, ends the command (exit 2) unless --allow-uncalibrated-judge."""
    from .base import MemlabError
    from .eval.calibration import calibrate, gate, summary_line

    override = " (--allow-uncalibrated-judge: used anyway)"
    hint = "; pass --allow-uncalibrated-judge to use it anyway"
    try:
        calibration = calibrate(judge, progress=_calibration_progress() if _show_progress(args) else None)
    except MemlabError as exc:
        if not args.allow_uncalibrated_judge:
            raise _UsageError(f"memlab eval: --judge-llm: the judge cannot be calibrated: {exc}{hint}") from None
        reason = f"not calibrated: {exc}"
        print(f"memlab eval: judge {reason}{override}", file=sys.stderr)
        return None, reason
    print(f"memlab eval: {summary_line(calibration)}", file=sys.stderr)
    refusal = gate(calibration)
    if refusal is not None:
        if not args.allow_uncalibrated_judge:
            raise _UsageError(f"memlab eval: --judge-llm refused: {refusal}{hint}")
        print(f"memlab eval: {refusal}{override}", file=sys.stderr)
    return calibration, refusal


def _calibration_progress() -> Any:
    from tqdm import tqdm

    bar: dict[str, Any] = {}

    def step(done: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, desc="judge calibration", file=sys.stderr)
        bar["bar"].update(1)
        if done == total:
            bar["bar"].close()

    return step


def _print_summary(result: dict[str, Any], rows: Any, k: int) -> None:
    from .eval.metrics import summarize

    print(f"strategy {result['strategy']} on {result['dataset']} "
          f"({result['n_dialogues']} dialogues, {result['n_probes']} probes, {result['n_scored']} scored, "
          f"{result['n_failed']} failed, {result['seconds']} s)")
    if result["n_failed"]:
        first = rows["error"].dropna().iloc[0]
        print(f"  {result['n_failed']} probe(s) failed (metrics NaN, rows keep 'error'); first: {first}")
    print(f"dataset report: {result['dataset_report']['summary']}")
    from .eval.metrics import COST_COLUMNS, is_metric_column, nan_notes, nan_reason, parse_column, report_columns

    missing = []
    for name, value in result.items():
        if is_metric_column(name) or name in COST_COLUMNS or name.startswith(("llm_", "stale_")):
            if value is None:
                missing.append(name)
                continue
            ci = result["ci"].get(name)
            interval = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci and None not in ci else ""
            print(f"  {name:<26} {value:.4f}{interval}" if isinstance(value, float) else f"  {name:<26} {value}")
    if result.get("locomo_f1") is not None:  # the field's disputes turn on the adversarial rule: say it
        from .eval.locomo_score import CATEGORY5_POLICY

        print(f"  note: {CATEGORY5_POLICY}")
    if result.get("judge_prompt_set"):
        print(f"  judge: {result['judge_prompt_set']} prompts, model {result['judge_model']}")
        cal, gate = result.get("judge_calibration"), result.get("judge_gate") or {}
        if cal:
            print(f"  judge calibration: accuracy {cal['accuracy']:.3f} on {cal['n_pairs']} pairs, CORRECT-label "
                  f"rate {cal['label_rate']:.3f}, kappa vs LoCoMo F1>={cal['f1_threshold']} "
                  f"{'n/a' if cal['kappa_f1'] is None else format(cal['kappa_f1'], '.3f')}")
        if gate.get("override"):
            print(f"  judge gate OVERRIDDEN (--allow-uncalibrated-judge): {gate.get('reason')}")
    for name in missing:  # a NaN mean is never printed without its reason
        why = "no scored probes" if not result["n_scored"] else f"no probe has a value: {nan_reason(name)}"
        if name == "stale_rate":
            why = "no probe names stale evidence"
        print(f"  {name:<26} n/a  ({why})")
    if "category" in rows and rows["category"].notna().any():
        cols = [c for c in report_columns(rows.columns, brief=True) if parse_column(c).k in (None, k)]
        cols += ["context_tokens"] if "context_tokens" in rows else []
        table = summarize(rows, by=["strategy"], metrics=cols, per_category=True).drop(columns=["strategy"])
        print()
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}", na_rep="n/a"))
        for note in nan_notes(table, by=["category"]):
            print(f"note: {note}")


def cmd_sweep(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .eval.sweep import read_config, run_config

    path = Path(args.config)
    config = read_config(path)
    output = Path(args.output).resolve() if args.output else None
    if output is None and "output" not in config.get("run", {}):
        output = (Path("runs") / path.stem).resolve()
    result = run_config(config, base_dir=path.parent, output=output, n_jobs=args.n_jobs, where=str(path),
                        progress=_show_progress(args), fresh=args.fresh)
    from .eval.compare import to_markdown

    from .eval.metrics import nan_notes, parse_column, report_columns

    brief = report_columns(result.summary.columns, brief=True)  # the registry's brief metrics
    ks = sorted({p.k for p in map(parse_column, brief) if p.k is not None})
    k = 5 if 5 in ks or not ks else ks[-1]
    wanted = ["n_scored", "n_failed", *[c for c in brief if parse_column(c).k in (None, k)],
              "context_tokens", "llm_prompt_tokens", "llm_completion_tokens"]
    from .eval.headline import headline, ranked_summary

    top = headline(result.results)
    table = ranked_summary(result.summary, top.metric, wanted)
    print(to_markdown(table))
    for note in nan_notes(table):
        print(f"note: {note}")
    print()
    print("\n".join(top.sentences()))
    if result.output is not None:
        print(f"\nwrote {result.output.resolve()} (summary.md has every metric)")
    if result.cells is not None:
        print(f"cells: {result.cells.computed} computed, {result.cells.reused} reused from "
              f"{result.cells.folder} (--fresh recomputes all)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .eval.compare_results import run_compare

    if args.show < 0:
        raise _UsageError(f"memlab compare: --show must be >= 0, got {args.show}")
    output = run_compare(args.results, args.metric, a=args.a, b=args.b, n_resamples=args.n_resamples,
                         seed=args.seed, as_json=args.json, show=args.show, dataset=args.dataset)
    print(output)
    return 0


def cmd_strategies(args: argparse.Namespace) -> int:
    from .eval.sweep import import_user_module
    from .strategies import registry

    added: dict[str, list[str]] = {}
    for module in args.imports:
        before = set(registry.names())
        import_user_module(module)
        added[module] = sorted(set(registry.names()) - before)
    for name in registry.names():
        doc = (registry.factory(name).__doc__ or "").strip().splitlines()
        print(f"{name:<14} {doc[0] if doc else ''}")
    for module, names in added.items():
        print(f"\n{module}: " + (f"registers {', '.join(names)}" if names else
                                 "registers no new strategy (its names may already be registered)"))
        for name in names:
            print(f"\n{name}")
            for line in _strategy_parameters(registry.factory(name), name):
                print(f"  {line}")
    return 0


def _strategy_parameters(factory: Any, name: str) -> list[str]:
    """The lines ``memlab strategies --import`` prints for one strategy: the factory's
    arguments with their defaults, then every nested ``--set`` key of the strategy it
    builds with those defaults (its ``get_params``), components shown by class name."""
    import inspect

    from .base import Component

    lines = ["arguments (--set NAME=VALUE):"]
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        for p in signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                lines.append(f"  {'*' if p.kind is p.VAR_POSITIONAL else '**'}{p.name}")
            else:
                default = "(required)" if p.default is p.empty else f"= {p.default!r}"
                lines.append(f"  {p.name} {default}")
    try:
        built = factory()
    except Exception as exc:  # required arguments, or a failing default: the arguments are what we know
        lines.append(f"nested parameters: not shown (building {name} with its defaults failed: "
                     f"{type(exc).__name__}: {exc})")
        return lines
    if isinstance(built, Component):
        lines.append("nested parameters (--set KEY=VALUE):")
        for key, value in built.get_params(deep=True).items():
            shown = f"{type(value).__name__}(...)" if isinstance(value, Component) else repr(value)
            lines.append(f"  {key} = {shown}")
    return lines


def _check_strategy_name(name: str) -> None:
    """An unregistered strategy name fails before any work, with a did-you-mean and, when a
    file in the checkout's ``experiments/`` registers that name, the ``--import`` that loads it."""
    from .base import ConfigError
    from .strategies import registry

    try:
        registry.factory(name)
    except ConfigError as exc:
        defining = _modules_registering(name)
        if defining:
            raise ConfigError(f"unknown strategy {name!r}: {' and '.join(defining)} registers it; add "
                              f"--import {defining[0]}") from None
        raise


def _modules_registering(name: str) -> list[str]:
    """The ``experiments/*.py`` files (of the current folder and of the memlab checkout) whose
    text registers ``name`` (``register("name")`` in any spelling); read as text, never imported.
    Paths are relative to the current folder where possible."""
    import re
    from pathlib import Path

    from .eval.paths import repo_root

    pattern = re.compile(r"""register\(\s*(?:name\s*=\s*)?(['"])""" + re.escape(name) + r"\1")
    folders = [Path("experiments")]
    root = repo_root()
    if root is not None:
        folders.append(root / "experiments")
    found: list[str] = []
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.py")):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if pattern.search(text):
                try:
                    shown = str(real.relative_to(Path.cwd().resolve()))
                except ValueError:
                    shown = str(real)
                found.append(shown)
    return found


def _version_line() -> str:
    """``memlab 0.1.0 from /path/to/memlab (Python 3.11.7)``: what ``--version`` prints."""
    import platform

    from . import __file__ as package_file, __version__

    return f"memlab {__version__} from {os.path.dirname(os.path.abspath(package_file))} (Python {platform.python_version()})"


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from .base import MemlabError

    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.version:
            print(_version_line())
            return 0
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        handler = {"eval": cmd_eval, "sweep": cmd_sweep, "compare": cmd_compare,
                   "strategies": cmd_strategies, "serve-llm": cmd_serve_llm}[args.command]
        from .eval.user_modules import registrations_restored

        # what --import (or a sweep file's imports) registers lasts for this command only: run
        # in-process (a test, a notebook), main leaves the registries as it found them
        with registrations_restored():
            return handler(args)
    except (_UsageError, MemlabError, OSError, ValueError, TypeError, SyntaxError) as exc:
        # bad input (a file, a flag, a value): one line, no traceback
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(message if message.startswith("memlab") else f"memlab: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # a sweep says how many finished cells it kept
        print(f"memlab: {exc}" if str(exc) else "memlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
