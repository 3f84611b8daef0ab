"""Analysis by synthesis: a picture's landmark fit refined against the picture's own pixels.

The detector places its points to 0.5-2 px, and on a few faces that error is the size of the
edit: a jaw opened by 0.3 read as a lowered lip, a head pitched 0.08 rad read as 0.036
(plugins/maskscore-image/README.md). The pixels around the face say more than 478 points do,
where the subject's look is known, as it is for the image modality (frame A's appearance, what
it wears, its body pose, drawn by the one camera of pictures, `pixels.picture`). `refine` draws
the fitted state with that look, compares it with the picture over a window around the face
(both blurred, so that an edge moved by part of a pixel changes the difference smoothly), and
moves every facial action and the head's turn from the landmark fit until the drawing matches
(`refine`: Levenberg-Marquardt, coarse to fine, finite differences).

A picture the look does not explain (someone else, another look or renderer) keeps its landmark
fit: the refinement stands only when its drawing comes within `explained_rms` of the picture
(`RefinedFit.kept`). Pixels are then evidence; otherwise they would only pull the fit towards
whatever state makes the wrong look least wrong.
"""

from __future__ import annotations

import attrs
import numpy as np

from maskscore_core.plugin.records import BodyState
from maskscore_core.trials import landmark_fit as lf


ACTION_STEP, TURN_STEP_RAD = 0.05, 0.005  # finite-difference steps


@attrs.frozen
class PhotometricFit:
    """How `refine` runs. blurs_px: the Gaussian both pictures are blurred with in each stage
    (picture pixels), widest first; turn_alone_px: stages blurred by at least this much move the
    head's turn alone; iterations: Levenberg-Marquardt steps per stage; margin: the
    window around the fitted landmarks' box, in parts of its size; landmark_prior: the pull of
    every parameter towards the landmark fit's value (per unit squared, against the summed
    squared colour differences), which holds what the pixels do not show (an eye behind a
    rim); explained_rms: the largest RMS difference (0-1 colour values, in the window, at the
    finest blur) at which the drawing counts as the picture's (the subject drawn exactly in its
    own look comes within 0.001 of its picture; someone else's picture stays 0.09 or more off:
    plugins/maskscore-face-landmarks/README.md). A clip's frames (`refine_clip`):
    clip_blurs_px, the stages each runs; redraw_after_steps, how far (in steps) a frame's
    facial actions may start from where the carried slopes were drawn."""

    blurs_px: tuple[float, ...] = (8.0, 4.0, 2.0, 1.0)
    turn_alone_px: float = 4.0
    iterations: int = 8
    margin: float = 0.3
    landmark_prior: float = 2.0
    explained_rms: float = 0.03
    clip_blurs_px: tuple[float, ...] = (2.0, 1.0)
    redraw_after_steps: float = 10.0


@attrs.frozen
class RefinedFit:
    """What `refine` found: the state (the landmark fit's, refined where `kept`), the RMS
    difference of the drawing from the picture before and after, and the drawings made."""

    state: BodyState = attrs.field(repr=False)
    rms_before: float
    rms_after: float
    kept: bool
    drawings: int


@attrs.define(eq=False)
class Slopes:
    """The drawing's forward differences in each parameter (unblurred, over one window: a blur
    is linear, so every stage blurs the same ones), and the parameters they were drawn at.
    A clip carries them from frame to frame (`refine_clip`)."""

    at: np.ndarray | None = None
    columns: dict = attrs.Factory(dict)

    def forget(self, at: np.ndarray) -> None:
        self.at, self.columns = at, {}


def face_window(predicted_px: np.ndarray, size: int, margin: float) -> tuple[int, int, int, int]:
    """(x, y, w, h) of the picture around the fitted landmarks, `margin` of their box added on
    every side, clipped to the picture."""
    low, high = predicted_px.min(axis=0), predicted_px.max(axis=0)
    pad = (high - low) * margin
    x0, y0 = np.maximum(np.floor(low - pad).astype(int), 0)
    x1, y1 = np.minimum(np.ceil(high + pad).astype(int), size)
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"the fitted face lies outside the {size} px picture")
    return int(x0), int(y0), int(x1 - x0), int(y1 - y0)


class _Problem:
    """One picture's parameters (every facial action, the head's whole turn shared over the
    fitted chain), drawings of them around the face, and their blurred differences."""

    def __init__(self, image: np.ndarray, look: BodyState, config: lf.FitConfig, window, blurs: tuple[float, ...]):
        from maskscore_core.body.anny_model import get_body_model

        body = get_body_model()
        self.look, self.window, self.size = look, window, int(np.asarray(image).shape[0])
        self.chain = [body.bone_index(name) for name in config.bones]
        if config.chain_shares is None and len(config.bones) != 1:
            raise ValueError(f"the photometric fit turns the head as one chain; bones {config.bones} have no shares")
        self.shares = np.asarray(config.chain_shares or (1.0,), dtype=np.float64)[:, None]
        actions = len(look.expression)
        self.lower = np.concatenate([np.zeros(actions), np.full(3, -np.inf)])
        self.upper = np.concatenate([np.ones(actions), np.full(3, np.inf)])
        self.steps = np.concatenate([np.full(actions, ACTION_STEP), np.full(3, TURN_STEP_RAD)])
        self.turn = np.arange(actions, actions + 3)
        x, y, w, h = window
        pad = int(np.ceil(4 * max(blurs)))  # how far the blur reads outside the window
        x0, y0 = max(x - pad, 0), max(y - pad, 0)
        self.outer = (x0, y0, min(x + w + pad, self.size) - x0, min(y + h + pad, self.size) - y0)
        self.inner = (slice(y - y0, y - y0 + h), slice(x - x0, x - x0 + w))
        self.picture = np.asarray(image, dtype=np.float64)[y0 : y0 + self.outer[3], x0 : x0 + self.outer[2]] / 255.0

    def parameters(self, state: BodyState) -> np.ndarray:
        return np.concatenate([state.expression, state.pose[self.chain].sum(axis=0) / self.shares.sum()])

    def state(self, theta: np.ndarray) -> BodyState:
        pose = np.array(self.look.pose, dtype=np.float64, copy=True)
        pose[self.chain] = self.shares * theta[-3:][None]
        return attrs.evolve(self.look, expression=theta[:-3], pose=pose)

    def drawings(self, thetas: list[np.ndarray]) -> list[np.ndarray]:
        """The states of `thetas` drawn over the window and the blur's margin, unblurred."""
        from .pixels import drawn

        return drawn([self.state(t) for t in thetas], self.size, self.outer)

    def blurred(self, pixels: np.ndarray, blur_px: float) -> np.ndarray:
        """The window of `pixels` (drawn over the outer window) blurred, flattened."""
        from scipy.ndimage import gaussian_filter

        return gaussian_filter(pixels, (blur_px, blur_px, 0), mode="nearest")[self.inner].ravel()


def refine(image: np.ndarray, fit: lf.FitResult, look: BodyState, config: lf.FitConfig,
           settings: PhotometricFit = PhotometricFit(), *, window: tuple[int, int, int, int] | None = None,
           blurs: tuple[float, ...] | None = None, slopes: Slopes | None = None,
           relinearise: bool = True) -> RefinedFit:  # fmt: skip
    """`fit` (a landmark fit of `image` with `config`) refined against the picture's pixels.
    look: the fitted state as the picture draws it (the fit with the subject's look, what it
    wears, its body pose, and its value of every action the landmarks do not fit:
    `pixels.drawn_as`). Deterministic.

    Coarse to fine: one stage per blur of `settings.blurs_px`, the widest first (an edge a few
    pixels off still overlaps its place); the widest stages move the head's turn alone (a turn
    a tenth of a radian off moves every edge of the head by pixels, and the actions' slopes
    drawn there are not those at the right turn). Then every facial action moves too. The
    Jacobian is drawn by forward differences where a stage starts (again only where a
    parameter has moved by more than its step since: a blur is linear, so each stage blurs the
    same drawings), and updated after every step by Broyden's rank-one rule instead of drawn
    again.

    For a clip's frames (`refine_clip`): window, the picture's rectangle compared (default:
    around the fitted landmarks, `face_window`); blurs, the stages (default
    `settings.blurs_px`); relinearise False, the slopes are drawn where the frame starts and
    not again. slopes: forward differences drawn over the same window for an earlier frame;
    without relinearise, the facial actions' are used as they are while this frame's actions
    start within `settings.redraw_after_steps` steps of where they were drawn, and the head
    turn's are drawn again (a turn moves every edge of the head). They are kept up to date in
    place."""
    size = int(np.asarray(image).shape[0])
    blurs = blurs or settings.blurs_px
    problem = _Problem(image, look, config, window or face_window(fit.predicted_px, size, settings.margin), blurs)
    anchor = theta = problem.parameters(look)
    (current,) = problem.drawings([theta])
    finest, basis = settings.blurs_px[-1], np.eye(theta.size)
    target = problem.blurred(problem.picture, finest)
    before = float(np.sqrt(np.mean((problem.blurred(current, finest) - target) ** 2)))
    slopes = slopes if slopes is not None else Slopes()
    if not relinearise:
        actions = np.setdiff1d(np.arange(theta.size), problem.turn)
        near = slopes.at is not None and bool(np.all(np.abs(theta - slopes.at)[actions] <= settings.redraw_after_steps * problem.steps[actions]))
        if near:
            for i in problem.turn:
                slopes.columns.pop(i, None)
        else:
            slopes.forget(theta)
    drawings = 1
    for blur in blurs:
        free = problem.turn if blur >= settings.turn_alone_px else np.arange(theta.size)
        if relinearise and (slopes.at is None or np.any(np.abs(theta - slopes.at) > problem.steps)):  # linearised too far away
            slopes.forget(theta)
        steps = np.where(theta + problem.steps <= problem.upper, problem.steps, -problem.steps)
        new = [i for i in free if i not in slopes.columns]
        for i, m in zip(new, problem.drawings([theta + steps[i] * basis[i] for i in new])):
            slopes.columns[i] = (m - current) / steps[i]
        drawings += len(new)
        observed = problem.blurred(problem.picture, blur)
        jacobian = np.stack([problem.blurred(slopes.columns[i], blur) for i in free], axis=1)
        theta, current, made = _levenberg_marquardt(problem, blur, observed, jacobian, free, theta, current, anchor, settings)
        drawings += made
    after = float(np.sqrt(np.mean((problem.blurred(current, finest) - target) ** 2)))
    if after > settings.explained_rms:
        return RefinedFit(fit.state, before, after, False, drawings)
    drawn = problem.state(theta)
    pose = np.array(fit.state.pose, dtype=np.float64, copy=True)
    pose[problem.chain] = drawn.pose[problem.chain]
    return RefinedFit(attrs.evolve(fit.state, expression=drawn.expression, pose=pose), before, after, True, drawings)


def refine_clip(images, fits: list[lf.FitResult], looks: list[BodyState], config: lf.FitConfig,
                settings: PhotometricFit = PhotometricFit()) -> list[RefinedFit]:  # fmt: skip
    """Each frame of a clip refined as `refine` refines a picture, over one window around every
    frame's face, from its own landmark fit through `settings.clip_blurs_px` with slopes drawn
    once where it starts: the first frame's drawn there, each later frame's facial actions'
    carried from the frames before (a face changes little from frame to frame, and drawing
    them costs most of a picture's refinement). The turn needs no widest stages: a clip's
    landmark fit reads it from rigid points (`pixels.PIXEL_CLIP_FIT`). Each frame is kept or
    not on its own."""
    images = [np.asarray(image) for image in images]
    size = int(images[0].shape[0])
    boxes = np.array([face_window(fit.predicted_px, size, settings.margin) for fit in fits])
    x0, y0 = boxes[:, :2].min(axis=0)
    x1, y1 = (boxes[:, :2] + boxes[:, 2:]).max(axis=0)
    window = (int(x0), int(y0), int(x1 - x0), int(y1 - y0))
    slopes = Slopes()
    return [refine(image, fit, look, config, settings, window=window, blurs=settings.clip_blurs_px, slopes=slopes,
                   relinearise=False) for image, fit, look in zip(images, fits, looks)]  # fmt: skip


def _levenberg_marquardt(problem: _Problem, blur: float, observed: np.ndarray, jacobian: np.ndarray, free: np.ndarray,
                         theta: np.ndarray, current: np.ndarray, anchor: np.ndarray, settings: PhotometricFit):  # fmt: skip
    """Up to `settings.iterations` damped Gauss-Newton steps of the `free` parameters from theta
    (drawn as `current`) on the blurred squared difference plus the landmark prior, each kept
    only if it lowers that; returns the parameters, their drawing and the drawings made."""
    prior = settings.landmark_prior

    def total(residual, parameters):
        return float(residual @ residual) + prior * float((parameters - anchor) @ (parameters - anchor))

    r = problem.blurred(current, blur) - observed
    cost, damping, made = total(r, theta), 1e-2, 0
    for _ in range(settings.iterations):
        normal = jacobian.T @ jacobian + prior * np.eye(len(free))
        gradient = jacobian.T @ r + prior * (theta[free] - anchor[free])
        trial = theta.copy()
        trial[free] += np.linalg.solve(normal + damping * np.diag(np.diag(normal)), -gradient)
        trial = np.clip(trial, problem.lower, problem.upper)
        step = (trial - theta)[free]
        if not np.any(step):
            break
        (trial_drawing,) = problem.drawings([trial])
        trial_r = problem.blurred(trial_drawing, blur) - observed
        made += 1
        jacobian += np.outer(trial_r - r - jacobian @ step, step) / float(step @ step)  # Broyden
        if total(trial_r, trial) < cost:
            theta, current, r, cost = trial, trial_drawing, trial_r, total(trial_r, trial)
            damping = max(damping / 3.0, 1e-6)
        else:
            damping *= 4.0
    return theta, current, made
