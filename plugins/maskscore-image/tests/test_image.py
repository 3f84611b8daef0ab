"""The image modality: pictures of the face read back to the ANNY mesh through mediapipe Face Mesh
and the landmark fit; PNG files, rows, refusals (no face, several faces, a face too small,
unreadable or empty files), and the frame-pair ladder through rendered pixels."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.contract import ModalityContract
from maskscore_core.body.parts import PartError
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.testing import face_state, unit_instance

MODALITY = "image"


def _instance():
    return unit_instance(MODALITY, "edit the mouth in the picture to match frame B", "expression_change",
                         face_state(), face_state(jawOpen=0.5), key="unit-image-0001")  # fmt: skip


class TestImageContract(ModalityContract):
    """The ladder on two built-in instances, through rendered pictures (448 px)."""

    modality = MODALITY
    bad_files = (
        ("nope.png", {}, "does not exist"),
        ("empty.png", {"empty.png": b""}, "image file is empty"),
        ("junk.png", {"junk.png": b"\x89PNG\r\n\x1a\n not really"}, "unreadable image"),
        ("notes.txt", {"notes.txt": b"hello"}, "not a picture file"),
    )
    ladder_instances = 2
    ladder_seed = 0

    unit_instance = staticmethod(_instance)


def test_decode_recovers_the_jaw_from_pixels(ctx):
    """Frame B (jawOpen 0.5) drawn, written as PNG, read back and decoded: the fitted jaw is
    within 0.1 of the truth and the other actions stay small."""
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", asset=asset, directory=ctx.workdir, name="b", ctx=ctx)
    read = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=ctx.workdir, ctx=ctx)
    np.testing.assert_array_equal(read.data, asset.data)  # PNG is lossless
    from maskscore_image.decode import fit_frames

    (fit,) = fit_frames([read.data], instance)
    jaw = get_body_model().action_index("jawOpen")
    assert abs(fit.state.expression[jaw] - 0.5) < 0.1
    assert np.delete(fit.state.expression, jaw).max() < 0.25
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=read, instance=instance, ctx=ctx)
    assert decoded.vertices.shape[1] == 3 and np.isfinite(decoded.vertices).all()
    assert decoded.appearance is None  # drawn in the look expected of the subject (none: the default)
    again = plugins.call("decode_to_mesh", MODALITY, asset=read, instance=instance, ctx=ctx)
    np.testing.assert_array_equal(again.vertices, decoded.vertices)  # deterministic: no random start


def test_a_picture_in_another_look_decodes_with_the_look_it_shows():
    """`decode.shown_look`, which gives each decoded picture its look: a picture drawn in another
    skin, light and backdrop than the subject's (default) look carries the look read from it;
    drawn in the look expected, it carries that look; a picture too small to read is refused
    with one line naming the frame."""
    from maskscore_core.plugin.records import Appearance, Light
    from maskscore_face_landmarks.pixels import PixelFitError, picture
    from maskscore_image.decode import shown_look

    other = Appearance(skin=(0.4, 0.28, 0.2), light=Light((-0.5, 0.4, 0.8), 0.9, 0.2), background=(0.7, 0.5, 0.2))
    state = attrs.evolve(face_state(jawOpen=0.5), appearance=other)
    pixels = picture(state, 448)
    found = shown_look(pixels, state, face_state(), "frame X")
    assert found is not None and found != Appearance()
    np.testing.assert_allclose(found.skin, other.skin, atol=0.02)
    np.testing.assert_allclose(found.background, other.background, atol=0.01)
    assert shown_look(pixels, state, state, "frame X") == other
    with pytest.raises(PixelFitError, match="^frame X: the picture shows"):
        shown_look(picture(state, 16), state, face_state(), "frame X")


def test_a_wider_open_mouth_reads_wider_open():
    """The inside of an open mouth is drawn dark (`appearance.ORAL_CAVITY`), so the detector finds
    the inner lip edge: jawOpen 0.2 / 0.5 / 0.8 read back within 0.1 and in order. Lit like the
    lips, the widest read as about 0.6, no more than a half-open one."""
    from maskscore_face_landmarks.pixels import picture
    from maskscore_image.decode import fitter

    jaw = get_body_model().action_index("jawOpen")
    read = []
    for value in (0.2, 0.5, 0.8):
        state = face_state(jawOpen=value)
        read.append(float(fitter().fit(picture(state, 448), state, f"jawOpen {value}").state.expression[jaw]))
    assert read == sorted(read) and read[2] - read[1] > 0.15
    np.testing.assert_allclose(read, [0.2, 0.5, 0.8], atol=0.1)


def _decode(pixels, ctx, label="cand"):
    asset = Asset(modality=MODALITY, data=pixels, meta={"label": label})
    return plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=_instance(), ctx=ctx)


def test_no_face_several_faces_and_a_small_face_are_refused_by_name(ctx):
    instance = _instance()
    face = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.a, ctx=ctx).data
    with pytest.raises(ValueError, match="candidate blank of unit-image-0001: no face found"):
        _decode(np.full_like(face, 40), ctx, "blank")
    with pytest.raises(ValueError, match="candidate twins of unit-image-0001: 2 faces found"):
        size = face.shape[0]
        twins = np.empty((2 * size, 2 * size, 3), dtype=np.uint8)
        twins[...] = face[0, 0]  # the backdrop
        twins[size // 2 : size // 2 + size, :size] = face
        twins[size // 2 : size // 2 + size, size:] = face
        _decode(twins, ctx, "twins")
    small = face[::3, ::3]  # ~40 px wide
    with pytest.raises(ValueError, match="candidate small of unit-image-0001: .*px wide; at least 60 px"):
        _decode(np.ascontiguousarray(small), ctx, "small")


def test_parts_the_detector_cannot_see_are_not_offered(ctx):
    mask = plugins.call("mask_part", MODALITY, modality=MODALITY, part="mouth", ctx=ctx)
    assert 13 in mask.native["landmarks"] and len(mask.region) > 0
    for part in ("ears", "back hair", "nose", "irides", "eyebrow"):
        with pytest.raises(PartError, match=f"does not see the {part}"):
            plugins.call("mask_part", MODALITY, modality=MODALITY, part=part, ctx=ctx)


def test_references_are_read_at_each_candidates_size(ctx):
    """Frame B's picture drawn at two sizes, scored in one call: the scorer groups the candidates
    by size (`Modality.pixel_size`) and reads the references through pictures of that size, so
    each reads back exactly as frame B's reference does (overall 1.0) and frame A's picture
    scores as doing nothing (instruction_following about 0, consistency 1)."""
    from maskscore_core.plugin.records import Candidate
    from maskscore_face_landmarks.pixels import picture

    instance = _instance()
    sizes = (448, 320)
    candidates = [Candidate(f"B at {n} px", Asset(MODALITY, picture(instance.b.state, n)), 1) for n in sizes]
    candidates.append(Candidate("A at 320 px", Asset(MODALITY, picture(instance.a.state, 320)), 5))
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    assert [s.overall for s in scores[:2]] == [1.0, 1.0]
    assert scores[2].instruction_following < 0.05 and scores[2].consistency == 1.0  # frame A itself: nothing done


def test_head_motion_is_charged_past_the_references_reading_error(ctx):
    """Pictures are read back with the head a little off (the fit trades a head turn against
    facial actions), the references as much as the candidates. The scorer gives the metric the
    exact meshes the references were drawn from (`read_from`); the error their reading put on
    their heads is measured, and a candidate's head_motion distance is what lies past it
    (`head_motion.past_reading_error`)."""
    import attrs

    from maskscore_core.builtins import render_compare_scorer as rcs
    from maskscore_core.metric import head_motion
    from maskscore_core.plugin.records import Candidate
    from maskscore_face_landmarks.pixels import picture

    instance = _instance()
    halfway = np.zeros_like(instance.b.state.expression)
    halfway[get_body_model().action_index("jawOpen")] = 0.25
    middle = attrs.evolve(instance.b.state, expression=halfway)
    candidates = [Candidate("half way", Asset(MODALITY, picture(middle, 448)), 2),
                  Candidate("A", Asset(MODALITY, picture(instance.a.state, 448)), 5)]  # fmt: skip
    compare, part, ref_a, ref_b, decoded, framing, region, half, read_from = rcs._decoded_row("render-compare", instance, candidates, ctx)
    assert read_from is not None
    np.testing.assert_array_equal(read_from[0].vertices, rcs._with_vertices(rcs.Decoded(), instance.a).vertices)
    prepared = compare.prepare(ref_a, ref_b, part, framing, region=region, halfway=half, read_from=read_from)
    error = prepared.head_reading_error
    assert 0.0 < error < 0.01  # metres: a reading, not a turn
    charged = rcs.score_decoded(compare, part, ref_a, ref_b, decoded, framing, region, half, read_from)
    raw = rcs.score_decoded(compare, part, ref_a, ref_b, decoded, framing, region, half, None)
    for with_error, without in zip(charged, raw):
        expected = head_motion.past_reading_error(without.distances["cons.head_motion"], error)
        assert with_error.distances["cons.head_motion"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert with_error.consistency >= without.consistency


def test_only_edits_a_picture_shows_are_drawn(tmp_path):
    """The modality declares the facial actions a picture shows (`shown_actions`): every built-in
    image instance changes its part by the draw's threshold in those, and a build's configuration
    records them, so a build with other rules is not resumed into."""
    from maskscore_core.dataset.plan import BuildConfig
    from maskscore_core.dataset.runner import content_config
    from maskscore_core.edits import instances as edits
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_image import SHOWN_ACTIONS

    shown = plugins.modality(MODALITY).shown_actions
    assert shown == SHOWN_ACTIONS
    trials = generate_trials(AnnySourceConfig(seed=1, subjects=3, trials_per_subject=2, fps=25.0), tmp_path / "trials")
    for instance in edits.make_instances(trials, MODALITY, np.random.default_rng(0), 5):
        part = instance.instruction.part
        assert edits.part_change(part, instance.a.state, instance.b.state, shown) >= 1.0, instance.key
    config = content_config(BuildConfig(split="bench", out=tmp_path / "bench", modalities=(MODALITY,)))
    assert config["shown_actions"] == {MODALITY: list(shown)}


def test_shown_actions_read_back_on_every_subject_and_the_others_do_not(tmp_path):
    """Each facial action of the fit (a left/right pair as one), set alone to 0.5 on a subject and
    drawn as the modality's picture, is read back through the detector and the fit. The shown
    ones read at least 0.15 on the default subject and two subjects of the built-in trials; each
    other one reads less than that on at least one of them, so the draw would make rows on
    faces where the picture does not show the edit (the table for more subjects:
    `bench_landmark_fit.py --readback 0.5 --trial-seeds 0,1`)."""
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_image.shown import SHOWN_ACTIONS, action_groups, read_back

    trials = {t.subject.subject_id: t for t in generate_trials(AnnySourceConfig(seed=1, trials_per_subject=1), tmp_path)}
    subjects = {"default": face_state(), **{name: trials[name].frames[0].state for name in ("anny-s001", "anny-s002")}}
    groups = action_groups()

    def reads(names, subject):
        return read_back(names, subjects[subject], 0.5, 448, f"{names[0]} on {subject}")

    assert {n for names in groups.values() for n in names} >= set(SHOWN_ACTIONS)
    for group, names in groups.items():
        if set(names) <= set(SHOWN_ACTIONS):
            read = {subject: reads(names, subject) for subject in subjects}
            assert min(read.values()) >= 0.15, (group, read)
        else:
            assert not set(names) & set(SHOWN_ACTIONS), group  # a pair is shown whole or not at all
            assert any(reads(names, subject) < 0.15 for subject in subjects), group


def test_a_picture_without_a_face_prints_one_line_and_nothing_else(ctx, tmp_path):
    """In a fresh process, as a user runs it, the refusal is all that reaches the terminal: the
    detector's and segmenter's graphs start without their C++ notices
    (`maskscore_face_landmarks.start_quietly`)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from PIL import Image

    face = plugins.call("encode", MODALITY, modality=MODALITY, target=_instance().a, ctx=ctx).data
    Image.fromarray(face).save(tmp_path / "a.png")
    Image.fromarray(np.full_like(face, 40)).save(tmp_path / "blank.png")
    script = Path(sys.executable).with_name("maskscore")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "maskscore_core"]
    args = ["score", "--frame-a", "a.png", "--frame-b", "a.png", "--part", "mouth", "--views", "2", "--resolution", "32", "blank.png"]
    env = {**os.environ, "MASKSCORE_LOAD_PLUGINS": "maskscore-mesh,maskscore-image,maskscore-face-landmarks", "MASKSCORE_DEBUG": ""}
    run = subprocess.run([*command, *args], cwd=tmp_path, env=env, capture_output=True, timeout=600)
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.stderr.decode() == "Error: blank.png: no face found\n"
