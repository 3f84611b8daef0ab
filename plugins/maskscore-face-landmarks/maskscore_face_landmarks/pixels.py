"""From pixels to an ANNY body state: detect the face, take off the detector's own offset, fit.

Every picture the image modality draws and every frame of a pixel clip is seen by one fixed
camera (`pixel_view`): frontal, 30 degrees, 1.05 m in front of the middle of the face heights the
built-in subjects have. One camera for every subject is what an editor's output keeps: a picture of
someone else in frame A's place (the ladder's wrong-subject rung) shows that person where frame A's
camera sees them, and the fit reads their other height and face from it. A camera framed on each
subject's own face centred every subject alike, and a picture of another subject decoded to
frame A's subject (measured: benchmarks/bench_landmark_fit.py --ladders, plugins/maskscore-image/README.md).
The detector does not put its points exactly on the anchors; how far off it is depends on the
subject and the look, so it is measured on a neutral picture of the same subject with the same
look and camera (`PixelFitter.bias`) and taken off every detection before the fit
(`landmark_fit.landmark_bias`). The fit then follows the motion relative to that neutral face.

Every refusal is a `PixelFitError` whose one line names the file and frame it came from.
"""

from __future__ import annotations

import functools
import threading

import attrs
import numpy as np

from maskscore_core.plugin.records import Appearance, BodyState
from maskscore_core.trials import landmark_fit as lf

from .photometric import PhotometricFit, refine, refine_clip
from .silhouette import SilhouetteFit, fit_phenotype, outline_distance, outline_state

DEFAULT_RESOLUTION = 448  # the face about 100 px wide (the detector refuses faces under 60 px)
# The point the camera looks at: the middle of the face centres (eyes' centre, 4 cm lower) over the
# corners of the built-in subjects' phenotype ranges (trials.subjects.PHENOTYPE_RANGES): y 0.43-0.72 m,
# z 0.08-0.12 m. At 1.05 m the 30-degree view spans +-0.28 m around it: every such face, chin and
# brow included.
PIXEL_TARGET = (0.0, 0.575, 0.10)
PIXEL_DISTANCE_M = 1.05


# The parts a picture is read back for (plugins/maskscore-image/README.md, measured): the mouth, the
# face's expression and the head's turn (neck). Not the irides (SOMA's eyes are sockets) nor the
# eyebrows (a tint on bald skin: brows raised by 0.4-0.7 come back near 0).
SEEN_PARTS = ("mouth", "face", "neck")


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


def face_centre(state: BodyState) -> tuple[float, float, float]:
    """The middle of the subject's own face at rest (its eyes' centre, 4 cm lower): where the
    anchors' and the recovery benchmark's close-up camera looks."""
    return _face_centre(tuple(sorted(state.phenotype.items())))


def pixel_view(resolution: int):
    """The one camera of pictures and pixel clips (module docstring) as a view config."""
    from maskscore_core.metric.views import ViewConfig

    return ViewConfig(count=1, resolution=resolution, offset=(0.5, 0.0), target=PIXEL_TARGET, radius=PIXEL_DISTANCE_M)


SUPERSAMPLE = 2  # rendered at twice the size and averaged down: edges without staircases


def picture(state: BodyState, resolution: int) -> np.ndarray:
    """(H, W, 3) uint8 picture of `state` from `pixel_view`, shaded with its look (the default
    look when it has none: the detector needs skin-like shading).

    Supersampled: with one sample a pixel, the lips' and lids' edges step from pixel to pixel as
    they move, and the detector's points jump with them; averaged samples move smoothly."""
    (shaded,) = drawn([state], resolution)
    return np.clip(np.rint(shaded * 255.0), 0, 255).astype(np.uint8)


def drawn(states: list[BodyState], resolution: int, window: tuple[int, int, int, int] | None = None) -> list[np.ndarray]:
    """`picture` of each state before rounding to 8 bits, (h, w, 3) float64 in 0..1, of the
    picture's rectangle window = (x, y, w, h) (the whole picture when None). A window is drawn
    alone (`Renderer.render_window`): the same pixels to float32 rounding, one edge pixel in a
    few thousand excepted."""
    from maskscore_core.body.reference_mesh import get_reference_mesh
    from maskscore_core.metric import appearance
    from maskscore_core.metric.render import get_renderer

    if not states:
        return []
    x, y, w, h = window if window is not None else (0, 0, resolution, resolution)
    renderer = get_renderer(pixel_view(resolution * SUPERSAMPLE))
    fine_window = tuple(v * SUPERSAMPLE for v in (x, y, w, h))
    out = []
    for state, vertices in zip(states, get_reference_mesh().vertices(list(states))):
        result = renderer.render(vertices) if window is None else renderer.render_window(vertices, fine_window)
        fine = appearance.shade(result, state.appearance or Appearance())[0].astype(np.float64)
        out.append(fine.reshape(h, SUPERSAMPLE, w, SUPERSAMPLE, 3).mean(axis=(1, 3)))
    return out


def drawn_as(fitted: BodyState, subject: BodyState, config: lf.FitConfig) -> BodyState:
    """`fitted` (a landmark fit with `config`) as the picture would draw it if it shows
    `subject`: with the subject's build, look, what it wears, its part scales, its pose outside
    the fitted bones and its value of each action the fit leaves out (cheeks, nose, gaze)."""
    from maskscore_core.body.anny_model import get_body_model

    expression = np.array(subject.expression, dtype=np.float64, copy=True)
    fitted_actions = [get_body_model().action_index(name) for name in config.actions] if config.actions else slice(None)
    expression[fitted_actions] = np.asarray(fitted.expression)[fitted_actions]
    posed = outline_state(fitted, subject, config.bones)
    return attrs.evolve(posed, expression=expression, appearance=subject.appearance)


@functools.cache
def frame_camera(resolution: int) -> tuple[lf.ViewCamera, np.ndarray]:
    """`pixel_view` as a fit view, and its centre (the rig origin)."""
    from maskscore_core.metric.views import camera_poses

    config = pixel_view(resolution)
    pose = camera_poses(config)[0]
    return lf.ViewCamera.from_pose(pose, config.fov_deg, resolution, resolution), np.asarray(pose.origin)


@functools.cache
def default_detector():
    from .detector import FaceMeshDetector

    return FaceMeshDetector()


@functools.cache
def default_segmenter():
    from .segmenter import PersonSegmenter

    return PersonSegmenter()


# The detector's points that pictures and pixel clips are fitted without: the brows. ANNY's
# brows are a tint on bald skin, and the detector does not follow them: a brow raise reads back
# as nothing, and on a dark-skinned face the brow points jump by several pixels when the head
# turns a little, which the fit read as a turn (plugins/maskscore-face-landmarks/README.md, "Why
# pictures are fitted without the brows").
UNFOLLOWED_POINTS: tuple[str, ...] = ("brow_a", "brow_b")
# A picture's fit (the image modality, and the first stage of a clip's frames): the known camera's.
PIXEL_PICTURE_FIT = attrs.evolve(lf.PIXEL_FIT_KNOWN_CAMERA, unfollowed=UNFOLLOWED_POINTS)

# A clip's frames are fitted twice, jointly and with the head's turn read from rigid points alone
# (nose, eyes, irises: not the lips or chin, which the detector misreads on an open, smiling
# mouth and which then pull the turn), and the two are weighed by how well each explains every
# landmark (`landmark_fit.weighed_fit`). The scale is the detector's own jitter, a pixel.
RIGID_POINTS: tuple[str, ...] = ("nose", "eye_a", "eye_b", "iris_a", "iris_b")
PIXEL_CLIP_FIT = attrs.evolve(PIXEL_PICTURE_FIT, rigid_weighed=RIGID_POINTS, rigid_scale_px=1.0)


class PixelFitter:
    """Detect and fit frames of the one camera (`frame_camera(resolution)`). With `silhouette`,
    the phenotype is then read from the person's outline (`silhouette.py`), not from the face
    landmarks alone."""

    def __init__(self, detector=None, config: lf.FitConfig | None = None, silhouette: SilhouetteFit | None = None,
                 photometric: PhotometricFit | None = None) -> None:  # fmt: skip
        self.detector = detector or default_detector()
        self.anchors = self.detector.anchors()
        self.config = config or PIXEL_PICTURE_FIT
        self.silhouette = silhouette
        self.photometric = photometric
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
                found = self.detect(picture(neutral, resolution), f"neutral picture of the subject ({resolution} px)")
                view, origin = frame_camera(resolution)
                self._biases[key] = lf.landmark_bias(found, neutral, view, origin, self.anchors)
            return self._biases[key]

    def fit(self, image: np.ndarray, subject: BodyState, where: str, init: BodyState | None = None,
            config: lf.FitConfig | None = None) -> lf.FitResult:  # fmt: skip
        """The body state a square frame of the frontal camera shows; `subject` gives the
        phenotype and look (its neutral picture measures the detector's offset). With
        `silhouette`, a picture whose outline the subject's build does not explain is read as
        another build (`shown_subject`), the face fitted again with it. With `photometric`, the
        fit is then refined against the picture's pixels where the look explains them
        (`photometric.refine`; `FitResult.photometric` says what it found)."""
        fit = self._fit_landmarks(image, subject, where, init, config)
        shown = self.shown_subject(image, fit, subject, where, config)
        if shown is not subject:
            fit = self._fit_landmarks(image, shown, where, None, config)
        if self.photometric is None:
            return fit
        config = config or self.config
        found = refine(np.asarray(image)[..., :3], fit, drawn_as(fit.state, shown, config), config, self.photometric)
        return attrs.evolve(fit, state=found.state, photometric=found)

    def shown_subject(self, image: np.ndarray, fit: lf.FitResult, subject: BodyState, where: str,
                      config: lf.FitConfig | None = None) -> BodyState:  # fmt: skip
        """Whom the picture shows, given its landmark fit `fit`: `subject` itself when there is no
        `silhouette` or the subject's outline explains the picture's, else the subject with the
        build fitted to the outline (`silhouette.py`)."""
        if self.silhouette is None:
            return subject
        try:
            person = default_segmenter().mask(np.ascontiguousarray(np.asarray(image)[..., :3]))
            posed = outline_state(fit.state, subject, (config or self.config).bones)
            if outline_distance(person, posed) <= self.silhouette.same_build * person.shape[0]:
                return subject
            build = fit_phenotype(person, attrs.evolve(posed, accessories=()), self.silhouette)
        except lf.FaceDetectionError as exc:
            raise PixelFitError(f"{where}: {exc}") from None
        return attrs.evolve(subject, phenotype=build)

    def _fit_landmarks(self, image, subject: BodyState, where: str, init: BodyState | None, config: lf.FitConfig | None) -> lf.FitResult:
        landmarks = self.detect(image, where)
        resolution = int(np.asarray(image).shape[0])
        view, origin = frame_camera(resolution)
        observed = lf.ViewLandmarks(landmarks, view, self.bias(subject, resolution))
        start = init if init is not None else neutral_state(subject)
        try:
            return lf.fit_views([observed], subject.phenotype, config or self.config, start, self.anchors, origin)
        except lf.LandmarkFitError as exc:
            raise PixelFitError(f"{where}: the face fit failed: {exc}") from None


# Temporal smoothing of a decoded clip: the fitted facial actions and head rotation averaged over
# the neighbouring frames with Gaussian weights of SMOOTHING_SIGMA_S seconds (the ends mirror their
# neighbour). The detector reads each frame alone, so its 0.5-2 px jitter would otherwise show up as
# motion. In seconds, not frames: at 25 fps the weights are about (1/4, 1/2, 1/4); at 5 fps the
# neighbours are 0.2 s away, a mouth has moved on, and they weigh nothing.
SMOOTHING_SIGMA_S = 0.04


def smooth_states(states: list[BodyState], fps: float) -> list[BodyState]:
    """`states` with expression and pose smoothed in time (see SMOOTHING_SIGMA_S)."""
    if len(states) < 3:
        return list(states)
    expression = np.stack([s.expression for s in states])
    pose = np.stack([s.pose for s in states])
    side = float(np.exp(-0.5 * (1.0 / (fps * SMOOTHING_SIGMA_S)) ** 2))
    weights = np.array([side, 1.0, side]) / (1.0 + 2.0 * side)
    out = []
    for i, state in enumerate(states):
        before, after = (i - 1 if i > 0 else 1), (i + 1 if i + 1 < len(states) else len(states) - 2)
        e = weights[0] * expression[before] + weights[1] * expression[i] + weights[2] * expression[after]
        p = weights[0] * pose[before] + weights[1] * pose[i] + weights[2] * pose[after]
        out.append(attrs.evolve(state, expression=np.clip(e, 0.0, 1.0), pose=p))
    return out


def decode_sequence(frames, subject: BodyState, names, fps: float, fitter: PixelFitter | None = None) -> list[BodyState]:
    """Body states of a clip's frames: each frame detected and fitted (warm-started from the
    previous frame's fit), then smoothed in time (`smooth_states`). With the fitter's
    `silhouette`, whom the clip shows is read once, from its first frame (`shown_subject`), and
    every frame is fitted with that build. With its `photometric`, the frames' fits are refined
    against their pixels before the smoothing (`photometric.refine_clip`), each kept where the
    look explains its frame. A frame without a usable face raises PixelFitError naming it."""
    fitter = fitter or PixelFitter()
    frames, names = list(frames), list(names)
    if not frames:
        raise PixelFitError("the clip has no frames")
    first = fitter._fit_landmarks(frames[0], subject, names[0], None, None)
    shown = fitter.shown_subject(frames[0], first, subject, names[0])
    if shown is not subject:
        first = fitter._fit_landmarks(frames[0], shown, names[0], None, None)
    warm = attrs.evolve(fitter.config, adam_steps=0)
    fits = [first]
    for frame, name in zip(frames[1:], names[1:]):
        fits.append(fitter._fit_landmarks(frame, shown, name, fits[-1].state, warm))
    states = [fit.state for fit in fits]
    if fitter.photometric is not None:
        looks = [drawn_as(fit.state, shown, fitter.config) for fit in fits]
        pictures = [np.asarray(frame)[..., :3] for frame in frames]
        states = [found.state for found in refine_clip(pictures, fits, looks, fitter.config, fitter.photometric)]
    return smooth_states(states, fps)
