"""docs/plugins.md's examples work: its `# file:` blocks make a distribution, pip installs it, and
its modality, editor, scorer and source run through the core (and a real `maskscore build`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest
from click.testing import CliRunner

from maskscore_core.edits import instances as edits

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import schemas
from maskscore_core.cli import main
from maskscore_core.plugin.testing import small_context

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
DISTRIBUTION = "maskscore-hello"
BLOCK = re.compile(r"```(?:python|toml)\n# file: (\S+)\n(.*?)```", re.S)


def doc_files() -> dict[str, str]:
    return {name: body for name, body in BLOCK.findall(DOCS.read_text())}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The docs' distribution, built and installed with pip into a target directory."""
    source = tmp_path_factory.mktemp("hello-src")
    for name, body in doc_files().items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(body)
    target = tmp_path_factory.mktemp("hello-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    return target


@pytest.fixture
def hello(installed, monkeypatch):
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", DISTRIBUTION)
    plugins.reset()
    yield installed
    plugins.reset()
    for name in [m for m in sys.modules if m.startswith("maskscore_hello")]:
        del sys.modules[name]


def test_the_docs_hold_one_plugin_of_each_kind():
    files = doc_files()
    assert {"pyproject.toml", "maskscore_hello/expression.py", "maskscore_hello/nudge.py",
            "maskscore_hello/vertex_distance.py", "maskscore_hello/still.py"} <= set(files)  # fmt: skip


def test_installed_examples_register_under_their_distribution(hello):
    assert not plugins.load_errors()
    for kind, name in (("modality", "expression"), ("editor", "nudge"), ("scorer", "vertex-distance"), ("source", "still")):
        assert plugins.lookup(kind, name).distribution == DISTRIBUTION
    listed = json.loads(CliRunner().invoke(main, ["list-plugins", "--json"]).output)
    assert {row["name"] for row in listed if row["distribution"] == DISTRIBUTION} == {
        "expression", "nudge", "vertex_distance", "still"}  # fmt: skip
    spec = schemas.table_specs()["ExpressionEditReward"]
    assert [c["name"] for c in spec["columns"]] == [
        "key", "instruction", "input_expression", "output_expressions", "scores", "task_type", "dimension"]  # fmt: skip


def test_source_editor_modality_and_scorer_run_together(hello, tmp_path):
    ctx = small_context(tmp_path, dataset_root=str(tmp_path))
    trials = list(plugins.call("extract", "still", source="still", config={"seed": 1}, ctx=ctx))
    assert len(trials) == 4 and {t.source for t in trials} == {"still"}
    (instance,) = edits.make_instances(trials, "expression", np.random.default_rng(0), 1)
    assert instance.instruction.text == f"set the {instance.instruction.part} to frame B's expression"

    candidates = plugins.call("edit", "nudge", editor="nudge", modality="expression", instance=instance, ctx=ctx)
    assert [c.label for c in candidates] == ["nudge x1", "nudge x0.5"]
    modality = plugins.modality("expression")
    values = [modality.write(c.asset, tmp_path / "assets", f"c{i}", ctx) for i, c in enumerate(candidates)]
    read = [modality.read(v, tmp_path, ctx) for v in values]
    np.testing.assert_array_equal(read[0].data, candidates[0].asset.data)
    rows = [modality.row(instance, values[0], values, [], d, tmp_path, ctx) for d in ("overall", "consistency")]
    assert schemas.to_table("ExpressionEditReward", rows).num_rows == 2
    with pytest.raises(ValueError, match="does not exist"):
        modality.read("assets/missing.npy", tmp_path, ctx)

    read_back = [attrs.evolve(c, asset=asset) for c, asset in zip(candidates, read)]
    full, half = plugins.call("score", "vertex-distance", scorer="vertex-distance", instance=instance, candidates=read_back, ctx=ctx)
    assert full.instruction_following > half.instruction_following  # all the way to frame B beats half way
    assert full.distances["follow_m"] < 1e-9


def test_maskscore_build_runs_on_the_examples(hello, tmp_path):
    out = tmp_path / "bench"
    result = CliRunner().invoke(main, [
        "build", "bench", "--out", str(out), "--source", "still", "--subjects", "24", "--editor", "nudge",
        "--scorer", "vertex-distance", "--modalities", "expression", "--rows", "6", "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["counts"]["modality"] == {"expression": 6}
