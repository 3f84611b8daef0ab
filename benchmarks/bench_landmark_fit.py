"""From pixels to ANNY: how well the face fit recovers known parameters from rendered pictures,
and how long detect + fit take per frame.

Each case is a state of known facial actions and head rotation (jaw, smile, blink, brows, gaze,
head yaw, head pitch) of the default subject, rendered through the project's appearance shading
from one camera at a given yaw around the head and image size; mediapipe Face Mesh detects the
face, the detector's offset is measured on the neutral picture of the same subject and camera,
and the L-BFGS fit (`landmark_fit.PIXEL_FIT`) recovers actions, head rotation and the camera.
Errors are |fitted - true| of the case's own actions (mean), of the head rotation (degrees), of
the camera centre (mm), and the largest action the case did not set ("spill").

    .venv/bin/python benchmarks/bench_landmark_fit.py                   # the README's table
    .venv/bin/python benchmarks/bench_landmark_fit.py --yaws 0 --sizes 192 --json out.json
    .venv/bin/python benchmarks/bench_landmark_fit.py --ladders 5 --seeds 0,1   # ladders through pixels
    .venv/bin/python benchmarks/bench_landmark_fit.py --ladders 1 --modalities video --frame-errors  # and the fit's
                                                       # errors against the states that drew each rung (image too)
    .venv/bin/python benchmarks/bench_landmark_fit.py --readback 0.5 --trial-seeds 0,1  # what each facial action,
                                   # set alone, reads back as on each subject (the image modality's shown actions)
    .venv/bin/python benchmarks/bench_landmark_fit.py --turns --trial-seeds 0,1,2,3  # how well a head turn reads
                                   # back on each subject, without the brow points (as fitted) and with them
    .venv/bin/python benchmarks/bench_landmark_fit.py --builds --trial-seeds 0,1  # whose build a picture of one
                                   # subject decodes to, read as an edit of another (landmarks alone, outline)
    .venv/bin/python benchmarks/bench_landmark_fit.py --same-build --trial-seeds 0,1,2,3  # how the outline test
                                   # tells a subject's own pictures from others' (and the image ladders')
    .venv/bin/python benchmarks/bench_landmark_fit.py --looks --ladder-seeds 0/0,0/1  # which look each picture
                                   # of the image ladders decodes with, and how well the read look draws it
"""

from __future__ import annotations

import argparse
import json
import time


import attrs
import numpy as np

# Values differ from the steps the detector's response was measured at (0.6, 0.2 rad: anchors.py).
CASES: dict[str, dict] = {
    "neutral": {},
    "jaw": {"actions": {"jawOpen": 0.45}},
    "smile": {"actions": {"mouthSmileLeft": 0.5, "mouthSmileRight": 0.5}},
    "blink": {"actions": {"eyeBlinkLeft": 0.45, "eyeBlinkRight": 0.45}},
    "brows": {"actions": {"browInnerUp": 0.7, "browOuterUpLeft": 0.4, "browOuterUpRight": 0.4}},
    "gaze": {"actions": {"eyeLookOutLeft": 0.5, "eyeLookInRight": 0.5}},
    "head yaw": {"head": (0.0, 0.25, 0.0)},
    "head pitch": {"head": (0.15, 0.0, 0.0)},
}


def case_state(case: dict):
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.plugin.records import BodyState

    body = get_body_model()
    expression = np.zeros(len(body.action_names))
    for name, value in case.get("actions", {}).items():
        expression[body.action_index(name)] = value
    pose = np.zeros((len(body.bone_names), 3))
    pose[body.bone_index("Head")] = case.get("head", (0.0, 0.0, 0.0))
    return BodyState(expression=expression, pose=pose)


def measure(yaw_deg: float, size: int, detector, anchors, config) -> list[dict]:
    from maskscore_core.metric import appearance
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.plugin.records import Appearance
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.trials import landmark_fit as lf
    from maskscore_core.metric.views import ViewConfig

    from maskscore_face_landmarks.pixels import face_centre

    body = get_body_model()
    # The close-up camera of the anchors: 0.6 m from the middle of the subject's face, here turned by yaw.
    view_config = ViewConfig(count=1, resolution=size, offset=(0.5, yaw_deg / 360.0), target=face_centre(case_state({})))
    renderer = get_renderer(view_config)
    pose = renderer.poses[0]
    view = lf.ViewCamera.from_pose(pose, view_config.fov_deg, size, size)
    origin = np.asarray(pose.origin)

    def draw(state):
        vertices = get_reference_mesh().vertices([state])[0]
        return appearance.picture(renderer.render(vertices), Appearance())

    neutral = case_state({})
    found = detector.detect(draw(neutral))
    bias = lf.landmark_bias(found, neutral, view, origin, anchors)
    rows = []
    for name, case in CASES.items():
        truth = case_state(case)
        image = draw(truth)
        t0 = time.perf_counter()
        try:
            landmarks = detector.detect(image)
        except lf.FaceDetectionError as exc:
            rows.append({"case": name, "yaw_deg": yaw_deg, "size": size, "error": str(exc)})
            continue
        t1 = time.perf_counter()
        # The camera starts where it is and is fitted too (recovered, not given).
        fit = lf.fit_views([lf.ViewLandmarks(landmarks, view, bias)], {}, config, neutral, anchors, origin + [0.01, -0.01, 0.02])
        t2 = time.perf_counter()
        set_ids = [body.action_index(n) for n in case.get("actions", {})]
        others = [i for i in range(len(body.action_names)) if i not in set_ids]
        head = body.bone_index("Head")
        rows.append({
            "case": name, "yaw_deg": yaw_deg, "size": size,
            "face_px": round(float(np.ptp(landmarks.points[:, 0])), 1),
            "action_error": round(float(np.abs(fit.state.expression[set_ids] - truth.expression[set_ids]).mean()), 3) if set_ids else None,
            "spill": round(float(np.abs(fit.state.expression[others] - truth.expression[others]).max()), 3),
            "head_error_deg": round(float(np.degrees(np.linalg.norm(fit.state.pose[head] - truth.pose[head]))), 2),
            "camera_error_mm": round(float(1000 * np.linalg.norm(fit.camera_position - origin)), 1),
            "reprojection_px": round(fit.mean_error_px, 2),
            "detect_ms": round(1000 * (t1 - t0), 1), "fit_ms": round(1000 * (t2 - t1), 1),
        })  # fmt: skip
    return rows


def table(rows: list[dict]) -> str:
    head = "| case | yaw | size px | face px | action err | spill | head err deg | camera err mm | reproj px | detect ms | fit ms |"
    lines = [head, "|" + "|".join(["---"] * 11) + "|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['yaw_deg']:g} | {r['size']} | {r['error']} |" + " |" * 7)
            continue
        action = "-" if r["action_error"] is None else f"{r['action_error']:.3f}"
        lines.append(
            f"| {r['case']} | {r['yaw_deg']:g} | {r['size']} | {r['face_px']:.0f} | {action} | {r['spill']:.3f} |"
            f" {r['head_error_deg']:.2f} | {r['camera_error_mm']:.1f} | {r['reprojection_px']:.2f} | {r['detect_ms']:.0f} | {r['fit_ms']:.0f} |"
        )
    return "\n".join(lines)


def frame_errors(clip, pixel_clip, subject) -> str:
    """How far the fit of each frame of a drawn clip is from the body state that drew it: the
    head's whole turn (Neck1 + Neck2 + Head, pitch and yaw, radians) and jawOpen / the smile
    (mean of both sides), as mean |error| and largest |error| over the frames (after smoothing,
    as the decoder reads them)."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.trials import landmark_fit as lf
    from maskscore_face_landmarks.pixels import decode_sequence
    from maskscore_video.pixels import _fitter

    body = get_body_model()
    chain = [body.bone_index(n) for n in lf.LINEAR_BONES]
    fitted = decode_sequence(pixel_clip.frames, subject, pixel_clip.names, pixel_clip.fps, _fitter())
    turn = np.stack([f.pose[chain].sum(0) - s.pose[chain].sum(0) for f, s in zip(fitted, clip.states)])
    smile = [body.action_index("mouthSmileLeft"), body.action_index("mouthSmileRight")]
    jaw = np.array([f.expression[body.action_index("jawOpen")] - s.expression[body.action_index("jawOpen")]
                    for f, s in zip(fitted, clip.states)])  # fmt: skip
    smiles = np.array([f.expression[smile].mean() - s.expression[smile].mean() for f, s in zip(fitted, clip.states)])

    def pair(values):
        return f"{np.abs(values).mean():.3f}/{np.abs(values).max():.3f}"

    return f"pitch {pair(turn[:, 0])} yaw {pair(turn[:, 1])} jaw {pair(jaw)} smile {pair(smiles)}"


@attrs.frozen
class LadderResult:
    """One ladder's printed line, and its overall scores of rungs 1-5 through pixels and as
    exact states (None where it was refused or failed)."""

    line: str
    pixels: tuple[float, ...] | None = None
    exact: tuple[float, ...] | None = None
    graded: bool = True  # False: refused by name (a part pixels are not read for), not counted


def smallest_step(overall) -> float:
    """The smallest drop between neighbouring rungs: positive where the ladder falls strictly
    down its rungs (in order), zero or negative where it does not."""
    return min(a - b for a, b in zip(overall, overall[1:]))


def ladder_summary(results: list[LadderResult]) -> str:
    """How many graded ladders fall strictly down their rungs through pixels; how far rungs 2-4
    through pixels lie from the same rungs as exact states, on average (rung 1 is the reference
    read back, 1 either way, and rung 5 another subject); and the smallest step down a ladder
    through pixels (negative where one is out of order). Variants of the fit are compared on
    these three figures, not on the count alone, which moves with single ties."""
    graded = [r for r in results if r.graded]
    scored = [r for r in graded if r.pixels is not None]
    steps = [smallest_step(r.pixels) for r in scored]
    ordered = sum(step > 0 for step in steps)  # a failed ladder is not
    text = f"in order: {ordered} of {len(graded)} ladders"
    if scored:
        gaps = [abs(p - e) for r in scored for p, e in zip(r.pixels[1:4], r.exact[1:4])]
        text += (f"; rungs 2-4 through pixels lie {np.mean(gaps):.3f} from the exact rungs on average;"
                 f" smallest step down a ladder {min(steps):+.3f}")  # fmt: skip
    return text


def ladders(count: int, workdir, seed: int = 0, trials_seed: int = 0, modalities=("image", "video"), size: int = 448,
            only=None, errors: bool = False) -> list[LadderResult]:
    """The frame-pair ladder through pixels on the first `count` built-in instances of the image
    and video modalities (trials seed `trials_seed`, 3 subjects x 2 trials; instances drawn with
    default_rng(seed); 4 views of 96 px). Image rungs are drawn as pictures of `size` px; video
    rungs (clips at 5 fps) as pixel clips of `size` px frames (`maskscore_video.pixels.draw_clip`),
    written as PNG folders and read back. Both are scored against references read through pixels
    of the same size. Each line: overall / instruction_following / consistency of rungs 1-5
    through pixels, overall of the same rungs as exact body states, and whether overall falls
    strictly down the rungs (each printed as it is done, and returned with its figures). only:
    instance numbers (1-based) to run, the others skipped. errors: also print each rung's fit
    errors against the states that drew it (video: per frame, `frame_errors`; image: frames A
    and B too, `picture_errors`)."""
    from pathlib import Path

    from maskscore_core.plugin import manager as plugins
    from maskscore_core.plugin.context import Context
    from maskscore_core.edits.instances import make_instances
    from maskscore_core.edits.ladder import build_ladder
    from maskscore_core.plugin.records import Asset, Candidate
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks.pixels import SEEN_PARTS

    workdir = Path(workdir)
    ctx = Context(workdir=workdir, seed=0, config={"views": 4, "resolution": 96, "image_resolution": size, "video_frames": 3})
    results = []

    def fmt(values):
        return " / ".join(f"{v:.2f}" for v in values)

    def score(instance, candidates):
        found = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
        return [s.overall for s in found], [s.instruction_following for s in found], [s.consistency for s in found]

    for modality in modalities:
        from maskscore_video.pixels import draw_clip, read_png_folder, write_png_folder

        fps = 5.0 if modality == "video" else 25.0
        trials = generate_trials(AnnySourceConfig(seed=trials_seed, subjects=3, trials_per_subject=2, fps=fps),
                                 workdir / f"trials-{modality}-{trials_seed}")  # fmt: skip
        mesh = plugins.modality("mesh")
        for number, instance in enumerate(make_instances(trials, modality, np.random.default_rng(seed), count), start=1):
            if only and number not in only:
                continue
            if modality == "video" and instance.instruction.part not in SEEN_PARTS:  # refused by name: no ladder
                line = f"| {modality} | {trials_seed}/{seed} | {number} ({instance.instruction.part}) | refused: not a part pixels are read for | | | | - |"
                print(line, flush=True)
                results.append(LadderResult(line, graded=False))
                continue
            candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=modality, instance=instance, ctx=ctx)
            if modality == "video":
                exact, pixels = candidates, []
                for c in candidates:
                    folder = workdir / f"{instance.key}-{trials_seed}" / f"rung{c.rung}"
                    clip = c.asset.data
                    write_png_folder(draw_clip(clip.states, clip.fps, size, c.label), folder)
                    pixels.append(Candidate(c.label, Asset(modality="video", data=read_png_folder(folder), path=str(folder)), c.rung))
                    if errors:
                        print(f"  {instance.key} rung {c.rung}: {frame_errors(clip, pixels[-1].asset.data, instance.a.state)}", flush=True)
            else:
                pixels = candidates
                rungs = build_ladder(instance)
                exact = [Candidate(t.label, mesh.encode(t, ctx), t.rung) for t in rungs]
                if errors:
                    from maskscore_face_landmarks.pixels import picture

                    drawn = [(f"frame {w.upper()}", instance.frame(w).state, picture(instance.frame(w).state, size)) for w in "ab"]
                    drawn_by = {t.rung: t.state for t in rungs}
                    drawn += [(f"rung {c.rung}", drawn_by[c.rung], c.asset.data) for c in candidates]
                    for text in picture_errors(instance, drawn):
                        print(text, flush=True)
            name = f"{number} ({instance.instruction.part})"
            try:
                overall, following, consistency = score(instance, pixels)
                exact_overall = score(instance, exact)[0]
                ordered = "yes" if smallest_step(overall) > 0 else "no"
                line = (f"| {modality} | {trials_seed}/{seed} | {name} | {fmt(overall)} | {fmt(following)} |"
                        f" {fmt(consistency)} | {fmt(exact_overall)} | {ordered} |")  # fmt: skip
                result = LadderResult(line, tuple(overall), tuple(exact_overall))
            except ValueError as err:
                result = LadderResult(f"| {modality} | {trials_seed}/{seed} | {name} | failed: {str(err).splitlines()[0]} | | | | no |")
            print(result.line, flush=True)
            results.append(result)
    return results


def clip_speed(frames: int = 5, size: int = 448) -> dict:
    """Fit time per frame of a pixel clip (the head turning while the jaw opens, drawn at `size`
    px), read as the video modality reads it (`PIXEL_CLIP_FIT`: a joint and a rigid-point fit per
    frame, weighed, then refined against the pixels, `photometric.refine_clip`), without the
    refinement, and with the joint fit alone, in one run: the ratios are what the weighing and
    the refinement cost."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.plugin.records import BodyState
    from maskscore_face_landmarks.photometric import PhotometricFit
    from maskscore_face_landmarks.pixels import PIXEL_CLIP_FIT, PIXEL_PICTURE_FIT, PixelFitter, decode_sequence
    from maskscore_video.pixels import draw_clip

    body = get_body_model()
    states = []
    for t in np.linspace(0.0, 1.0, frames):
        expression, pose = np.zeros(len(body.action_names)), np.zeros((len(body.bone_names), 3))
        expression[body.action_index("jawOpen")] = 0.5 * t
        pose[body.bone_index("Head")] = (0.1 * t, 0.15 * t, 0.0)
        states.append(BodyState(expression=expression, pose=pose))
    clip = draw_clip(states, 5.0, size, "speed clip")
    out = {"clip_frames": frames, "clip_size_px": size}
    fitters = {"joint": PixelFitter(config=PIXEL_PICTURE_FIT), "weighed": PixelFitter(config=PIXEL_CLIP_FIT),
               "refined": PixelFitter(config=PIXEL_CLIP_FIT, photometric=PhotometricFit())}  # fmt: skip
    for name, fitter in fitters.items():
        fitter.bias(BodyState(), size)  # the neutral detection, once per subject, outside the timing
        start = time.perf_counter()
        decode_sequence(clip.frames, BodyState(), clip.names, clip.fps, fitter)
        out[f"clip_{name}_ms_per_frame"] = 1000.0 * (time.perf_counter() - start) / frames
    out["clip_weighed_over_joint"] = out["clip_weighed_ms_per_frame"] / out["clip_joint_ms_per_frame"]
    out["clip_refined_over_weighed"] = out["clip_refined_ms_per_frame"] / out["clip_weighed_ms_per_frame"]
    return out


def builds(trial_seeds: list[int], size: int = 448) -> list[str]:
    """Whose build a picture decodes to. For every ordered pair of subjects of the built-in trials
    of each seed (first frames), the picture of subject "shown" is decoded as an edit of subject
    "asked" (frame A's), with the landmarks alone (their prior holds the asked build) and with the
    build read from the outline (`maskscore_face_landmarks.silhouette`, the image modality's
    reading). Each cell: the decoded mesh's mean distance (mm, ANNY's vertices) to the shown and to
    the asked subject's build, both in the decoded pose and expression; how far (px) the asked
    build's outline lies from the picture's (`silhouette.outline_distance`: above
    `SilhouetteFit.same_build` picture widths the outline decides the build); the time per picture."""
    import tempfile

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks.pixels import PixelFitter, default_segmenter, picture
    from maskscore_face_landmarks.silhouette import SilhouetteFit, outline_distance, outline_state

    mesh = get_reference_mesh()
    count = mesh.anny_vertex_count
    fitters = {"landmarks": PixelFitter(), "outline": PixelFitter(silhouette=SilhouetteFit())}

    def distance(state, phenotype):
        found, other = mesh.vertices([state, attrs.evolve(state, phenotype=dict(phenotype))])
        return 1000.0 * float(np.linalg.norm(found[:count] - other[:count], axis=1).mean())

    lines = ["| trials | shown | asked | asked build's outline px | landmarks: to shown / to asked mm | outline: to shown / to asked mm |"
             " reads as (landmarks, outline) | ms (landmarks, outline) |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    print("\n".join(lines), flush=True)
    for seed in trial_seeds:
        trials = generate_trials(AnnySourceConfig(seed=seed, trials_per_subject=1), tempfile.mkdtemp(prefix="builds-"))
        subjects = {trial.subject.subject_id: trial.frames[0].state for trial in trials}
        for shown, state in subjects.items():
            pixels = picture(state, size)
            for asked, subject in subjects.items():
                cells, reads, times = [], [], []
                for name, fitter in fitters.items():
                    start = time.perf_counter()
                    fit = fitter.fit(pixels, subject, f"{shown}'s picture as {asked}")
                    times.append(1000.0 * (time.perf_counter() - start))
                    if name == "landmarks":
                        asked_px = outline_distance(default_segmenter().mask(pixels), outline_state(fit.state, subject, fitter.config.bones))
                    near, far = distance(fit.state, state.phenotype), distance(fit.state, subject.phenotype)
                    cells.append(f"{near:.1f} / {far:.1f}")
                    reads.append("-" if shown == asked else ("shown" if near < far else "asked"))
                lines.append(f"| {seed} | {shown} | {asked} | {asked_px:.2f} | {cells[0]} | {cells[1]} | {', '.join(reads)} | {times[0]:.0f}, {times[1]:.0f} |")
                print(lines[-1], flush=True)
    return lines


OLD_SAME_BUILD = 0.009  # `SilhouetteFit.same_build` while every accessory was counted: the rule compared with


def same_build(trial_seeds: list[int], ladder_seeds: list[tuple[int, int]], size: int = 448) -> list[str]:
    """How well the outline test (`silhouette.outline_distance` against `SilhouetteFit.same_build`)
    tells the subject's own pictures from other subjects'. Own: four frames of each subject of the
    built-in trials of each of `trial_seeds`, and frames A, B and rungs 1-4 of the first five
    image instances of each (trials seed, instance seed) of `ladder_seeds`; other: every other
    subject's first frame, and each ladder's rung 5. Each picture is read by the landmark fit as
    an edit of its subject; the subject posed so is measured three ways: the outline as tested
    (the body and what it wears but `UNCOUNTED_SLOTS`), with every accessory, and the body alone.
    Per rule: the largest own and smallest other distances, and at a threshold, how many own
    pictures would have their build read again and how many others would pass as the subject."""
    import tempfile

    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.edits.instances import make_instances
    from maskscore_core.edits.ladder import build_ladder
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks import silhouette
    from maskscore_face_landmarks.pixels import PixelFitter, default_segmenter, picture

    fitter, segmenter = PixelFitter(), default_segmenter()
    every = tuple(get_reference_mesh().slot_ranges)
    rules = {
        "as tested": tuple(slot for slot in every if slot not in silhouette.UNCOUNTED_SLOTS),
        "every accessory": every,
        "body alone": (),
    }
    found = []  # (own?, label, {rule: distance})

    def measure(own, label, pixels, subject):
        fit = fitter.fit(pixels, subject, label)
        person = segmenter.mask(pixels)
        posed = silhouette.outline_state(fit.state, subject, fitter.config.bones)
        found.append((own, label, {rule: silhouette.outline_distance(person, posed, slots) for rule, slots in rules.items()}))

    for seed in trial_seeds:
        trials = generate_trials(AnnySourceConfig(seed=seed, trials_per_subject=1), tempfile.mkdtemp(prefix="same-build-"))
        first = {trial.subject.subject_id: trial.frames[0].state for trial in trials}
        for trial in trials:
            subject, count = trial.frames[0].state, len(trial.frames)
            for k in sorted({0, count // 3, 2 * count // 3, count - 1}):
                measure(True, f"{seed}/{trial.subject.subject_id} frame {k}", picture(trial.frames[k].state, size), subject)
            for other, state in first.items():
                if other != trial.subject.subject_id:
                    measure(False, f"{seed}/{other} as {trial.subject.subject_id}", picture(state, size), subject)
    for trials_seed, seed in ladder_seeds:
        trials = generate_trials(AnnySourceConfig(seed=trials_seed, subjects=3, trials_per_subject=2, fps=25.0),
                                 tempfile.mkdtemp(prefix="same-build-"))  # fmt: skip
        for number, instance in enumerate(make_instances(trials, "image", np.random.default_rng(seed), 5), start=1):
            rungs = {t.rung: t.state for t in build_ladder(instance)}
            drawn = [("A", instance.a.state), ("B", instance.b.state)] + [(f"rung {k}", rungs[k]) for k in range(1, 6)]
            for name, state in drawn:
                label = f"ladder {trials_seed}/{seed} #{number} ({instance.instruction.part}) {name}"
                measure(name != "rung 5", label, picture(state, size), instance.a.state)
    same = silhouette.SilhouetteFit().same_build
    limits = (same * size, OLD_SAME_BUILD * size)
    at = " / ".join(f"{t:.2f}" for t in limits)
    lines = [f"{sum(o for o, _, _ in found)} own pictures, {sum(not o for o, _, _ in found)} others'; same_build"
             f" {same} = {limits[0]:.2f} px (before the hat was left out: {OLD_SAME_BUILD})",  # fmt: skip
             f"| rule | own: largest (which) | others: smallest (which) | own read again at {at} px | others kept at {at} px |",
             "|---|---|---|---|---|"]  # fmt: skip
    for rule in rules:
        own = sorted(((d[rule], label) for o, label, d in found if o), reverse=True)
        other = sorted((d[rule], label) for o, label, d in found if not o)
        counts = [sum(v > t for v, _ in own) for t in limits], [sum(v <= t for v, _ in other) for t in limits]
        lines.append(f"| {rule} | {own[0][0]:.2f} ({own[0][1]}), then {own[1][0]:.2f} | {other[0][0]:.2f} ({other[0][1]}),"
                     f" then {other[1][0]:.2f} | {counts[0][0]} / {counts[0][1]} | {counts[1][0]} / {counts[1][1]} |")  # fmt: skip
    print("\n".join(lines), flush=True)
    return lines


def looks(ladder_seeds: list[tuple[int, int]], size: int = 448) -> list[str]:
    """Which look each picture of the image ladders decodes with (`maskscore_image.decode`,
    `maskscore_face_landmarks.look.shown_look`). For frame B and rungs 1-5 of the first five image
    instances of each (trials seed, instance seed) of `ladder_seeds`, read as the scorer reads
    them: margin, how much farther the look it was expected in (frame A's; frame B's own for frame
    B) draws the picture than the look read from it, on the body decoded from it (the expected
    look stands while the margin is at most `look.SAME_LOOK`); error, how much farther the read
    look draws the picture than its true look, on the body that drew it. Per group (pictures
    drawn in the expected look, and in another): the largest and smallest margin, the largest
    error, and how many take the expected look."""
    import tempfile

    from maskscore_core.edits.instances import make_instances
    from maskscore_core.edits.ladder import build_ladder
    from maskscore_core.plugin.records import Appearance
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks import look
    from maskscore_face_landmarks.pixels import picture
    from maskscore_image.decode import fit_frames

    found = {True: [], False: []}  # drawn in the expected look? -> (margin, error, label)
    for trials_seed, seed in ladder_seeds:
        trials = generate_trials(AnnySourceConfig(seed=trials_seed, subjects=3, trials_per_subject=2, fps=25.0),
                                 tempfile.mkdtemp(prefix="looks-"))  # fmt: skip
        for number, instance in enumerate(make_instances(trials, "image", np.random.default_rng(seed), 5), start=1):
            a, b = instance.a.state, instance.b.state
            drawn = [("frame B", b, attrs.evolve(a, appearance=b.appearance, accessories=b.accessories))]
            drawn += [(f"rung {t.rung}", t.state, a) for t in build_ladder(instance)]
            for name, state, subject in drawn:
                label = f"{trials_seed}/{seed} #{number} ({instance.instruction.part}) {name}"
                pixels = picture(state, size)
                (fit,) = fit_frames([pixels], instance, [label], subject=subject)
                reading = look.LookReading(pixels, fit.state)
                read = reading.read()
                margin = reading.distance(subject.appearance or Appearance()) - reading.distance(read)
                truth = look.LookReading(pixels, state)
                error = truth.distance(read) - truth.distance(state.appearance or Appearance())
                found[state.appearance == subject.appearance].append((margin, error, label))
                print(f"  {label}: margin {margin:.4f}, read look's error {error:.4f}", flush=True)
    lines = [f"| pictures | count | margin: largest | margin: smallest | read look's error: largest | expected look taken"
             f" (SAME_LOOK {look.SAME_LOOK}) |", "|---|---|---|---|---|---|"]  # fmt: skip
    for same, rows in found.items():
        if rows:
            margins = sorted(rows)
            kept = sum(m <= look.SAME_LOOK for m, _, _ in rows)
            lines.append(f"| {'in the expected look' if same else 'in another look'} | {len(rows)} | {margins[-1][0]:.4f}"
                         f" ({margins[-1][2]}) | {margins[0][0]:.4f} ({margins[0][2]}) | {max(e for _, e, _ in rows):.4f} |"
                         f" {kept} of {len(rows)} |")  # fmt: skip
    print("\n".join(lines), flush=True)
    return lines


TURNS = ((0.05, 0.0, 0.0), (0.0, 0.08, 0.0), (0.0, 0.0, 0.05), (-0.1, 0.05, 0.03))  # pitch, yaw, roll (rad)


def turns(trial_seeds: list[int], size: int = 448) -> list[str]:
    """How well a picture's head turn reads back, per subject of the built-in trials (first
    frames at rest: their look, accessories and part scales), turned by each of TURNS (shared
    over the neck and head as the trials share it). Read as the video modality reads a frame
    (`PIXEL_CLIP_FIT`: without the detector's `pixels.UNFOLLOWED_POINTS`), and with those points
    put back (in the fit and among the rigid points), in one run. Each cell: mean |error|
    of pitch / yaw / roll over the turns (rad)."""
    import tempfile

    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.trials import landmark_fit as lf
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks.pixels import PIXEL_CLIP_FIT, RIGID_POINTS, UNFOLLOWED_POINTS, PixelFitter, picture

    body = get_body_model()
    chain = [body.bone_index(name) for name in lf.LINEAR_BONES]
    used = PixelFitter(config=PIXEL_CLIP_FIT)
    every = PixelFitter(config=attrs.evolve(PIXEL_CLIP_FIT, rigid_weighed=RIGID_POINTS + UNFOLLOWED_POINTS, unfollowed=()))
    lines = ["| trials | subject | worn | without the brows: pitch / yaw / roll | with them | largest |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    print("\n".join(lines), flush=True)
    totals = {"without": [], "with": []}
    for seed in trial_seeds:
        trials = generate_trials(AnnySourceConfig(seed=seed, trials_per_subject=1), tempfile.mkdtemp(prefix="turns-"))
        for trial in trials:
            first = trial.frames[0].state
            rest = attrs.evolve(first, expression=np.zeros_like(first.expression), pose=np.zeros_like(first.pose))
            errors = {"without": [], "with": []}
            for turn in TURNS:
                pose = np.zeros_like(first.pose)
                pose[chain] = np.outer((0.4, 0.3, 0.3), turn)
                pixels = picture(attrs.evolve(rest, pose=pose), size)
                for name, fitter in (("without", used), ("with", every)):
                    fit = fitter.fit(pixels, rest, f"{trial.subject.subject_id} turned {turn}")
                    errors[name].append(np.abs(fit.state.pose[chain].sum(0) - pose[chain].sum(0)))
            cells = []
            for name in ("without", "with"):
                totals[name] += errors[name]
                cells.append(" / ".join(f"{v:.3f}" for v in np.mean(errors[name], axis=0)))
            largest = ", ".join(f"{np.max(errors[name]):.3f}" for name in ("without", "with"))
            lines.append(f"| {seed} | {trial.subject.subject_id} | {', '.join(first.accessories) or '-'} | {cells[0]} | {cells[1]} | {largest} |")
            print(lines[-1], flush=True)
    mean = {name: " / ".join(f"{v:.4f}" for v in np.mean(values, axis=0)) for name, values in totals.items()}
    lines.append(f"| all | {len(totals['with']) // len(TURNS)} subjects | | {mean['without']} | {mean['with']} |"
                 f" {np.max(totals['without']):.3f}, {np.max(totals['with']):.3f} |")  # fmt: skip
    print(lines[-1], flush=True)
    return lines


def picture_speed(size: int = 448, repeats: int = 3) -> dict:
    """Detect + fit time per picture as the image modality reads it (median of `repeats`), in one
    run: a picture of the subject read with the landmarks alone and with the outline check
    (`silhouette.py` step 1), and a picture of another subject, which the outline check sends on
    to the build's fit and a second face fit (step 2), and the subject's picture read as the
    image modality reads it, the fit then refined against the pixels (`photometric.py`).
    Subjects: the two of the built-in trials (seed 0) whose builds differ most, as their first
    frames."""
    import tempfile

    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_face_landmarks.photometric import PhotometricFit
    from maskscore_face_landmarks.pixels import PixelFitter, picture
    from maskscore_face_landmarks.silhouette import SilhouetteFit

    states = [t.frames[0].state for t in generate_trials(AnnySourceConfig(seed=0, trials_per_subject=1), tempfile.mkdtemp(prefix="speed-"))]
    subject, other = max(((a, b) for i, a in enumerate(states) for b in states[i + 1:]),
                         key=lambda p: sum(abs(p[0].phenotype[k] - p[1].phenotype[k]) for k in p[0].phenotype))  # fmt: skip
    own, theirs = picture(subject, size), picture(other, size)
    plain, outlined = PixelFitter(), PixelFitter(silhouette=SilhouetteFit())
    refined = PixelFitter(silhouette=SilhouetteFit(), photometric=PhotometricFit())
    for fitter in (plain, outlined, refined):  # the neutral detection and the segmenter, outside the timing
        fitter.fit(own, subject, "warm-up")

    def timed(fitter, pixels):
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fitter.fit(pixels, subject, "speed picture")
            runs.append(1000.0 * (time.perf_counter() - start))
        return float(np.median(runs))

    out = {"picture_size_px": size, "picture_landmarks_ms": timed(plain, own), "picture_outline_check_ms": timed(outlined, own),
           "picture_other_subject_ms": timed(outlined, theirs), "picture_photometric_ms": timed(refined, own)}  # fmt: skip
    out["picture_check_over_landmarks"] = out["picture_outline_check_ms"] / out["picture_landmarks_ms"]
    out["picture_photometric_over_landmarks"] = out["picture_photometric_ms"] / out["picture_landmarks_ms"]
    out["picture_other_over_landmarks"] = out["picture_other_subject_ms"] / out["picture_landmarks_ms"]
    return out


def picture_errors(instance, pictures) -> list[str]:
    """How far the image modality's reading of frame A, frame B and each rung's picture is from
    the body state that drew it: the head's whole turn (Neck1 + Neck2 + Head, pitch and yaw,
    radians, signed), jawOpen and the smile (mean of both sides), and the largest phenotype
    change (the fit holds the phenotype near frame A's subject by a prior). pictures: (label,
    state, pixels) triples."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.trials import landmark_fit as lf
    from maskscore_image.decode import fit_frames

    body = get_body_model()
    chain = [body.bone_index(n) for n in lf.LINEAR_BONES]
    jaw = body.action_index("jawOpen")
    smile = [body.action_index("mouthSmileLeft"), body.action_index("mouthSmileRight")]
    subject = instance.a.state.phenotype
    lines = []
    for label, state, pixels in pictures:
        (fit,) = fit_frames([pixels], instance, [f"{label} of {instance.key}"])
        turn = fit.state.pose[chain].sum(0) - state.pose[chain].sum(0)
        moved = max(abs(fit.state.phenotype[k] - subject[k]) for k in subject)
        lines.append(f"  {instance.key} {label}: pitch {turn[0]:+.3f} yaw {turn[1]:+.3f}"
                     f" jaw {fit.state.expression[jaw] - state.expression[jaw]:+.2f}"
                     f" smile {fit.state.expression[smile].mean() - state.expression[smile].mean():+.2f}"
                     f" phenotype {moved:.3f} ({fit.mean_error_px:.2f} px)")  # fmt: skip
    return lines


def readback(value: float, trial_seeds: list[int], size: int = 448) -> list[str]:
    """Each action group set alone to `value` on each subject (the default one and those of the
    built-in trials of `trial_seeds`, posed and shaded as their first frame), drawn as the image
    modality's picture and read back through the detector and the fit: the mean read value of
    the group. Lines of a markdown table; the last column: whether the image modality counts it
    as shown (`maskscore_image.SHOWN_ACTIONS`; `maskscore_image.shown.read_back`)."""
    import tempfile

    from maskscore_core.body import accessories
    from maskscore_core.plugin.testing import face_state
    from maskscore_core.trials.anny_source import AnnySourceConfig, generate_trials
    from maskscore_image.shown import SHOWN_ACTIONS, action_groups, read_back

    subjects = {"default": face_state()}
    for seed in trial_seeds:
        config = AnnySourceConfig(seed=seed, trials_per_subject=1)
        for trial in generate_trials(config, tempfile.mkdtemp(prefix="readback-")):
            state = trial.frames[0].state
            glasses = accessories.worn(state.accessories, "glasses")  # rims hide the lids from the detector
            subjects[f"{seed}/{trial.subject.subject_id}" + (f" ({glasses})" if glasses else "")] = state
    lines = ["| action (set to %g) | " % value + " | ".join(subjects) + " | least | shown (image) |",
             "|---" * (len(subjects) + 3) + "|"]  # fmt: skip
    print("\n".join(lines), flush=True)
    for group, names in action_groups().items():
        read = [read_back(names, base, value, size, f"{group} on {label}") for label, base in subjects.items()]
        shown = "yes" if set(names) <= set(SHOWN_ACTIONS) else "-"
        lines.append(f"| {group} | " + " | ".join(f"{r:.2f}" for r in read) + f" | {min(read):.2f} | {shown} |")
        print(lines[-1], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--yaws", default="0,20,40", help="camera yaws around the head, degrees")
    parser.add_argument("--sizes", default="160,256", help="image sizes, pixels (square)")
    parser.add_argument("--cases", default=",".join(CASES), help="which cases")
    parser.add_argument("--json", help="write the rows and the speed summary as JSON here")
    parser.add_argument("--ladders", type=int, default=0, help="instead, the frame-pair ladder through pixels on this many"
                        " built-in instances of each modality")  # fmt: skip
    parser.add_argument("--seeds", default="0", help="with --ladders: instance seeds (default_rng), comma-separated")
    parser.add_argument("--trial-seeds", default="0", help="with --ladders: seeds of the built-in trials, comma-separated")
    parser.add_argument("--modalities", default="image,video", help="with --ladders: image, video or both")
    parser.add_argument("--size", type=int, default=448, help="with --ladders: picture and frame size, pixels")
    parser.add_argument("--only", default="", help="with --ladders: only these instance numbers (1-based, comma-separated)")
    parser.add_argument("--frame-errors", action="store_true", help="with --ladders: each rung's fit errors against the"
                        " states that drew it (image: frames A and B too; video: per frame)")
    parser.add_argument("--readback", type=float, default=0.0, help="instead, what each facial action set alone to this"
                        " value reads back as, on the default subject and those of --trial-seeds")  # fmt: skip
    parser.add_argument("--turns", action="store_true", help="instead, how well a head turn reads back on each subject"
                        " of --trial-seeds, without the detector's brow points (as fitted) and with them")  # fmt: skip
    parser.add_argument("--builds", action="store_true", help="instead, whose build each picture of a built-in subject"
                        " decodes to when read as an edit of each other subject of --trial-seeds")  # fmt: skip
    parser.add_argument("--same-build", action="store_true", help="instead, how the outline test tells the subject's own"
                        " pictures from others' (--trial-seeds' subjects, and the image ladders of --ladder-seeds)")  # fmt: skip
    parser.add_argument("--looks", action="store_true", help="instead, which look each picture of the image ladders of"
                        " --ladder-seeds decodes with, and how well the look read from its pixels draws it")  # fmt: skip
    parser.add_argument("--ladder-seeds", default="0/0,0/1,1/0,2/0,3/0", help="with --same-build or --looks: trials/instance seed"
                        " pairs of image ladders, comma-separated")  # fmt: skip
    args = parser.parse_args()
    if args.same_build:
        pairs = [tuple(int(v) for v in pair.split("/")) for pair in args.ladder_seeds.split(",") if pair]
        same_build([int(x) for x in args.trial_seeds.split(",")], pairs, args.size)
        return 0
    if args.looks:
        looks([tuple(int(v) for v in pair.split("/")) for pair in args.ladder_seeds.split(",") if pair], args.size)
        return 0
    if args.turns:
        turns([int(x) for x in args.trial_seeds.split(",")], args.size)
        return 0
    if args.builds:
        builds([int(x) for x in args.trial_seeds.split(",")], args.size)
        return 0
    if args.readback:
        readback(args.readback, [int(x) for x in args.trial_seeds.split(",")], args.size)
        return 0
    if args.ladders:
        import tempfile

        print("| modality | trials/instance seed | instance | overall 1-5 (pixels) | instruction_following | consistency |"
              " overall 1-5 (exact) | in order |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        workdir = tempfile.mkdtemp(prefix="pixel-ladders-")
        results = []
        for trials_seed in [int(x) for x in args.trial_seeds.split(",")]:
            for seed in [int(x) for x in args.seeds.split(",")]:
                only = {int(x) for x in args.only.split(",") if x}
                results += ladders(args.ladders, workdir, seed, trials_seed, args.modalities.split(","), args.size, only, args.frame_errors)
        print(ladder_summary(results))
        return 0

    from maskscore_core.trials import landmark_fit as lf
    from maskscore_face_landmarks import FaceMeshDetector

    wanted = args.cases.split(",")
    for name in list(CASES):
        if name not in wanted:
            del CASES[name]
    detector = FaceMeshDetector()
    anchors = detector.anchors()
    config = lf.PIXEL_FIT
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        for yaw in [float(y) for y in args.yaws.split(",")]:
            rows.extend(measure(yaw, size, detector, anchors, config))
    print(table(rows))
    timed = [r for r in rows if "error" not in r]
    speed = {
        "detect_ms_median": float(np.median([r["detect_ms"] for r in timed])) if timed else None,
        "fit_ms_median": float(np.median([r["fit_ms"] for r in timed])) if timed else None,
        "frames": len(timed),
        "config": attrs.asdict(config),
    }
    print(f"detect + fit per frame: {speed['detect_ms_median']:.0f} ms + {speed['fit_ms_median']:.0f} ms (medians over {len(timed)} frames)")
    speed.update(picture_speed())
    print(f"a picture, detect + fit (the image modality): {speed['picture_landmarks_ms']:.0f} ms with the landmarks alone,"
          f" {speed['picture_outline_check_ms']:.0f} ms with the outline check ({speed['picture_check_over_landmarks']:.2f} x);"
          f" another subject's picture, outline fit and a second face fit: {speed['picture_other_subject_ms']:.0f} ms"
          f" ({speed['picture_other_over_landmarks']:.2f} x; {speed['picture_size_px']} px); the subject's picture refined"
          f" against its pixels (as the image modality reads it): {speed['picture_photometric_ms']:.0f} ms"
          f" ({speed['picture_photometric_over_landmarks']:.2f} x)")  # fmt: skip
    speed.update(clip_speed())
    print(f"a pixel clip's frames, detect + fit: {speed['clip_refined_ms_per_frame']:.0f} ms weighed and refined against the"
          f" pixels (the video modality), {speed['clip_weighed_ms_per_frame']:.0f} ms weighed alone"
          f" ({speed['clip_refined_over_weighed']:.2f} x), {speed['clip_joint_ms_per_frame']:.0f} ms joint alone: weighed"
          f" {speed['clip_weighed_over_joint']:.2f} x ({speed['clip_frames']} frames of {speed['clip_size_px']} px)")  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "speed": speed}, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
