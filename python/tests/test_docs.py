"""Every Python example of docs/python.md runs (from the repo root, as a reader would run it)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code = compile(BLOCKS[index], f"docs/python.md example {index + 1}", "exec")
    exec(code, {"__name__": f"docs_example_{index + 1}"})  # noqa: S102 - the doc's own examples
    assert capsys.readouterr().out  # each example prints what it shows
