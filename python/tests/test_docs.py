"""The examples of the documentation run: the module docstring's doctest and
the Python example at the top of python/README.md."""

from __future__ import annotations

import doctest
import os
import re

import shamap
from conftest import REPO


def test_module_docstring_examples():
    failed, tried = doctest.testmod(shamap, verbose=False)
    assert tried > 0 and failed == 0


def run_example(code, name, capsys):
    """Runs the example `code` (from the file `name`) in the repository's
    directory (it reads data/ledger-38129.json); the words it printed."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(code, name, "exec"), {})
    finally:
        os.chdir(cwd)
    return capsys.readouterr().out.split()


def test_readme_example(capsys):
    readme = (REPO / "python" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    out = run_example(code, "python/README.md", capsys)
    assert out[1:] == ["included", "True"] and len(out[0]) == 64


def test_top_level_readme_example(capsys):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Python") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = run_example(code, "README.md", capsys)
    assert out[1:] == ["included", "match"] and len(out[0]) == 64
