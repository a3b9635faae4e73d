"""Small native-format documents for the dataset tests."""

from __future__ import annotations

import copy
import json
from typing import Any

BASE: dict[str, Any] = {
    "name": "coffee",
    "dialogues": [{
        "id": "coffee",
        "sessions": [
            {"id": "s1", "timestamp": "2024-02-05T07:30:00Z", "turns": [
                {"id": "t1", "speaker": "Maya", "role": "user", "text": "I drink a double espresso every morning."},
                {"id": "t2", "speaker": "Bot", "role": "assistant", "text": "Noted."},
                {"id": "t3", "speaker": "Maya", "role": "user", "text": "And a flat white at ten."},
            ]},
            {"id": "s2", "timestamp": "2024-03-04T18:10:00+01:00", "turns": [
                {"id": "t4", "speaker": "Maya", "role": "user", "text": "I switched to green tea.",
                 "timestamp": "2024-03-04T17:15:00Z"},
                {"id": "t5", "speaker": "Bot", "role": "assistant", "text": "Updated."},
            ]},
        ],
        "probes": [
            {"id": "p1", "after_turn": "t3", "query": "What does Maya drink at ten?", "evidence": ["t3"],
             "answer": "A flat white", "category": "single-hop"},
            {"id": "p2", "query": "What does Maya drink now?", "evidence": ["t4"], "answer": "Green tea",
             "category": "knowledge-update", "timestamp": "2024-03-10T08:00:00Z"},
            {"id": "p3", "after_turn": "t3", "query": "Second probe on t3", "evidence": [],
             "answer": None, "category": None},
        ],
    }],
}


def doc() -> dict[str, Any]:
    """A fresh, valid copy of BASE (tests mutate it)."""
    return copy.deepcopy(BASE)


def write(tmp_path, document: Any, name: str = "x.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return str(path)
