"""Video as frames: pixel clips (an .mp4, or PNG frames with clip.json) decoded frame by frame
through mediapipe Face Mesh and the landmark fit, smoothed in time; and their refusals."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState
from maskscore_core.plugin.testing import unit_instance

pytest.importorskip("maskscore_face_landmarks")

from maskscore_face_landmarks.pixels import smooth_states  # noqa: E402
from maskscore_video.pixels import PixelClip, draw_clip, write_png_folder, write_video_file  # noqa: E402

MODALITY = "video"
JAW = (0.0, 0.25, 0.5, 0.5, 0.25)
SIZE = 448  # the one camera of pictures: the face about 100 px wide (at least 60 px are needed)


def _state(jaw: float) -> BodyState:
    expression = np.zeros(52)
    expression[get_body_model().action_index("jawOpen")] = jaw
    return BodyState(expression=expression)


def _instance():
    return unit_instance(MODALITY, "transition the mouth from frame A to frame B", "temporal_edit",
                         [_state(0.0)] * 3, [_state(j) for j in JAW], key="unit-video-pixels", fps=10.0)  # fmt: skip


@pytest.fixture(scope="module")
def frames():
    """The clip's frames drawn as pixel clips are drawn (`draw_clip`: the one camera of pictures)."""
    return list(draw_clip([_state(j) for j in JAW], 10.0, SIZE, "drawn").frames)


def _read(value, root, ctx):
    return plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=root, ctx=ctx)


def _jaw_track(asset, ctx):
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=_instance(), ctx=ctx)
    return decoded.activations[:, get_body_model().action_index("jawOpen")], decoded


def test_png_folder_and_mp4_decode_to_the_jaw_motion(frames, ctx, tmp_path):
    """Both kinds of pixel clip give (T, 52) activations whose jaw follows the drawn one smoothed as
    the decoder smooths (within 0.15; at 10 fps the neighbours weigh 0.04 each), the right
    frame rate and finite meshes; the PNG folder round-trips through write_asset."""
    clip = PixelClip(frames, 10.0, "drawn", [f"drawn (frame {i})" for i in range(len(frames))])
    folder = write_png_folder(clip, tmp_path / "png")
    assert json.loads((folder / "clip.json").read_text()) == {"fps": 10.0}
    png = _read("png", tmp_path, ctx)
    assert isinstance(png.data, PixelClip) and len(png.data.frames) == len(JAW) and png.data.fps == 10.0
    np.testing.assert_array_equal(png.data.frames[2], frames[2])
    jaw, decoded = _jaw_track(png, ctx)
    assert decoded.activations.shape == (len(JAW), 52) and all(np.isfinite(f).all() for f in decoded.frames)
    expected = [s.expression[get_body_model().action_index("jawOpen")] for s in smooth_states([_state(j) for j in JAW], 10.0)]
    smoothed = np.asarray(expected)
    assert np.abs(jaw - smoothed).max() < 0.15, jaw
    written = plugins.call("write_asset", asset=png, directory=tmp_path / "out", name="again", ctx=ctx)
    assert sorted(p.name for p in (ctx.workdir / written).iterdir())[:2] == ["clip.json", "frame_00000.png"]

    write_video_file(frames, 10.0, tmp_path / "clip.mp4")
    mp4 = _read("clip.mp4", tmp_path, ctx)
    assert len(mp4.data.frames) == len(JAW) and mp4.data.fps == pytest.approx(10.0)
    jaw_mp4, _ = _jaw_track(mp4, ctx)
    assert np.abs(jaw_mp4 - smoothed).max() < 0.15, jaw_mp4


def test_bad_pixel_clips_are_refused_naming_file_and_frame(frames, ctx, tmp_path):
    import imageio.v3 as iio

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "clip.json").write_text('{"fps": 25}')
    with pytest.raises(ValueError, match="empty: the clip has no frames"):
        _read("empty", tmp_path, ctx)
    bad_rate = tmp_path / "rate"
    bad_rate.mkdir()
    (bad_rate / "clip.json").write_text('{"fps": "fast"}')
    with pytest.raises(ValueError, match="'fps' must be a number"):
        _read("rate", tmp_path, ctx)
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "clip.json").write_text('{"fps": 25}')
    iio.imwrite(corrupt / "frame_00000.png", frames[0])
    (corrupt / "frame_00001.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    with pytest.raises(ValueError, match="frame_00001.png: frame 1 is not a readable PNG"):
        _read("corrupt", tmp_path, ctx)
    (tmp_path / "nothing.mp4").write_bytes(b"")
    with pytest.raises(ValueError, match="nothing.mp4: video file is empty"):
        _read("nothing.mp4", tmp_path, ctx)
    (tmp_path / "junk.mp4").write_bytes(b"not a video at all" * 10)
    with pytest.raises(ValueError, match="junk.mp4: not a readable video"):
        _read("junk.mp4", tmp_path, ctx)
    faceless = tmp_path / "faceless"
    write_png_folder(PixelClip([frames[0], np.full_like(frames[0], 40)], 25.0, "x", ["a", "b"]), faceless)
    asset = _read("faceless", tmp_path, ctx)
    with pytest.raises(ValueError, match=r"frame_00001.png \(frame 1\): no face found"):
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=_instance(), ctx=ctx)
    instance = _instance()
    brows = attrs.evolve(instance, instruction=attrs.evolve(instance.instruction, part="eyebrow"))
    with pytest.raises(ValueError, match="faceless: a pixel clip is read through a face-landmark detector, which does not see the eyebrow"):
        plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=brows, ctx=ctx)


def test_the_ladder_through_pixel_clips_is_recovered(tmp_path):
    """A built-in edit (clips at 2 fps, 2 sampled frames, 4 views of 96 px): the frame-pair rungs
    drawn as pixel clips of 448 px frames, written as PNG folders, read back and scored; the scorer reads
    the references through pixels of the same size (`Modality.pixel_size`), and overall falls
    strictly down the rungs. benchmarks/bench_landmark_fit.py --ladders runs more instances."""
    import itertools

    from maskscore_core.edits.instances import make_instances
    from maskscore_core.plugin.context import Context
    from maskscore_core.plugin.records import Asset, Candidate
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials

    trials = generate_trials(AnnySourceConfig(seed=0, subjects=3, trials_per_subject=2, fps=2.0), tmp_path / "trials")
    ctx = Context(workdir=tmp_path, seed=0, config={"views": 4, "resolution": 96, "video_frames": 2})
    (instance,) = make_instances(trials, MODALITY, np.random.default_rng(0), 1)
    rungs = plugins.call("edit", "frame-pair", editor="frame-pair", modality=MODALITY, instance=instance, ctx=ctx)
    candidates = []
    for rung in rungs:
        clip = rung.asset.data
        value = plugins.call("write_asset", asset=Asset(MODALITY, draw_clip(clip.states, clip.fps, SIZE, rung.label)),
                             directory=tmp_path / "pixels", name=f"rung{rung.rung}", ctx=ctx)  # fmt: skip
        candidates.append(Candidate(rung.label, _read(value, ctx.workdir, ctx), rung.rung))
    assert all(isinstance(c.asset.data, PixelClip) for c in candidates)
    scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
    overall = [s.overall for s in scores]
    assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({instance.instruction.part}): {overall}"
    assert overall[0] > 0.9, overall  # rung 1's frames are frame B's: read back as B's references are


def test_a_pixel_clip_reads_the_head_turn_from_rigid_points_where_the_mouth_misleads():
    """Frames of a head pitched up while the mouth is open in a smile: the detector misreads
    the open smile, and fitted jointly the misread pulls the turn; the video modality's fit
    (`PIXEL_CLIP_FIT`, the rigid-point turn weighed against the joint one) reads the turn closer."""
    from maskscore_core.trials import landmark_fit as lf
    from maskscore_face_landmarks.pixels import PIXEL_CLIP_FIT, PIXEL_PICTURE_FIT, PixelFitter, decode_sequence

    body = get_body_model()
    chain = [body.bone_index(name) for name in lf.LINEAR_BONES]
    states = []
    for jaw, smile in ((0.5, 0.5), (0.5, 0.5), (0.4, 0.5)):
        expression = np.zeros(52)
        expression[body.action_index("jawOpen")] = jaw
        expression[[body.action_index("mouthSmileLeft"), body.action_index("mouthSmileRight")]] = smile
        pose = np.zeros((len(body.bone_names), 3))
        pose[chain] = np.array([0.4, 0.3, 0.3])[:, None] * np.array([0.12, 0.0, 0.0])  # pitched 0.12 rad
        states.append(BodyState(expression=expression, pose=pose))
    clip = draw_clip(states, 5.0, SIZE, "turning")

    def turn_error(config):
        fitted = decode_sequence(clip.frames, BodyState(), clip.names, clip.fps, PixelFitter(config=config))
        return float(np.mean([np.abs(f.pose[chain].sum(0) - s.pose[chain].sum(0)).max() for f, s in zip(fitted, states)]))

    joint, weighed = turn_error(PIXEL_PICTURE_FIT), turn_error(PIXEL_CLIP_FIT)
    assert weighed < 0.6 * joint, (weighed, joint)  # measured 0.006 against 0.016 rad
