"""Which Face Mesh points the fit uses, and where on the ANNY surface each one sits.

The points: lips (outer and inner contour), eyelids, brows, the nose's ridge and base, the chin,
and the two irises: what moves with the facial actions and the head. The face oval is left out:
its points ride on the silhouette, so they slide over the surface as the head turns.

The tie to the mesh is made once (`compute`): the default subject, neutral, is rendered from the
front (0.6 m from the middle of its face, `pixels.face_centre`) at 512 px with the default look (`records.Appearance`;
the mouth's inside drawn as the lips, `compute`), the detector runs on the picture,
and each point's ray meets the triangle the render shows there (`landmark_fit.anchors_from_render`).
The result is committed as `anchors.json` (so every machine fits with the same anchors);
`python -m maskscore_face_landmarks.anchors` writes it again and tests/test_anchors.py checks
that a fresh computation still agrees with it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from maskscore_core.trials.landmark_fit import MEDIAPIPE_SCHEME, MeshAnchors, anchors_from_render

ANCHORS_FILE = Path(__file__).with_name("anchors.json")
RESOLUTION = 512

GROUPS: dict[str, tuple[int, ...]] = {
    "lips_outer": (61, 185, 40, 39, 37, 0, 267, 269, 270, 409, 291, 375, 321, 405, 314, 17, 84, 181, 91, 146),
    "lips_inner": (78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308, 324, 318, 402, 317, 14, 87, 178, 88, 95),
    "eye_a": (33, 246, 161, 160, 159, 158, 157, 173, 133, 155, 154, 153, 145, 144, 163, 7),
    "eye_b": (263, 466, 388, 387, 386, 385, 384, 398, 362, 382, 381, 380, 374, 373, 390, 249),
    "brow_a": (70, 63, 105, 66, 107, 46, 53, 52, 65, 55),
    "brow_b": (300, 293, 334, 296, 336, 276, 283, 282, 295, 285),
    "nose": (168, 6, 197, 195, 5, 4, 1, 2, 98, 327),
    "chin": (152, 148, 377, 176, 400),
    "iris_a": (468, 469, 470, 471, 472),
    "iris_b": (473, 474, 475, 476, 477),
}


def selection() -> tuple[tuple[str, ...], tuple[int, ...]]:
    names, indices = [], []
    for group, members in GROUPS.items():
        for index in members:
            names.append(f"{group}_{index}")
            indices.append(index)
    return tuple(names), tuple(indices)


def frontal_view(resolution: int, target="head"):
    """The close-up frontal camera (0.6 m) the anchors and the detector's response are measured
    with: Hammersley sample 0 of 1 with u offset 0.5 sits at yaw 0, pitch 0 (as the video frames);
    `target` the point it looks at (default: the default subject's head)."""
    from maskscore_core.metric.views import ViewConfig

    return ViewConfig(count=1, resolution=resolution, offset=(0.5, 0.0), target=target)


def compute(detector=None) -> MeshAnchors:
    """Render the neutral default subject, detect its face, cast the rays (module docstring)."""
    from maskscore_core.metric import appearance
    from maskscore_core.plugin.records import Appearance, BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer

    from .detector import FaceMeshDetector

    from .pixels import face_centre

    detector = detector or FaceMeshDetector()
    config = frontal_view(RESOLUTION, face_centre(BodyState()))
    renderer = get_renderer(config)
    reference = get_reference_mesh()
    vertices = reference.vertices([BodyState()])[0]
    result = renderer.render(vertices)
    # The inside of the mouth drawn as the lips: at rest, the first triangles of the oral cavity
    # show through the lips' seam at the corners, and an inner lip point detected on them would be
    # tied 10 cm deep, in the throat, rather than on the lip edge it follows.
    picture = appearance.picture(result, Appearance(), dark_cavity=False)
    found = detector.detect(picture)
    names, indices = selection()
    return anchors_from_render(MEDIAPIPE_SCHEME, names, indices, found.points, result.face_id[0], renderer.poses[0],
                               config.fov_deg, vertices, reference.faces)  # fmt: skip


RESPONSE_ACTION_STEP = 0.6
RESPONSE_ROTATION_STEP = 0.2  # radians
RESPONSE_RESOLUTION = 256


def measure_response(anchors: MeshAnchors, detector=None) -> MeshAnchors:
    """`anchors` with the detector's response beyond geometry (`MeshAnchors.response`): the
    neutral default subject, and then each fitted facial action at RESPONSE_ACTION_STEP and each
    axis of the Head rotation at RESPONSE_ROTATION_STEP, drawn from the front; what the detected
    points move minus what their anchors move, per unit, as a displacement on the resting face.

    Why: the detector is a learned model with its own habits (it lifts the brows of a face that
    closes its eyes, follows the inner lip edge rather than a point of the lip); a fit that
    assumes its points ride on the surface reads them as other actions."""
    import attrs
    import numpy as np

    from maskscore_core.metric import appearance
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.plugin.records import Appearance, BodyState
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.trials import landmark_fit as lf

    from .detector import FaceMeshDetector

    from .pixels import face_centre

    detector = detector or FaceMeshDetector()
    body = get_body_model()
    config = frontal_view(RESPONSE_RESOLUTION, face_centre(BodyState()))
    renderer = get_renderer(config)
    pose = renderer.poses[0]
    view = lf.ViewCamera.from_pose(pose, config.fov_deg, RESPONSE_RESOLUTION, RESPONSE_RESOLUTION)
    origin = np.asarray(pose.origin)

    def moved(state):
        vertices = get_reference_mesh().vertices([state])[0]
        found = anchors.select(detector.detect(appearance.picture(renderer.render(vertices), Appearance())))
        return found - lf.project_anchors(state, view, origin, anchors, reference=True)

    # Pixels to metres on the resting face: the frontal camera's x is world x, its v is world -y.
    corners = get_reference_mesh().anny_posed([BodyState()])["vertices"][0][anchors.vertex_ids]
    depth = origin[2] - np.einsum("kcd,kc->kd", corners, anchors.weights)[:, 2]
    to_metres = np.stack([np.ones_like(depth), -np.ones_like(depth), np.zeros_like(depth)], axis=1)
    to_metres = to_metres * (depth / view.camera.focal_px)[:, None]

    rest = moved(BodyState())
    params, rows = [], []
    for name in lf.PIXEL_ACTIONS:
        expression = np.zeros(len(body.action_names))
        expression[body.action_index(name)] = RESPONSE_ACTION_STEP
        rows.append((moved(BodyState(expression=expression)) - rest) / RESPONSE_ACTION_STEP)
        params.append(name)
    for axis, name in enumerate("xyz"):
        head = np.zeros((len(body.bone_names), 3))
        head[body.bone_index("Head"), axis] = RESPONSE_ROTATION_STEP
        rows.append((moved(BodyState(pose=head)) - rest) / RESPONSE_ROTATION_STEP)
        params.append(f"Head.{name}")
    shifts = np.stack(rows)  # (P, K, 2) pixels per unit
    response = np.concatenate([shifts, np.zeros_like(shifts[..., :1])], axis=-1) * to_metres
    return attrs.evolve(anchors, response_params=tuple(params), response=response)


@functools.cache
def load() -> MeshAnchors:
    """The committed anchors."""
    return MeshAnchors.from_json(json.loads(ANCHORS_FILE.read_text(encoding="utf-8")))


def write(anchors: MeshAnchors, path: Path = ANCHORS_FILE) -> Path:
    path.write_text(json.dumps(anchors.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write(measure_response(compute())))
