"""Pixels to the reference mesh: the public entry point other plugins (image editors) call.

    decode_frames(frames, instance, ctx) -> list[records.Decoded]

frames: (H, W, 3) uint8 RGB pictures from the image modality's frontal camera (square, as the
modality draws them, e.g. an editor's output for the conditioning picture). Each is read by the
face-landmark detector and fitted (`maskscore_face_landmarks.pixels.PixelFitter`), relative to a
neutral picture of the instance's subject (frame A's phenotype and look), and the build
(phenotype) is then read from the person's outline (`maskscore_face_landmarks.silhouette`): a
picture of someone else decodes to someone else. Last, the fit is refined against the picture's
pixels where the subject's look explains them (`maskscore_face_landmarks.photometric`). The
fitted state's reference mesh is what the metric compares, with the look the picture shows: the
subject's where it draws the picture as well as the look read from the pixels on the fitted body
does, else the look read (`maskscore_face_landmarks.look`), so that a picture of someone else in
another light is not taken for the subject because the two share an outline. A frame without a
usable face raises `PixelFitError` naming the frame: never a made-up fit.
"""

from __future__ import annotations

import functools

from maskscore_core.plugin.records import Decoded

from .representation import as_rgb


@functools.cache
def fitter():
    from maskscore_face_landmarks.photometric import PhotometricFit
    from maskscore_face_landmarks.pixels import PixelFitter
    from maskscore_face_landmarks.silhouette import SilhouetteFit

    return PixelFitter(silhouette=SilhouetteFit(), photometric=PhotometricFit())


@functools.cache
def landmark_fitter():
    """`fitter` without the refinement against the pixels: how a picture the subject's look does
    not explain is read (another light, an editor that relit the face), and so what an edit must
    show to be drawn (`shown.py`)."""
    from maskscore_face_landmarks.pixels import PixelFitter
    from maskscore_face_landmarks.silhouette import SilhouetteFit

    return PixelFitter(detector=fitter().detector, silhouette=SilhouetteFit())


def fit_frames(frames, instance, names=None, subject=None):
    """FitResults of `frames` (see module docstring); names label each frame in errors. subject:
    whose build and look the frames show when it is not frame A's (a reference picture of
    frame B, drawn in frame B's own look)."""
    subject = subject if subject is not None else instance.a.state
    names = list(names) if names is not None else [f"frame {i}" for i in range(len(frames))]
    return [fitter().fit(as_rgb(frame, name), subject, name) for frame, name in zip(frames, names)]


def shown_look(frame, fitted, subject, where: str):
    """The look `frame` shows, `fitted` the state read from it (module docstring,
    `maskscore_face_landmarks.look.shown_look`); a frame whose look cannot be read raises
    PixelFitError naming it (`where`)."""
    from maskscore_face_landmarks import look
    from maskscore_face_landmarks.pixels import PixelFitError

    try:
        return look.shown_look(as_rgb(frame, where), fitted, subject.appearance)
    except look.LookReadError as exc:
        raise PixelFitError(f"{where}: {exc}") from None


def decode_frames(frames, instance, ctx=None, names=None, subject=None) -> list[Decoded]:
    """The reference mesh each frame shows, with its look (module docstring; subject as
    `fit_frames`)."""
    from maskscore_core.body.reference_mesh import get_reference_mesh

    subject = subject if subject is not None else instance.a.state
    names = list(names) if names is not None else [f"frame {i}" for i in range(len(frames))]
    fits = fit_frames(frames, instance, names, subject)
    reference = get_reference_mesh()
    return [
        Decoded(vertices=reference.vertices([fit.state])[0], appearance=shown_look(frame, fit.state, subject, name))
        for frame, fit, name in zip(frames, fits, names)
    ]
