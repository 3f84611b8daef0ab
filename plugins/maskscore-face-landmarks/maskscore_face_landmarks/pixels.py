"""From pixels to an ANNY body state: detect the face, take off the detector's own offset, fit.

Frames are seen by one known camera: the frontal camera the image modality draws its frames
with (`anchors.frontal_view`: 0.6 m in front of the middle of the subject's own face, 30 degrees;
heads of the phenotype range sit 0.50-0.78 m high, so a camera aimed at the default head would
cut a short subject's chin off). The video modality's frames look at the default head (`subject_framed=False`).
The detector does not
put its points exactly on the anchors; how far off it is depends on the subject and the look, so
it is measured on a neutral picture of the same subject with the same look and camera
(`PixelFitter.bias`) and taken off every detection before the fit (`landmark_fit.landmark_bias`).
The fit then follows the motion relative to that neutral face.

Every refusal is a `PixelFitError` whose one line names the file and frame it came from.
"""

from __future__ import annotations

import functools
import threading

import attrs
import numpy as np

from maskscore_core.plugin.records import Appearance, BodyState
from maskscore_core.trials import landmark_fit as lf

from .anchors import frontal_view

DEFAULT_RESOLUTION = 256


class PixelFitError(ValueError):
    """A picture that gives no fit: no face, several faces, a face too small, unreadable."""


def neutral_state(state: BodyState) -> BodyState:
    """The subject of `state` at rest: same phenotype and look, no facial actions, no pose."""
    return BodyState(phenotype=dict(state.phenotype), appearance=state.appearance)


FACE_CENTRE_BELOW_EYES_M = 0.04  # from the eyes' centre down to the middle of brows-to-chin


@functools.cache
def _face_centre(phenotype: tuple) -> tuple[float, float, float]:
    from maskscore_core.body.anny_model import get_body_model

    body = get_body_model()
    bones = body.forward([BodyState(phenotype=dict(phenotype))])["bone_poses"][0]
    centre = (bones[body.bone_index("LeftEye")][:3, 3] + bones[body.bone_index("RightEye")][:3, 3]) / 2.0
    centre[1] -= FACE_CENTRE_BELOW_EYES_M
    return tuple(round(float(x), 6) for x in centre)


def camera_target(state: BodyState, subject_framed: bool = True):
    """Where the frontal camera looks: the middle of the subject's own face at rest (its eyes'
    centre, 4 cm lower), or the default subject's head ("head", as video frames are drawn)."""
    return _face_centre(tuple(sorted(state.phenotype.items()))) if subject_framed else "head"


def picture(state: BodyState, resolution: int, subject_framed: bool = True) -> np.ndarray:
    """(H, W, 3) uint8 picture of `state` from the frontal camera, shaded with its look (the
    default look when it has none: the detector needs skin-like shading)."""
    from maskscore_core.metric import appearance
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric.render import get_renderer

    vertices = get_reference_mesh().vertices([state])[0]
    result = get_renderer(frontal_view(resolution, camera_target(state, subject_framed))).render(vertices)
    return appearance.picture(result, state.appearance or Appearance())


@functools.cache
def frame_camera(resolution: int, target="head") -> tuple[lf.ViewCamera, np.ndarray]:
    """The frontal camera looking at `target` as a fit view, and its centre (the rig origin)."""
    from maskscore_core.metric.views import camera_poses

    config = frontal_view(resolution, target)
    pose = camera_poses(config)[0]
    return lf.ViewCamera.from_pose(pose, config.fov_deg, resolution, resolution), np.asarray(pose.origin)


@functools.cache
def default_detector():
    from .detector import FaceMeshDetector

    return FaceMeshDetector()


class PixelFitter:
    """Detect and fit frames of one camera (`frame_camera(resolution)`)."""

    def __init__(self, detector=None, config: lf.FitConfig | None = None, subject_framed: bool = True, draw=None) -> None:
        """draw(state, resolution) -> picture: how the frames were drawn, for the neutral picture
        (default `picture`); subject_framed: whether the camera looks at the subject's own head."""
        self.detector = detector or default_detector()
        self.subject_framed = subject_framed
        self.draw = draw or (lambda state, resolution: picture(state, resolution, subject_framed))
        self.anchors = self.detector.anchors()
        self.config = config or lf.PIXEL_FIT_KNOWN_CAMERA
        self._biases: dict = {}
        self._lock = threading.Lock()

    def detect(self, image: np.ndarray, where: str) -> lf.Landmarks2D:
        image = np.asarray(image)
        if image.ndim == 3 and image.shape[2] == 4:
            image = image[..., :3]
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or image.shape[0] != image.shape[1]:
            raise PixelFitError(f"{where}: expected a square RGB uint8 frame, got {image.dtype} {image.shape}")
        try:
            return self.detector.detect(np.ascontiguousarray(image))
        except lf.FaceDetectionError as exc:
            raise PixelFitError(f"{where}: {exc}") from None

    def bias(self, state: BodyState, resolution: int) -> np.ndarray:
        """The detector's offset on the neutral picture of `state`'s subject and look (cached)."""
        neutral = neutral_state(state)
        key = (tuple(sorted(neutral.phenotype.items())), repr(neutral.appearance), int(resolution))
        with self._lock:
            if key not in self._biases:
                found = self.detect(self.draw(neutral, resolution), f"neutral picture of the subject ({resolution} px)")
                view, origin = frame_camera(resolution, camera_target(neutral, self.subject_framed))
                self._biases[key] = lf.landmark_bias(found, neutral, view, origin, self.anchors)
            return self._biases[key]

    def fit(self, image: np.ndarray, subject: BodyState, where: str, init: BodyState | None = None,
            config: lf.FitConfig | None = None) -> lf.FitResult:  # fmt: skip
        """The body state a square frame of the frontal camera shows; `subject` gives the
        phenotype and look (its neutral picture measures the detector's offset)."""
        landmarks = self.detect(image, where)
        resolution = int(np.asarray(image).shape[0])
        view, origin = frame_camera(resolution, camera_target(subject, self.subject_framed))
        observed = lf.ViewLandmarks(landmarks, view, self.bias(subject, resolution))
        start = init if init is not None else neutral_state(subject)
        try:
            return lf.fit_views([observed], subject.phenotype, config or self.config, start, self.anchors, origin)
        except lf.LandmarkFitError as exc:
            raise PixelFitError(f"{where}: the face fit failed: {exc}") from None


# Temporal smoothing of a decoded clip: a centred binomial filter over three frames on the fitted
# facial actions and head rotation (the ends mirror their neighbour). The detector reads each
# frame alone, so its 0.5-2 px jitter would otherwise show up as motion.
SMOOTHING_KERNEL = (0.25, 0.5, 0.25)


def smooth_states(states: list[BodyState]) -> list[BodyState]:
    """`states` with SMOOTHING_KERNEL applied to expression and pose (clips of 3+ frames)."""
    if len(states) < 3:
        return list(states)
    expression = np.stack([s.expression for s in states])
    pose = np.stack([s.pose for s in states])
    out = []
    for i, state in enumerate(states):
        before, after = (i - 1 if i > 0 else 1), (i + 1 if i + 1 < len(states) else len(states) - 2)
        weights = SMOOTHING_KERNEL
        e = weights[0] * expression[before] + weights[1] * expression[i] + weights[2] * expression[after]
        p = weights[0] * pose[before] + weights[1] * pose[i] + weights[2] * pose[after]
        out.append(attrs.evolve(state, expression=np.clip(e, 0.0, 1.0), pose=p))
    return out


def decode_sequence(frames, subject: BodyState, names, fitter: PixelFitter | None = None) -> list[BodyState]:
    """Body states of a clip's frames: each frame detected and fitted (warm-started from the
    previous frame's fit), then smoothed in time (`smooth_states`). A frame without a usable face
    raises PixelFitError naming it."""
    fitter = fitter or PixelFitter()
    warm = attrs.evolve(fitter.config, adam_steps=0)
    states, previous = [], None
    for frame, name in zip(frames, names):
        fit = fitter.fit(frame, subject, name, init=previous, config=warm if previous is not None else None)
        previous = fit.state
        states.append(fit.state)
    if not states:
        raise PixelFitError("the clip has no frames")
    return smooth_states(states)
