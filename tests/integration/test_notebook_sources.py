"""Jupyter notebooks in repo and docs sources: read as their cells' text, cited and resolved in it."""

import base64
import json

import pytest

from kbflow.chunk.base import chunk_unit
from kbflow.errors import SourceError
from kbflow.records import Citation, Source
from kbflow.retrieve.resolver import resolve
from kbflow.sources.base import get_loader
from kbflow.sources.notebook import OUTPUT_MAX_LINES, notebook_text

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()


def _lines(text):
    return [line + "\n" for line in text.split("\n")[:-1]] + [text.split("\n")[-1]]


def code(source, *outputs):
    return {"cell_type": "code", "source": _lines(source), "outputs": list(outputs), "metadata": {}}


def markdown(source):
    return {"cell_type": "markdown", "source": _lines(source), "metadata": {}}


def notebook(*cells, language="python"):
    meta = {"kernelspec": {"name": "python3", "language": language}, "language_info": {"name": language}}
    return json.dumps({"cells": list(cells), "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1)


FIGURE = {
    "output_type": "display_data",
    "data": {"image/png": PNG, "text/plain": ["<Figure size 432x288 with 1 Axes>"]},
    "metadata": {},
}
TABLE = {
    "output_type": "execute_result",
    "execution_count": 3,
    "data": {"text/plain": ["   rate  count\n", "0   0.5     12"], "text/html": ["<table>...</table>"]},
    "metadata": {},
}
NOTE = {
    "output_type": "display_data",
    "data": {"text/markdown": ["**Churn** is 12%"], "text/plain": ["<IPython.core.display.Markdown object>"]},
    "metadata": {},
}
PROGRESS = {"output_type": "stream", "name": "stderr", "text": ["\x1b[32mepoch 1\x1b[0m\n", " 10%\r 50%\r100%\r\n"]}
ERROR = {"output_type": "error", "ename": "KeyError", "evalue": "'rate'", "traceback": ["\x1b[0;31m---\x1b[0m"]}


def test_cells_are_rendered_as_markdown_with_fenced_code_and_text_outputs():
    text = notebook_text(
        notebook(
            markdown("# Churn model\n\nWe fit a *rate*."),
            code("# load the data\ndf = load()", TABLE),
            code("plot(df)", FIGURE),
            code("train()", PROGRESS, ERROR),
            code("show()", NOTE),
            code("   \n"),
            markdown(f"## Results\n\n![plot](data:image/png;base64,{PNG})"),
        ),
        "nb.ipynb",
    )
    assert text == (
        "# Churn model\n\nWe fit a *rate*.\n\n"
        "```python\n# load the data\ndf = load()\n```\n\n"
        "```output\n   rate  count\n0   0.5     12\n```\n\n"
        "```python\nplot(df)\n```\n\n"
        "```python\ntrain()\n```\n\n"
        "```output\nepoch 1\n100%\nKeyError: 'rate'\n```\n\n"
        "```python\nshow()\n```\n\n"
        "```output\n**Churn** is 12%\n```\n\n"
        "## Results\n\n![plot](data:image/png;base64,...)\n"
    )
    assert PNG[:40] not in text


def test_long_outputs_are_cut_and_say_how_much_was_left():
    stream = {"output_type": "stream", "name": "stdout", "text": "".join(f"step {i}\n" for i in range(100))}
    text = notebook_text(notebook(code("for i in range(100): print(i)", stream)), "nb.ipynb")
    assert f"step {OUTPUT_MAX_LINES - 1}\n... (80 more lines of output)\n```" in text
    assert f"step {OUTPUT_MAX_LINES}\n" not in text


def test_a_fence_inside_a_cell_gets_a_longer_fence_and_the_kernel_language_names_it():
    text = notebook_text(notebook(code('doc = """\n```\nx\n```\n"""'), language="R"), "nb.ipynb")
    assert text.startswith("````r\n") and text.endswith("\n````\n")


def test_nbformat_3_worksheets_heading_cells_and_inputs():
    nb = {
        "nbformat": 3,
        "metadata": {},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 2, "source": ["Setup"]},
                    {
                        "cell_type": "code",
                        "language": "python",
                        "input": ["x = 1\n", "x"],
                        "outputs": [{"output_type": "pyout", "text": ["1"]}],
                    },
                ]
            }
        ],
    }
    assert notebook_text(json.dumps(nb), "old.ipynb") == "## Setup\n\n```python\nx = 1\nx\n```\n\n```output\n1\n```\n"
    # a heading level that is no level, and cells and outputs of odd shapes, read as what they can be
    odd = {
        "nbformat": 3,
        "metadata": None,
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": "x", "source": "Odd"},
                    {"cell_type": "code", "input": 5, "outputs": {"a": 1}},
                    {"cell_type": "code", "input": "y", "outputs": [{"output_type": "stream", "text": None}]},
                    "not a cell",
                ]
            }
        ],
    }
    assert notebook_text(json.dumps(odd), "odd.ipynb") == "# Odd\n\n```\ny\n```\n"


@pytest.mark.parametrize(
    "content, reason",
    [
        ('{"cells": [', "old.ipynb: not a Jupyter notebook (line 1: Expecting value)"),
        ("[1, 2]", "old.ipynb: not a Jupyter notebook (not a JSON object)"),
        ('{"metadata": {}}', "old.ipynb: not a Jupyter notebook (no cells"),
    ],
)
def test_what_is_not_a_notebook_says_so(content, reason):
    with pytest.raises(SourceError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        notebook_text(content, "old.ipynb")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("source_type", ["repo", "docs"])
def test_a_notebook_is_one_document_whose_chunks_cite_and_resolve_in_its_cells(tmp_path, source_type):
    cells = [markdown("# Churn model\n\n## Features\n\nTenure and plan drive churn.")]
    cells += [code("# tenure in months\nX = df[['tenure', 'plan']]\nmodel.fit(X, y)", TABLE, FIGURE)]
    cells += [markdown("## Evaluation\n\n" + "The holdout accuracy is reported per plan. " * 40)]
    _write(tmp_path / "churn.ipynb", notebook(*cells))
    _write(tmp_path / "notes.md", "# Notes\n\nplain notes\n")
    source = Source("s", source_type, str(tmp_path))
    units = list(get_loader(source_type).load(source))
    nb = next(u for u in units if u.unit_key == "churn.ipynb")
    assert (nb.content_kind, nb.language, nb.locator.kind) == ("doc", "markdown", "doc")
    assert '"cell_type"' not in nb.text and PNG[:40] not in nb.text
    chunks = chunk_unit(nb)
    assert len(chunks) > 2
    # a comment in a code cell is not a heading: the code sits under "Features"
    fit = next(c for c in chunks if "model.fit" in c.text)
    assert fit.locator.heading_path == "Churn model > Features"
    for c in chunks:
        assert resolve(Citation("s", source_type, source.uri, c.locator)) == c.text


def test_a_notebook_is_read_past_the_file_limit_when_its_text_is_within_it(tmp_path):
    # 1.5 MiB of pictures around a few lines of text: over the repo's 1 MiB file limit, but its text is not
    big = {**FIGURE, "data": {"image/png": "A" * (1536 * 1024)}}
    _write(tmp_path / "plots.ipynb", notebook(markdown("# Plots"), code("plot(x)", big)))
    loader = get_loader("repo")
    units = list(loader.load(Source("s", "repo", str(tmp_path))))
    assert [u.unit_key for u in units] == ["plots.ipynb"] and not loader.issues
    assert units[0].text == "# Plots\n\n```python\nplot(x)\n```\n"


def test_a_notebook_whose_text_is_over_the_limit_is_left_out_with_its_size(tmp_path):
    words = "".join(f"row {i} of the log\n" for i in range(60_000))
    _write(tmp_path / "big.ipynb", notebook(markdown(words)))
    _write(tmp_path / "ok.md", "# ok\n")
    loader = get_loader("repo")
    units = list(loader.load(Source("s", "repo", str(tmp_path), options={"max_file_mb": 1.0})))
    assert [u.unit_key for u in units] == ["ok.md"]
    (issue,) = loader.issues
    assert issue.path == "big.ipynb" and "its cells' text (1.2 MiB) is over the 1.0 MiB limit" in issue.reason
    assert "--max-file-mb" in issue.reason


def test_a_broken_notebook_fails_alone_naming_itself(tmp_path):
    _write(tmp_path / "broken.ipynb", '{"cells": [')
    _write(tmp_path / "ok.ipynb", notebook(markdown("# fine")))
    loader = get_loader("docs")
    units = list(loader.load(Source("s", "docs", str(tmp_path))))
    assert [u.unit_key for u in units] == ["ok.ipynb"]
    (issue,) = loader.issues
    assert issue.path == "broken.ipynb" and issue.failed and "not a Jupyter notebook (line 1" in issue.reason
