"""Bad input, one table: every ordinary mistake a user can make on the command line gives one line
on stderr saying what is wrong, the exit code says which kind (2: usage, 1: failure), no
traceback, and nothing is written. Cases run through the `maskscore` group itself, on a real
one-instance mesh bench (built-in source, frame-pair ladder, render-compare) and real mesh files.

Tampered benches prove containment: a row whose asset path is absolute or climbs out with `..`,
or whose key climbs out, is refused naming the row, although the file it names exists (a copy
of the bench's own asset or sidecar), so a reader without the check would have read it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import trimesh
from click.testing import CliRunner

from maskscore_core.dataset import schemas
from maskscore_core.cli import main
from maskscore_core.dataset.plan import BuildConfig
from maskscore_core.dataset.reader import DatasetReadError, iter_rows
from maskscore_core.dataset.runner import run_build
from maskscore_core.body.reference_mesh import get_reference_mesh

USAGE, FAILURE = 2, 1


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad-input") / "bench"
    run_build(BuildConfig(split="bench", out=root, rows=3, seed=0, subjects=24, modalities=("mesh",), views=2,
                          resolution=32), progress=False)
    return root


def _shard(bench: Path) -> Path:
    (path,) = sorted((bench / "data").glob("*/shard-*.parquet"))
    return path


def _rewrite(bench: Path, column: str, change) -> None:
    """Rewrite one column of the bench's shard in place, keeping its schema."""
    path = _shard(bench)
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    field = table.schema.field(index)
    values = [change(v) for v in table.column(column).to_pylist()]
    pq.write_table(table.set_column(index, field, pa.array(values, type=field.type)), path)


def _copy(bench: Path, tmp: Path) -> Path:
    copy = tmp / "case" / "bench"
    shutil.copytree(bench, copy)
    return copy


def _asset_outside(bench: Path, tmp: Path, absolute: bool) -> dict:
    """A bench whose first candidate names a real mesh file outside it."""
    copy = _copy(bench, tmp)
    column = schemas.candidate_column(schemas.table_for_modality("mesh"))
    first = next(row for _, row in iter_rows(copy))[column][0]
    outside = copy.parent / "outside" / "x.glb"
    outside.parent.mkdir()
    shutil.copy(copy / first, outside)
    value = str(outside) if absolute else "../outside/x.glb"
    _rewrite(copy, column, lambda values: [value, *values[1:]])
    return {"bench": copy}


def _key_outside(bench: Path, tmp: Path) -> dict:
    """A bench whose rows' key climbs out to a real sidecar copied outside it."""
    copy = _copy(bench, tmp)
    key = next(row for _, row in iter_rows(copy))["key"]
    escaped = "../../escaped"
    shutil.copy(copy / "instances" / f"{key}.json", copy / "instances" / f"{escaped}.json")
    assert (copy.parent / "escaped.json").exists()
    _rewrite(copy, "key", lambda _value: escaped)
    return {"bench": copy, "key": escaped}


def _corrupt_card(bench: Path, tmp: Path) -> dict:
    copy = _copy(bench, tmp)
    (copy / "card.json").write_text('{"config": {"views": 2, ')
    return {"bench": copy}


def _mesh(tmp: Path, name: str, vertices=None, faces=None) -> Path:
    reference = get_reference_mesh()
    vertices = reference.vertices([_neutral()])[0] if vertices is None else vertices
    path = tmp / name
    path.write_bytes(trimesh.Trimesh(vertices, reference.faces if faces is None else faces, process=False).export(
        file_type="glb"))
    return path


def _neutral():
    from maskscore_core.plugin.records import BodyState

    return BodyState()


def _meshes(bench: Path, tmp: Path) -> dict:
    """A good mesh (a real bench asset) and bad ones: other faces, scaled by 1e6, NaN, wrong count."""
    reference = get_reference_mesh()
    vertices = reference.vertices([_neutral()])[0]
    nan = vertices.copy()
    nan[5] = np.nan
    kept = reference.faces[reference.faces.max(axis=1) < len(vertices) - 7]
    return {
        "good": sorted((bench / "assets").rglob("*rung1.glb"))[0],
        "faces": _mesh(tmp, "faces.glb", faces=(reference.faces + 1) % reference.vertex_count),
        "scaled": _mesh(tmp, "scaled.glb", vertices=vertices * 1e6),
        "nan": _mesh(tmp, "nan.glb", vertices=nan),
        "count": _mesh(tmp, "count.glb", vertices=vertices[:-7], faces=kept),
    }


def _score(candidate="{good}", *extra):
    return ["score", "--frame-a", "{good}", "--frame-b", "{good}", "--part", "mouth", *extra, candidate]


def _build(*extra):
    return ["build", "bench", "--out", "{tmp}/built", "--quiet", *extra]


def _eval(*extra):
    return ["eval", "--bench", "{bench}", "--out", "{tmp}/results.jsonl", "--quiet", *extra]


def _show(key="{key}", *extra):
    return ["show", key, "--bench", "{bench}", "--out", "{tmp}/sheet.png", "--size", "16", *extra]


# (case, prepare, arguments, exit code, message or its parts): `prepare(bench, tmp)` may return a
# tampered bench and a key; arguments are formatted with bench, key, tmp and the mesh files.
CASES = [
    ("score --views 0", None, _score("{good}", "--views", "0"), USAGE, "'--views': 0 is not in the range 1<=x<=64"),
    ("score --views 100000", None, _score("{good}", "--views", "100000"), USAGE, "100000 is not in the range 1<=x<=64"),
    ("score below the scorer's minimum", None, _score("{good}", "--resolution", "16"), USAGE,
     "'--resolution': 16 is not in the range 32<=x<=1024"),
    ("score too many pixels", None, _score("{good}", "--views", "64", "--resolution", "1024"), USAGE,
     "more than 16,777,216; use at most 16 views at this resolution"),
    ("score unknown part", None, ["score", "--frame-a", "{good}", "--frame-b", "{good}", "--part", "lips", "{good}"], USAGE,
     "unknown part 'lips'; valid parts: front hair"),
    ("score missing mesh", None, _score("{tmp}/nope.glb"), FAILURE, "nope.glb: mesh file not found"),
    # a candidate may be a mesh of its own topology (docs/metric.md); frames A and B may not
    ("score frame A of other faces", None, ["score", "--frame-a", "{faces}", "--frame-b", "{good}", "--part", "mouth", "{good}"],
     FAILURE, ("frame A (", "faces.glb) is not on the reference topology (")),
    ("score mesh scaled 1e6", None, _score("{scaled}"), FAILURE, ("coordinates reach", "e+05 m from the origin", "scaled")),
    ("score NaN vertex", None, _score("{nan}"), FAILURE, "1 vertices hold NaN or infinite coordinates (first: 5)"),
    ("score frame B of a wrong vertex count", None,
     ["score", "--frame-a", "{good}", "--frame-b", "{count}", "--part", "mouth", "{good}"], FAILURE,
     ("frame B (", "count.glb) is not on the reference topology (")),
    ("build --views 0", None, _build("--views", "0"), USAGE, "'--views': 0 is not in the range 1<=x<=64"),
    ("build below the scorer's minimum", None, _build("--resolution", "8"), USAGE,
     "'--resolution': 8 is not in the range 32<=x<=1024"),
    ("build --views 100000", None, _build("--views", "100000"), USAGE, "100000 is not in the range 1<=x<=64"),
    ("build --rows 0", None, _build("--rows", "0"), USAGE, "'--rows': 0 is not in the range 1<=x<=10000000"),
    ("build --workers 0", None, _build("--workers", "0"), USAGE, "'--workers': 0 is not in the range 1<=x<=256"),
    ("build --shard-size 0", None, _build("--shard-size", "0"), USAGE, "'--shard-size': 0 is not in the range"),
    ("build --seed -1", None, _build("--seed", "-1"), USAGE, "'--seed': -1 is not in the range 0<=x<=2147483647"),
    ("build unknown source", None, _build("--source", "nope"), USAGE,
     "no installed source plugin provides 'nope'; installed sources: anny"),
    ("build unknown editor", None, _build("--editor", "nope"), USAGE, "no installed editor plugin provides 'nope'"),
    ("build unknown scorer", None, _build("--scorer", "nope"), USAGE, "no installed scorer plugin provides 'nope'"),
    ("build unknown modality", None, _build("--modalities", "mesh,audio"), USAGE, "unknown modality 'audio'; choose from"),
    ("build bad source option", None, _build("--source-option", "subjects"), USAGE, "expected NAME=VALUE, got 'subjects'"),
    ("eval --num-pass 0", None, _eval("--num-pass", "0"), USAGE, "'--num-pass': 0 is not in the range 1<=x<=64"),
    ("eval --views 100000", None, _eval("--views", "100000"), USAGE, "100000 is not in the range 1<=x<=64"),
    ("eval below the scorer's minimum", None, _eval("--resolution", "16"), USAGE, "16 is not in the range 32<=x<=1024"),
    ("eval negative temperature", None, _eval("--temperature", "-1"), USAGE, "'--temperature': -1.0 is not in the range"),
    ("eval unknown scorer", None, _eval("--scorer", "nope"), USAGE, "no installed scorer plugin provides 'nope'"),
    ("eval not a bench", lambda bench, tmp: {"bench": tmp}, _eval(), FAILURE,
     "has neither card.json nor .build-config.json"),
    ("eval corrupt card", _corrupt_card, _eval(), FAILURE, "card.json is corrupt (JSONDecodeError"),
    ("eval absolute asset path", lambda b, t: _asset_outside(b, t, absolute=True), _eval("--rescore"), FAILURE,
     ("bench row 'mesh-00000-", "(mesh): its candidates cannot be read: ValueError: mesh table value '/", "is absolute")),
    ("eval asset path climbing out", lambda b, t: _asset_outside(b, t, absolute=False), _eval("--rescore"), FAILURE,
     ("bench row 'mesh-00000-", "mesh table value '../outside/x.glb' resolves to", "outside the dataset directory")),
    ("eval key climbing out", _key_outside, _eval("--rescore"), FAILURE, "row key '../../escaped' is not a plain name"),
    ("show unknown key", None, _show("no-such-key"), USAGE, "no row with key 'no-such-key' in"),
    ("show --size 0", None, _show("{key}", "--size", "0"), USAGE, "'--size': 0 is not in the range 16<=x<=2048"),
    ("show corrupt card", _corrupt_card, _show(), FAILURE, "card.json is corrupt"),
    ("show asset path climbing out", lambda b, t: _asset_outside(b, t, absolute=False), _show(), FAILURE,
     ("bench row 'mesh-00000-", "mesh table value '../outside/x.glb' resolves to", "outside the dataset directory")),
    ("show key climbing out", _key_outside, _show(), FAILURE, "row key '../../escaped' is not a plain name"),
    ("demo --views 0", None, ["demo", "--out", "{tmp}/demo", "--views", "0"], USAGE, "'--views': 0 is not in the range 1<=x<=64"),
    ("loop --views 0", None, ["loop", "--out", "{tmp}/loop", "--views", "0"], USAGE, "'--views': 0 is not in the range 1<=x<=64"),
    ("serve below the scorer's minimum", None, ["serve", "--scorer", "render-compare", "--resolution", "8"], USAGE,
     "'--resolution': 8 is not in the range 32<=x<=1024"),
    ("train --steps 0", None, ["train", "editor", "--out", "{tmp}/editor", "--steps", "0"], USAGE,
     "'--steps': 0 is not in the range 1<=x<=10000000"),
    ("train too many pixels", None, ["train", "rl", "--editor", "{bench}", "--data", "{bench}", "--reward", "render-compare",
                                     "--out", "{tmp}/rl", "--views", "64", "--resolution", "1024"], USAGE,
     "more than 16,777,216; use at most 16 views"),
    ("unknown command", None, ["nosuch"], USAGE, "No such command 'nosuch'"),
    ("unknown main option", None, ["--bogus", "show"], USAGE, "No such option '--bogus'"),
    ("missing argument", None, ["show", "--bench", "{bench}", "--out", "{tmp}/sheet.png"], USAGE, "Missing argument 'ROW_KEY'"),
]


@pytest.mark.parametrize("case, prepare, arguments, code, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_with_an_honest_exit_code(bench, tmp_path, case, prepare, arguments, code, message):
    places = {"bench": bench, "key": next(row for _, row in iter_rows(bench))["key"], "tmp": tmp_path}
    if any("{" + name + "}" in a for a in arguments for name in ("good", "faces", "scaled", "nan", "count")):
        places.update(_meshes(bench, tmp_path))
    if prepare is not None:
        places.update(prepare(bench, tmp_path))
    args = [a.format(**places) for a in arguments]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1, result.stderr
    for part in (message,) if isinstance(message, str) else message:
        assert part in result.stderr, result.stderr
    assert "Traceback" not in result.output
    if code == USAGE:
        assert "--help" in result.stderr  # says where to read how to use the command
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before  # nothing written: no sheet, no result cache, no dataset directory


def test_debug_flag_and_environment_show_the_traceback(bench, tmp_path, monkeypatch):
    broken = _corrupt_card(bench, tmp_path)["bench"]
    args = ["eval", "--bench", str(broken), "--quiet"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 1 and isinstance(plain.exception, SystemExit)
    debug = CliRunner().invoke(main, ["--debug", *args])
    assert isinstance(debug.exception, DatasetReadError) and "card.json is corrupt" in str(debug.exception)
    monkeypatch.setenv("MASKSCORE_DEBUG", "1")
    assert isinstance(CliRunner().invoke(main, args).exception, DatasetReadError)


def test_an_unexpected_error_says_its_type_and_how_to_see_the_traceback():
    from maskscore_core.cli.errors import describe

    assert describe(KeyError("views")) == "KeyError: 'views'; rerun with --debug (or MASKSCORE_DEBUG=1) for the traceback"
    assert describe(DatasetReadError("a\nb")) == "a; b"  # the project's own errors: their message, one line
    assert json.loads(json.dumps(describe(FileNotFoundError(2, "No such file", "x")))).endswith("'x'")


@pytest.mark.parametrize("modality, manifest, content", [
    ("video", "frames.json", {"format": "maskscore-video/1", "frames": [{}], "frame_files": ["../../outside.png"]}),
    ("multimodal", "manifest.json", {"format": "maskscore-multimodal/1", "target": "../../outside.json"}),
])
def test_a_file_named_inside_an_asset_folder_stays_inside_it(tmp_path, modality, manifest, content):
    """Folder assets (a clip, a multimodal edit) list their files in a manifest: those names are
    read from the dataset too, and one that leads out is refused though the file exists."""
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context

    root = tmp_path / "bench"
    folder = root / "assets" / "x"
    folder.mkdir(parents=True)
    (folder / manifest).write_text(json.dumps(content))
    (tmp_path / "outside.png").write_bytes(b"")
    (tmp_path / "outside.json").write_text("{}")
    ctx = Context(workdir=tmp_path / "work", config={"dataset_root": str(root), "views": 2, "resolution": 32})
    with pytest.raises(Exception, match=r"'\.\./\.\./outside\.(png|json)' resolves to .* outside the dataset directory"):
        plugins.call("read_asset", modality, modality=modality, value="assets/x", root=root, ctx=ctx)
