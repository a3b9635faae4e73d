"""The ``memlab`` command: eval, sweep, compare, strategies, serve-llm.

    memlab eval DATASET [--format F] [--option key=value ...] [--strategy NAME] [--set key=value ...]
                [--k 5] [--budget TOKENS ...] [--json] [--progress | --quiet]
                [--probe-position end|after_evidence] [--categories A,B] [--dialogues ID,ID]
                [--n-jobs N]
                [--output FILE] [--max-failures N] [--answer-llm LLM] [--judge-llm LLM]
                [--allow-uncalibrated-judge] [--judge-prompt-set NAME] [--import FILE.py ...]
    memlab sweep CONFIG.toml [--output DIR] [--n-jobs N] [--fresh] [--progress | --quiet]
    memlab compare RESULTS [RESULTS ...] --metric M [--a LABEL --b LABEL] [--json]
                   [--n-resamples N] [--seed S] [--show N [--dataset FILE]]
    memlab strategies [--tag TAG] [--import FILE.py ...]
    memlab serve-llm [--model NAME | PATH.gguf] [--host 127.0.0.1] [--port 8077] [--api-key KEY]
                     [--alias NAME] [--chat-format F] [--n-ctx N] [--n-threads N] [--n-gpu-layers N]
    memlab --version

Bad input ends with one line on stderr and exit status 2; no traceback.

This module parses, dispatches to library verbs and turns errors into exit codes. What it
prints is built by the library: ``memlab.eval.report`` (the eval record and its text),
``memlab.eval.sweep_outputs.summary_text`` and ``memlab.strategies.introspect``. It is a
little over 400 lines because the five commands' flags and help texts live here, in one place.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
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
    e.add_argument("--dialogues", default=None, metavar="ID,ID",
                   help="comma-separated dialogue ids to keep, e.g. conv-30 of LoCoMo (default: all)")
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
    st.add_argument("--tag", default=None, metavar="TAG",
                    help="list only the strategies that carry this tag (each line ends with its tags)")
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


def _comma_list(value: str | None, flag: str) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]``; ``None`` stays ``None``; an empty item is a usage error."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    if not all(items):
        raise _UsageError(f"memlab eval: {flag} takes comma-separated names, got {value!r}")
    return items


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
    from .eval.report import eval_report, report_text
    from .eval.results import save_results
    from .eval.streaming import StreamedDataset, open_dataset, replay_any
    from .eval.user_modules import import_user_module
    from .strategies import get
    from .strategies.introspect import check_name

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
    check_name(args.strategy, _experiment_folders())  # before the dataset is read
    if args.format is not None:
        from .eval.loaders import get_loader

        get_loader(args.format)  # an unknown format: one line with did-you-mean and the registered ones
    options = _loader_options(args)
    # a format whose loader can iterate streams (LongMemEval: one question held at a time, the S
    # file is 278 MB of JSON); the others are read whole
    dataset = open_dataset(args.dataset, args.format, **options)
    if args.categories or args.dialogues:
        dataset = dataset.subset(categories=_comma_list(args.categories, "--categories"),
                                 dialogues=_comma_list(args.dialogues, "--dialogues"))
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
    print(json.dumps(result, sort_keys=False) if args.json else report_text(result, rows, args.k))
    return 0


def _calibrate_judge(judge: Any, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """The judge's calibration (memlab.eval.calibration, cached) and the gate's refusal line (None
    when it passes), reported on stderr before any answer is made. A refused judge, or one that
    cannot be calibrated, ends the command (exit 2) unless --allow-uncalibrated-judge."""
    from .base import MemlabError
    from .eval.calibration import calibrate, gate, summary_line
    from .eval.progress import step_bar

    override = " (--allow-uncalibrated-judge: used anyway)"
    hint = "; pass --allow-uncalibrated-judge to use it anyway"
    try:
        calibration = calibrate(judge, progress=step_bar("judge calibration") if _show_progress(args) else None)
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


def cmd_sweep(args: argparse.Namespace) -> int:
    from .eval.sweep import run_config
    from .eval.sweep_config import read_config
    from .eval.sweep_outputs import summary_text

    path = Path(args.config)
    config = read_config(path)
    output = Path(args.output).resolve() if args.output else None
    if output is None and "output" not in config.get("run", {}):
        output = (Path("runs") / path.stem).resolve()
    result = run_config(config, base_dir=path.parent, output=output, n_jobs=args.n_jobs, where=str(path),
                        progress=_show_progress(args), fresh=args.fresh)
    print(summary_text(result))
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
    from .eval.user_modules import import_user_module
    from .strategies import registry
    from .strategies.introspect import parameter_lines

    added: dict[str, list[str]] = {}
    for module in args.imports:
        before = set(registry.names())
        import_user_module(module)
        added[module] = sorted(set(registry.names()) - before)
    for name in registry.names(tag=args.tag):  # an unknown tag: a did-you-mean, exit 2
        doc = (registry.factory(name).__doc__ or "").strip().splitlines()
        tags = registry.tags(name)
        print(f"{name:<14} {doc[0] if doc else ''}" + (f"  [{', '.join(tags)}]" if tags else ""))
    for module, names in added.items():
        print(f"\n{module}: " + (f"registers {', '.join(names)}" if names else
                                 "registers no new strategy (its names may already be registered)"))
        for name in names:
            print(f"\n{name}")
            for line in parameter_lines(registry.factory(name), name):
                print(f"  {line}")
    return 0


def _experiment_folders() -> list[Path]:
    """Where an unknown ``--strategy`` name is looked for (as text, never imported): the
    ``experiments/`` folders of the current folder and of the memlab checkout."""
    from .eval.paths import repo_root

    root = repo_root()
    return [Path("experiments")] + ([root / "experiments"] if root is not None else [])


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
