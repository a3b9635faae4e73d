"""`memlab eval ... --strategy layered --set llm=local:gemma-3-270m --json` end to end with a real
model, on a dialogue of four turns (every LLM step of the layered strategy, and an answer and a
judgement): whatever JSON the small base model writes, the run ends with counts, never a crash.
The judge's calibration is read from the cache (seeded here with the figures the base model gets:
it fails the gate) and overridden with --allow-uncalibrated-judge, which the result records;
tests/llm/test_local_judge.py measures the real figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = {"name": "tiny", "dialogues": [{"id": "d1", "sessions": [{"id": "s1", "timestamp": "2024-06-03T09:00:00Z", "turns": [
    {"id": "t1", "speaker": "Tom", "role": "user", "text": "My daughter Elsa starts school in Berlin next week."},
    {"id": "t2", "speaker": "Assistant", "role": "assistant", "text": "Exciting! How does she feel?"},
    {"id": "t3", "speaker": "Tom", "role": "user", "text": "She is nervous but happy. I drink green tea every morning."},
    {"id": "t4", "speaker": "Assistant", "role": "assistant", "text": "Green tea is a calm start."}]}],
    "probes": [{"id": "p1", "after_turn": None, "query": "What is the name of Tom's daughter?", "evidence": ["t1"],
                "answer": "Elsa", "category": "single-hop"}]}]}


GEMMA = "local:gemma-3-270m"
#: what the base model scored on the full set (measured: 222 of 224 pairs labelled CORRECT)
SEEDED = {"accuracy": 0.4911, "label_rate": 0.9911, "kappa_f1": -0.014, "unreadable": 0, "n_pairs": 224, "n_locomo": 144,
          "n_longmemeval": 80, "n_expected_correct": 112, "f1_threshold": 0.5, "seeded_by": "test_local_cli"}


def _seed_calibration() -> None:
    from memlab.atomic import atomic_write_text
    from memlab.eval import calibration as cal
    from memlab.eval import calibration_set as cs
    from memlab.eval.answers import LLMJudge
    from memlab.offline.named import make_llm

    judge = LLMJudge(make_llm(GEMMA, kv_slot="judge"))
    pairs = cs.default_pairs()
    key = cal.calibration_key(judge, pairs)
    cal.cache_dir().mkdir(parents=True, exist_ok=True)
    atomic_write_text(cal.cache_dir() / f"{key}.json", json.dumps({
        **SEEDED, "judge_model": judge.identity()["judge_model"], "judge_prompt_set": judge.prompts.id,
        "set_hash": cs.set_hash(pairs), "key": key}))


def test_eval_layered_with_the_local_model(tmp_path):
    from memlab.eval.paths import locomo_path, longmemeval_path

    if locomo_path() is None or longmemeval_path() is None:
        pytest.skip("LoCoMo or LongMemEval not found (../shared/datasets/): the judge cannot be calibrated")
    _seed_calibration()   # the subprocess shares this session's $MEMLAB_CACHE_DIR
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", "eval", str(data), "--strategy", "layered",
                           "--set", f"llm={GEMMA}", "--set", "embedder=null", "--set", "update_step__extract_every=4",
                           "--answer-llm", GEMMA,
                           "--judge-llm", GEMMA, "--allow-uncalibrated-judge", "--json", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["judge_gate"] == {"passed": False, "override": True, "reason": out["judge_gate"]["reason"]}
    assert "failed calibration on 224 pairs" in out["judge_gate"]["reason"]
    assert out["judge_calibration"]["seeded_by"] == "test_local_cli" and out["judge_calibration"]["cached"] is True
    assert out["n_probes"] == 1 and out["params"]["llm"] == "LocalLLM"
    assert out["n_failed"] + out["n_scored"] == 1
    assert out["llm_prompt_tokens"] > 0 and out["llm_completion_tokens"] > 0   # the real model ran the steps
    assert isinstance(out["llm_format_errors"], int) and out["llm_format_errors"] >= 0
    assert out["answer_prompt_tokens"] > 0 and out["answer_f1"] is not None
