from pathlib import Path

import pytest

from memlab.eval.loaders.native import dataset_from_dict
from memlab.eval.paths import locomo_path

REPO = Path(__file__).resolve().parents[2]
#: The LoCoMo file where this machine has it (beside the checkout, or $MEMLAB_LOCOMO), else None.
LOCOMO = locomo_path()


def tiny_doc():
    """Two dialogues; probes mid-dialogue, at the end, and one unscored."""
    return {
        "name": "tiny",
        "dialogues": [
            {"id": "coffee", "sessions": [
                {"id": "s1", "timestamp": "2024-01-01T08:00:00Z", "turns": [
                    {"id": "t1", "speaker": "Maya", "role": "user", "text": "I drink espresso every morning."},
                    {"id": "t2", "speaker": "Bot", "role": "assistant", "text": "Noted, espresso it is."},
                ]},
                {"id": "s2", "timestamp": "2024-02-01T08:00:00Z", "turns": [
                    {"id": "t3", "speaker": "Maya", "role": "user", "text": "I switched to green tea."},
                    {"id": "t4", "speaker": "Bot", "role": "assistant", "text": "Green tea, lovely."},
                    {"id": "t5", "speaker": "Maya", "role": "user", "text": "My cat is called Miso."},
                ]},
             ],
             "probes": [
                {"id": "p_mid", "after_turn": "t1", "query": "What does Maya drink every morning?",
                 "evidence": ["t1"], "category": "single-hop"},
                {"id": "p_end", "after_turn": None, "query": "What is the cat called?",
                 "evidence": ["t5"], "answer": "Miso", "category": "single-hop"},
                {"id": "p_none", "after_turn": None, "query": "What is her favourite film?",
                 "evidence": [], "category": "unanswerable"},
             ]},
            {"id": "trip", "sessions": [
                {"id": "s1", "timestamp": "2024-03-01T10:00:00Z", "turns": [
                    {"id": "t1", "speaker": "Ben", "role": "user", "text": "Book me a window seat to Lisbon."},
                    {"id": "t2", "speaker": "Bot", "role": "assistant", "text": "Window seat to Lisbon booked."},
                    {"id": "t3", "speaker": "Ben", "role": "user", "text": "My budget is 900 euros."},
                ]}],
             "probes": [
                {"id": "p1", "after_turn": None, "query": "What is the budget in euros?",
                 "evidence": ["t3"], "answer": "900 euros", "category": "single-hop"},
             ]},
        ],
    }


@pytest.fixture
def tiny():
    return dataset_from_dict(tiny_doc(), source="tiny.json", default_name="tiny")


@pytest.fixture
def tiny_file(tmp_path):
    """The tiny dataset written to a native JSON file."""
    import json

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_doc()))
    return path
