"""The universal metric tells the truth: zero for identical meshes, the design's ladder on real
ANNY edits, the same numbers batched or alone, and clear errors on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maskscore_core.body.parts import PartError
from maskscore_core.edits.calibration import edited_state
from maskscore_core.plugin.records import BodyState, Decoded
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.metric.render_compare import RenderCompare, RenderCompareError, distance_score
from maskscore_core.metric.views import ViewConfig

SMALL = ViewConfig(count=4, resolution=96)
LADDER_VIEWS = ViewConfig(count=8, resolution=128)  # small parts need more pixels than SMALL gives

OTHER_SUBJECT = {"gender": 0.9, "weight": 0.8, "age": 0.3}


def state(actions=None, phenotype=None) -> BodyState:
    """A body state from {facial action or "bone:<SOMA bone>:<axis 0-2>": value}."""
    return edited_state(actions or {}, phenotype=phenotype, lower_arms=False)


def mesh(actions=None, phenotype=None) -> Decoded:
    return Decoded(vertices=get_reference_mesh().vertices([state(actions, phenotype)])[0])


@pytest.fixture(scope="module")
def small():
    return RenderCompare(SMALL)


@pytest.fixture(scope="module")
def jaw_edit(small):
    a, b = mesh(), mesh({"jawOpen": 0.8})
    return a, b, small.prepare(a, b, "mouth")


def test_distance_to_score_is_monotone_and_one_at_zero():
    for name in ("depth_l1", "normal_l1", "ssim", "lpips", "activation"):
        values = [distance_score(name, d) for d in (0.0, 1e-4, 1e-2, 0.1, 1.0)]
        assert values[0] == 1.0
        assert all(x > y for x, y in zip(values, values[1:]))
    with pytest.raises(RenderCompareError):
        distance_score("lpips", float("nan"))


def test_identical_meshes_score_zero_distance_and_best(small, jaw_edit):
    a, b, prepared = jaw_edit
    same_as_a, same_as_b = small.score(prepared, [a, b])
    assert all(v == 0.0 for k, v in same_as_a.distances.items() if k.startswith("cons."))
    assert same_as_a.consistency == 1.0
    assert all(v == 0.0 for k, v in same_as_b.distances.items() if k.startswith("if."))
    assert same_as_b.instruction_following == 1.0
    pictures = ("depth_l1", "normal_l1", "ssim", "lpips")
    assert set(same_as_b.distances) == {f"{d}.{m}" for d in ("if", "ref", "half", "cons") for m in pictures} | {"cons.head_motion"}
    # no edit at all: A against A and A
    (still,) = small.score(small.prepare(a, a, "mouth"), [a])
    assert set(still.distances.values()) == {0.0}
    assert (still.instruction_following, still.consistency, still.overall) == (1.0, 1.0, 1.0)


def test_scoring_is_deterministic_and_batching_changes_nothing(small, jaw_edit):
    a, b, prepared = jaw_edit
    half = mesh({"jawOpen": 0.4})
    batch = small.score(prepared, [half, a, b])
    again = small.score(prepared, [half, a, b])
    assert [json.dumps(s.distances, sort_keys=True) for s in batch] == [json.dumps(s.distances, sort_keys=True) for s in again]
    (alone,) = small.score(prepared, [half])
    for key, value in batch[0].distances.items():
        assert alone.distances[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key


@pytest.mark.parametrize("part", ["mouth", "neck", "eyebrow"])
def test_a_candidate_that_is_a_reference_is_not_rendered_again_and_scores_the_same(small, part, monkeypatch):
    """A frame-pair ladder's rungs 1 and 2 are the ideal and the halfway edit vertex for vertex:
    their renders and features are the references', and their distances the ones `prepare`
    measured, so every distance and score equals what rendering and comparing them gives (the
    neck is not aligned onto frame A's head; the mouth and the eyebrow are)."""
    from maskscore_core.metric import render_compare

    edit, full = {"mouth": ("jawOpen", 0.8), "neck": ("bone:Neck1:1", 0.2), "eyebrow": ("browInnerUp", 0.8)}[part]
    a, ideal, halfway = mesh(), mesh({edit: full}), mesh({edit: full / 2})
    candidates = [ideal, halfway, mesh({edit: full / 5}), mesh({"mouthSmileLeft": 0.7}), mesh({edit: full}, OTHER_SUBJECT)]
    renders, forwards = [], []
    render, features = small.renderer.render, small.lpips.features
    monkeypatch.setattr(small.renderer, "render", lambda v, *args, **kw: renders.append(1) or render(v, *args, **kw))
    monkeypatch.setattr(small.lpips, "features", lambda images: forwards.append(len(images)) or features(images))

    def row():
        renders.clear(), forwards.clear()
        scores = small.score(small.prepare(a, ideal, part, halfway=halfway), candidates)
        return scores, len(renders), sum(forwards)

    reused, reused_renders, reused_images = row()
    monkeypatch.setattr(render_compare, "_rendered_reference", lambda prepared, vertices: None)
    compared, compared_renders, compared_images = row()
    assert (reused_renders, reused_images) == (compared_renders - 2, compared_images - 2 * SMALL.count)
    for mine, theirs in zip(reused, compared):
        assert list(mine.distances.items()) == list(theirs.distances.items())
        assert (mine.instruction_following, mine.consistency, mine.overall) == (
            theirs.instruction_following, theirs.consistency, theirs.overall)  # fmt: skip
    assert reused[0].instruction_following == 1.0 and reused[1].consistency == pytest.approx(1.0, abs=1e-4)


def test_depth_only_candidates_compare_the_depth_channel(small, jaw_edit):
    a, b, prepared = jaw_edit
    half = mesh({"jawOpen": 0.4})
    depth_maps = small.renderer.render(half.vertices).depth
    as_depth, as_mesh = small.score(prepared, [Decoded(depth=depth_maps), half])
    assert set(as_depth.distances) == {"if.depth_l1", "ref.depth_l1", "half.depth_l1", "cons.depth_l1"}
    # the mesh is moved onto frame A's head (by a hair: the jaw barely moves the head), the depth
    # maps cannot be, and are compared with frame B as it is: the two agree only roughly.
    # both change nothing beyond what frame B (or the halfway mesh) changes
    assert as_depth.distances["cons.depth_l1"] == pytest.approx(as_mesh.distances["cons.depth_l1"], abs=1e-6)
    assert as_depth.distances["if.depth_l1"] == pytest.approx(as_mesh.distances["if.depth_l1"], rel=0.3)
    (exact,) = small.score(prepared, [Decoded(depth=small.renderer.render(b.vertices).depth)])
    assert exact.instruction_following == 1.0


def test_activation_agreement_joins_instruction_following(small):
    acts_b = np.zeros((5, 52))
    acts_b[:, get_reference_mesh().body.action_index("jawOpen")] = 0.8
    a = Decoded(vertices=mesh().vertices, activations=np.zeros((5, 52)))
    b = Decoded(vertices=mesh({"jawOpen": 0.8}).vertices, activations=acts_b)
    prepared = small.prepare(a, b, "mouth")
    agree = Decoded(vertices=b.vertices, activations=acts_b)
    disagree = Decoded(vertices=b.vertices, activations=np.zeros((5, 52)))
    s_agree, s_disagree = small.score(prepared, [agree, disagree])
    assert s_agree.distances["if.activation"] == 0.0
    assert s_disagree.distances["if.activation"] > 0.0
    assert s_agree.instruction_following > s_disagree.instruction_following
    assert "cons.activation" not in s_agree.distances


# The design's ladder (docs/design.md): frame B's part > interpolation > partial edit > wrong part
# edited > wrong subject. Expected per dimension (docs/metric.md):
# - overall: strictly 1 > 2 > 3 > 4 > 5;
# - instruction_following: 1 > 2 > 3 > 4 (rung 4 leaves the part as in frame A), 5 below 3;
# - consistency: rungs 1-3 change only what frame B changes, which does not count against them
#   (the chin the jaw carries, the head the neck turns): the exact edit scores 1, rungs 2-3
#   about 1, rung 4 (another part changed) below them, rung 5 lowest.
LADDER = {
    "mouth": ({"jawOpen": 0.8}, {"browInnerUp": 1.0}),
    "eyebrow": ({"browInnerUp": 1.0}, {"jawOpen": 0.8}),
    "irides": ({"eyeLookUpLeft": 1.0, "eyeLookUpRight": 1.0}, {"jawOpen": 0.8}),
    # the neck carries the head: turning it is the edit (frame B's own change, see docs)
    "neck": ({"bone:Neck1:1": 0.25, "bone:Neck2:1": 0.15}, {"jawOpen": 0.8}),
}


def ladder_scores(compare, part):
    edit, wrong = LADDER[part]
    a, b = mesh(), mesh(edit)
    rungs = [
        b,
        mesh({k: 0.5 * v for k, v in edit.items()}),  # interpolation
        mesh({k: 0.2 * v for k, v in edit.items()}),  # partial edit
        mesh(wrong),  # wrong part edited
        mesh(edit, OTHER_SUBJECT),  # wrong subject, same expression as frame B
    ]
    return compare.score(compare.prepare(a, b, part), rungs)


@pytest.fixture(scope="module")
def ladder_compare():
    return RenderCompare(LADDER_VIEWS)


@pytest.mark.parametrize("part", sorted(LADDER))
def test_overall_score_recovers_the_ladder(ladder_compare, part):
    scores = ladder_scores(ladder_compare, part)
    overall = [s.overall for s in scores]
    assert overall == sorted(overall, reverse=True) and len(set(overall)) == 5, overall
    follow = [s.instruction_following for s in scores]
    assert follow[0] == 1.0 and follow[0] > follow[1] > follow[2] > follow[3], follow
    assert follow[4] < follow[2], follow
    consistency = [s.consistency for s in scores]
    assert consistency[0] == 1.0 and min(consistency[:3]) > consistency[3] > consistency[4], consistency
    assert consistency[4] < 0.2  # a different person is nowhere near frame A


def test_a_head_motion_does_not_count_against_the_part_but_against_the_rest(small, jaw_edit):
    a, b, prepared = jaw_edit
    angle = np.radians(2.0)  # turn the whole of frame B 2 degrees about the vertical through the head
    rotation = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
    centre = np.array(small.renderer.poses[0].target)
    turned = Decoded(vertices=(b.vertices - centre) @ rotation.T + centre)
    s_b, s_turned = small.score(prepared, [b, turned])
    assert s_turned.instruction_following == pytest.approx(1.0, abs=0.02)  # same part, head frame
    assert s_turned.consistency < s_b.consistency - 0.05  # but the head moved


def test_bad_inputs_are_named(small, jaw_edit):
    a, b, prepared = jaw_edit
    with pytest.raises(PartError, match="unknown part"):
        small.prepare(a, b, "moustache")
    with pytest.raises(PartError):
        small.prepare(a, b, "wings")  # a See-Through part, but not active for face data
    broken = a.vertices.copy()
    broken[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        small.score(prepared, [Decoded(vertices=broken)])
    with pytest.raises(ValueError, match="vertices"):
        small.score(prepared, [Decoded(vertices=a.vertices[:100])])
    with pytest.raises(RenderCompareError, match="depth maps of shape"):
        small.score(prepared, [Decoded(depth=np.zeros((4, 32, 32)))])
    with pytest.raises(RenderCompareError, match="NaN"):
        small.score(prepared, [Decoded(depth=np.full((4, 96, 96), np.nan))])
    with pytest.raises(RenderCompareError, match="nothing to compare"):
        small.score(prepared, [Decoded()])
    with pytest.raises(RenderCompareError, match="must be meshes"):
        small.prepare(Decoded(depth=small.renderer.render(a.vertices).depth), b, "mouth")


# -- the built-in scorer plugin and the CLI ---------------------------------------------------


def _instance(modality: str):
    from maskscore_core.plugin.records import EditInstance, EditInstruction, Subject, Target

    subject = Subject(subject_id="s0", phenotype={})
    target_a = Target(label="frame A", subject=subject, states=(state(),))
    target_b = Target(label="frame B", subject=subject, states=(state({"jawOpen": 0.8}),))
    instruction = EditInstruction(
        text="edit the mouth to match frame B", part="mouth", task_type="expression_change", modality=modality
    )
    return EditInstance(key="k0", instruction=instruction, a=target_a, b=target_b)


def test_scorer_plugin_scores_mesh_and_depth_candidates(tmp_path):
    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context
    from maskscore_core.plugin.records import Asset, Candidate

    ctx = Context(workdir=tmp_path, config={"views": SMALL.count, "resolution": SMALL.resolution})
    assert plugins.plugin_info("render_compare_scorer").provides == ("render-compare",)
    mesh_instance = _instance("mesh")
    a, b = mesh(), mesh({"jawOpen": 0.8})
    candidates = [Candidate("b", Asset("mesh", b.vertices)), Candidate("a", Asset("mesh", a.vertices))]
    scored = plugins.call("score", "render-compare", scorer="render-compare", instance=mesh_instance,
                          candidates=candidates, ctx=ctx)  # fmt: skip
    assert scored[0].instruction_following == 1.0 and scored[1].consistency == 1.0
    assert scored[0].overall > scored[1].overall
    renderer = ctx.shared(f"render-compare:{SMALL.count}x{SMALL.resolution}", lambda: None).renderer
    depth_candidates = [Candidate("b", Asset("depth", renderer.render(b.vertices).depth))]
    (depth_score,) = plugins.call("score", "render-compare", scorer="render-compare", instance=_instance("depth"),
                                  candidates=depth_candidates, ctx=ctx)  # fmt: skip
    assert depth_score.instruction_following == 1.0
    assert set(depth_score.distances) == {"if.depth_l1", "ref.depth_l1", "half.depth_l1", "cons.depth_l1"}
    from maskscore_core.builtins.render_compare_scorer import _decoded_row

    # decoded exactly: no reading error to measure (`read_from`, plugins/maskscore-image's tests)
    assert _decoded_row("render-compare", mesh_instance, candidates, ctx)[-1] is None


def test_clips_are_scored_frame_by_frame(small):
    from maskscore_core.builtins.render_compare_scorer import score_decoded

    a, half, b = mesh(), mesh({"jawOpen": 0.4}), mesh({"jawOpen": 0.8})
    ref_a = Decoded(vertices=a.vertices, frames=(a.vertices, a.vertices))
    ref_b = Decoded(vertices=b.vertices, frames=(half.vertices, b.vertices))
    exact = Decoded(vertices=b.vertices, frames=(half.vertices, b.vertices))
    frozen = Decoded(vertices=a.vertices, frames=(a.vertices, a.vertices))
    s_exact, s_frozen = score_decoded(small, "mouth", ref_a, ref_b, [exact, frozen])
    assert s_exact.instruction_following == 1.0 and s_frozen.consistency == 1.0
    assert s_exact.overall > s_frozen.overall
    (last_frame,) = small.score(small.prepare(a, b, "mouth"), [a])
    (first_frame,) = small.score(small.prepare(a, half, "mouth"), [a])
    assert s_frozen.instruction_following == pytest.approx(
        (last_frame.instruction_following + first_frame.instruction_following) / 2, rel=1e-6
    )


def test_score_command_prints_json_and_names_bad_files(tmp_path):
    from click.testing import CliRunner

    from maskscore_core.cli.score_command import score_command
    from maskscore_core.body.meshio import write_mesh

    a = write_mesh(tmp_path / "a.glb", mesh().vertices)
    b = write_mesh(tmp_path / "b.ply", mesh({"jawOpen": 0.8}).vertices)
    half = write_mesh(tmp_path / "half.obj", mesh({"jawOpen": 0.4}).vertices)
    args = ["--frame-a", str(a), "--frame-b", str(b), "--part", "mouth", "--views", "4", "--resolution", "64"]
    result = CliRunner().invoke(score_command, [*args, str(b), str(half)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    first, second = report["candidates"]
    assert first["path"] == str(b) and first["instruction_following"] == 1.0
    assert first["overall"] > second["overall"]
    assert "if.lpips" in second["distances"] and report["views"]["count"] == 4
    again = CliRunner().invoke(score_command, [*args, str(b), str(half)])
    assert again.output == result.output
    missing = CliRunner().invoke(score_command, [*args, str(tmp_path / "nope.glb")])
    assert missing.exit_code != 0 and "not found" in missing.output
    unknown = CliRunner().invoke(score_command, ["--frame-a", str(a), "--frame-b", str(b), "--part", "lips", str(half)])
    assert unknown.exit_code != 0 and "unknown part 'lips'" in unknown.output
