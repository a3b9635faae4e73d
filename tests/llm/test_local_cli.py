"""`memlab eval ... --strategy layered --set llm=local --json` end to end with the real model, on a
dialogue of four turns (every LLM step of the layered strategy, and an answer and a judgement):
whatever JSON the small model writes, the run ends with counts, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = {"name": "tiny", "dialogues": [{"id": "d1", "sessions": [{"id": "s1", "timestamp": "2024-06-03T09:00:00Z", "turns": [
    {"id": "t1", "speaker": "Tom", "role": "user", "text": "My daughter Elsa starts school in Berlin next week."},
    {"id": "t2", "speaker": "Assistant", "role": "assistant", "text": "Exciting! How does she feel?"},
    {"id": "t3", "speaker": "Tom", "role": "user", "text": "She is nervous but happy. I drink green tea every morning."},
    {"id": "t4", "speaker": "Assistant", "role": "assistant", "text": "Green tea is a calm start."}]}],
    "probes": [{"id": "p1", "after_turn": None, "query": "What is the name of Tom's daughter?", "evidence": ["t1"],
                "answer": "Elsa", "category": "single-hop"}]}]}


def test_eval_layered_with_the_local_model(tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", "eval", str(data), "--strategy", "layered",
                           "--set", "llm=local", "--set", "embedder=null", "--set", "update_step__extract_every=4",
                           "--answer-llm", "local",
                           "--judge-llm", "local", "--json", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["n_probes"] == 1 and out["params"]["llm"] == "LocalLLM"
    assert out["n_failed"] + out["n_scored"] == 1
    assert out["llm_prompt_tokens"] > 0 and out["llm_completion_tokens"] > 0   # the real model ran the steps
    assert isinstance(out["llm_format_errors"], int) and out["llm_format_errors"] >= 0
    assert out["answer_prompt_tokens"] > 0 and out["answer_f1"] is not None
