"""The command line imports only what a command uses: a bm25 eval loads no chromadb, plots or models."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["chromadb", "matplotlib", "torch", "sentence_transformers", "jsonschema", "rfc3987_syntax"]

SCRIPT = """
import io, json, sys, contextlib
from memlab import cli
loaded_by_import = sorted(m for m in {heavy} if m in sys.modules)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = cli.main(sys.argv[1:])
print(json.dumps({{"import": loaded_by_import, "code": code, "json": out.getvalue(),
                  "eval": sorted(m for m in {heavy} if m in sys.modules)}}))
"""


def run(*args):
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(heavy=HEAVY), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_bm25_eval_imports_nothing_heavy():
    got = run("eval", "datasets/travel_advisor.json", "--strategy", "bm25", "--json")
    assert got["code"] == 0 and json.loads(got["json"])  # the command ran and printed its JSON
    assert got["import"] == [] and got["eval"] == []
