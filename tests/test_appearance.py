"""The appearance channel: records, shading, the metric's appearance distance, built-in looks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maskscore_core.metric import appearance

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.records import Appearance, AppearanceError, BodyState, Decoded, Light, converter
from maskscore_core.metric.render import RenderResult


def _first_face(part: str) -> int:
    """A reference-mesh triangle whose most specific part is `part`."""
    index = appearance.PART_PRECEDENCE.index(part)
    return int(np.flatnonzero(appearance.face_regions() == index)[0])


def test_shading_matches_an_independent_computation():
    """Six pixels by hand: mouth (own albedo), eyebrow (skin tint), nose (own light), body
    (skin, no part), earrings (accessory colour), backdrop; the expected values are computed here
    from the documented model with numbers written out, not with the module's helpers."""
    skin = (0.8, 0.6, 0.5)
    look = Appearance(
        skin=skin,
        albedo={"mouth": (0.7, 0.2, 0.25)},
        light=Light((0.0, 0.0, 2.0), 0.9, 0.1),  # not unit length: shading normalises it
        part_light={"nose": Light((1.0, 0.0, 0.0), 0.5, 0.3)},
        background=(0.1, 0.9, 0.3),
    )
    body_face = int(np.flatnonzero(appearance.face_regions() == -1)[0])
    face_id = np.array([[[_first_face("mouth"), _first_face("eyebrow"), _first_face("nose")],
                         [body_face, _first_face("earwear"), -1]]], dtype=np.int32)  # fmt: skip
    s = np.sqrt(0.5)
    normals = np.array([[[[0, 0, 1], [0, s, s], [s, 0, s]], [[0, 0, -1], [0, 0, 1], [0, 0, 0]]]], dtype=np.float32)
    coverage = face_id >= 0
    render = RenderResult(depth=np.zeros((1, 2, 3), np.float32), normals=normals, face_id=face_id, coverage=coverage)
    got = appearance.shade(render, look)

    expected = np.zeros((1, 2, 3, 3))
    expected[0, 0, 0] = np.array([0.7, 0.2, 0.25]) * (0.1 + 0.9 * 1.0)
    expected[0, 0, 1] = np.array([0.6 * 0.8, 0.5 * 0.6, 0.45 * 0.5]) * (0.1 + 0.9 * s)
    expected[0, 0, 2] = np.array(skin) * (0.3 + 0.5 * s)  # the nose's own light, from +x
    expected[0, 1, 0] = np.array(skin) * 0.1  # facing away: ambient only
    expected[0, 1, 1] = np.array([0.2, 0.2, 0.23]) * (0.1 + 0.9)
    expected[0, 1, 2] = [0.1, 0.9, 0.3]
    assert got.shape == (1, 2, 3, 3) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=1e-6)
    image = appearance.picture(render, look)
    assert image.dtype == np.uint8 and image.shape == (2, 3, 3)
    assert np.abs(image.astype(int) - np.rint(expected[0] * 255)).max() <= 1


def test_shading_rejects_passes_of_another_mesh():
    render = RenderResult(
        depth=np.zeros((1, 1, 1), np.float32), normals=np.zeros((1, 1, 1, 3), np.float32),
        face_id=np.array([[[10**7]]], np.int32), coverage=np.ones((1, 1, 1), bool),
    )  # fmt: skip
    with pytest.raises(appearance.AppearanceShadingError, match="another mesh"):
        appearance.shade(render, Appearance())


def test_appearance_round_trips_through_cattrs():
    look = Appearance(
        skin=(0.5, 0.4, 0.3), albedo={"mouth": (0.7, 0.2, 0.2)}, light=Light((0.1, 0.5, 0.9), 1.1, 0.2),
        part_light={"face": Light((-0.4, 0.3, 0.8), 0.7, 0.25)}, background=(0.2, 0.3, 0.4),
    )  # fmt: skip
    state = BodyState(appearance=look)
    back = converter.structure(json.loads(json.dumps(converter.unstructure(state))), BodyState)
    assert back == state and back.appearance.part_light["face"].intensity == 0.7
    assert BodyState().appearance is None  # geometry only unless a look is given
    assert converter.structure(json.loads(json.dumps(converter.unstructure(BodyState()))), BodyState) == BodyState()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Appearance(skin=(float("nan"), 0.5, 0.5)), "skin albedo holds NaN"),
        (lambda: Appearance(skin=(0.5, 1.5, 0.5)), r"skin albedo must lie in \[0, 1\]"),
        (lambda: Appearance(background=(0.5, 0.5)), "background colour must have 3 values, got 2"),
        (lambda: Appearance(albedo={"mouth": (0.1, 0.2, -0.1)}), r"albedo of 'mouth' must lie in \[0, 1\]"),
        (lambda: Appearance(albedo={"elbow": (0.1, 0.2, 0.1)}), "'elbow' is not a part"),
        (lambda: Light((0.0, 0.0, 0.0)), "non-zero vector"),
        (lambda: Light((1.0, float("inf"), 0.0)), "light direction holds NaN or infinite"),
        (lambda: Light(intensity=5.0), r"intensity must be a finite number in \[0.0, 4.0\]"),
        (lambda: Light(ambient=float("nan")), "ambient must be a finite number"),
        (lambda: Appearance(light="bright"), "light must be a records.Light"),
    ],
)
def test_bad_appearance_is_a_clear_error(make, message):
    with pytest.raises(AppearanceError, match=message):
        make()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (("light", "direction"), [0.0, 1.0], "light direction must have 3 values, got 2"),
        (("skin",), [0.1, 0.2, 0.3, 0.4], "skin albedo must have 3 values, got 4"),
        (("background",), [0.1, "nan", 0.3], "background colour holds NaN"),
        (("light", "intensity"), 9.0, "intensity must be a finite number"),
    ],
)
def test_bad_appearance_in_a_record_is_named(field, value, message):
    record = converter.unstructure(BodyState(appearance=Appearance()))
    target = record["appearance"]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    with pytest.raises(Exception) as info:
        converter.structure(record, BodyState)
    error = info.value
    while isinstance(error, BaseExceptionGroup):  # cattrs groups the validation errors
        error = error.exceptions[0]
    assert isinstance(error, AppearanceError) and message in str(error)


def test_appearance_change_thresholds():
    a = BodyState(appearance=Appearance(skin=(0.5, 0.4, 0.3)))
    darker = BodyState(appearance=Appearance(skin=(0.45, 0.4, 0.3)))
    assert edits.appearance_change("skin_tone", "face", a, darker) == pytest.approx(0.05 / edits.ALBEDO_DELTA)
    assert edits.appearance_change("skin_tone", "irides", a, darker) == 0.0  # the iris does not tan
    assert edits.appearance_change("background_change", "ears", a, darker) == 0.0
    turned = BodyState(appearance=Appearance(light=Light((0.0, 0.0, 1.0))))
    turned_more = BodyState(appearance=Appearance(light=Light((np.sin(0.2), 0.0, np.cos(0.2)))))
    assert edits.appearance_change("lighting_change", "mouth", turned, turned_more) == pytest.approx(0.2 / 0.15)
    assert edits.appearance_change("lighting_change", "mouth", turned, BodyState()) == 0.0  # no look: no change


def test_geometric_scores_do_not_change_without_appearance():
    """Candidates without a look score on geometry alone; with a look, only the picture adds."""
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render_compare import RenderCompare
    from maskscore_core.metric.views import ViewConfig

    compare = RenderCompare(ViewConfig(count=2, resolution=48))
    state = BodyState(phenotype={"age": 0.5})
    vertices = get_reference_mesh().vertices([state])[0]
    plain = compare.prepare(Decoded(vertices=vertices), Decoded(vertices=vertices), "mouth")
    [score] = compare.score(plain, [Decoded(vertices=vertices)])
    assert not any("appearance" in key for key in score.distances)
    look = Appearance()
    looked = compare.prepare(Decoded(vertices=vertices, appearance=look), Decoded(vertices=vertices, appearance=look), "mouth")
    [same] = compare.score(looked, [Decoded(vertices=vertices)])  # the candidate has no look
    assert same.distances == score.distances and same.overall == score.overall
    red_lips = Appearance(albedo={"mouth": (0.9, 0.1, 0.1)})
    [changed] = compare.score(looked, [Decoded(vertices=vertices, appearance=red_lips)])
    assert changed.distances["if.appearance_l1"] > 0.01
    assert changed.distances["cons.appearance_l1"] == 0.0  # nothing outside the mouth changed
    assert changed.instruction_following < score.instruction_following


def test_background_change_compares_the_backdrop_as_the_edited_region():
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render_compare import RenderCompare
    from maskscore_core.metric.views import ViewConfig

    compare = RenderCompare(ViewConfig(count=2, resolution=48))
    vertices = get_reference_mesh().vertices([BodyState()])[0]
    a, b = Appearance(background=(0.1, 0.1, 0.1)), Appearance(background=(0.9, 0.5, 0.1))
    prepared = compare.prepare(Decoded(vertices=vertices, appearance=a), Decoded(vertices=vertices, appearance=b), "ears")
    scores = compare.score(prepared, [Decoded(vertices=vertices, appearance=look) for look in (b, a)])
    assert scores[0].distances["if.appearance_l1"] == 0.0 and scores[0].distances["cons.appearance_l1"] == 0.0
    assert scores[1].distances["if.appearance_l1"] > 0.2  # the backdrop was not changed
    assert scores[1].distances["cons.appearance_l1"] == 0.0
    assert scores[0].overall > scores[1].overall


def test_built_in_trials_vary_in_look_and_are_deterministic(tmp_path):
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    config = AnnySourceConfig(seed=4, subjects=2, trials_per_subject=2, max_words=3)
    first = generate_trials(config, tmp_path / "one")
    generate_trials(config, tmp_path / "two")
    for path in sorted((tmp_path / "one" / "trials").glob("*.json")):
        assert path.read_bytes() == (tmp_path / "two" / "trials" / path.name).read_bytes()
        assert b'"appearance":{' in path.read_bytes()
    by_subject: dict[str, list] = {}
    for trial in first:
        looks = {json.dumps(converter.unstructure(f.state.appearance)) for f in trial.frames}
        assert len(looks) == 1  # one look per clip
        by_subject.setdefault(trial.subject.subject_id, []).append(trial.frames[0].state)
    for a, b in by_subject.values():
        for task, task_parts in edits.APPEARANCE_PARTS.items():
            assert all(edits.appearance_change(task, part, a, b) >= 1.0 for part in task_parts), task
