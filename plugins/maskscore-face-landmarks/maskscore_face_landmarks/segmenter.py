"""mediapipe's selfie segmentation as MaskScore's person segmenter: RGB pixels in, the person's
outline out.

Why this model: it ships inside the same mediapipe 0.10.14 wheel as the face detector
(`selfie_segmentation.tflite`), so it runs offline, and it sees the head, neck and shoulders that
the face landmarks leave out (`silhouette.py` reads the subject's build from them). Graphs are not
thread-safe, so one lock serialises the calls of a segmenter.
"""

from __future__ import annotations

import threading

import numpy as np

from maskscore_core.trials.landmark_fit import FaceDetectionError

from .start_quietly import started

THRESHOLD = 0.5  # the model's person probability above which a pixel is the person


class PersonSegmenter:
    """`mask(image)` -> (H, W) bool: where an (H, W, 3) uint8 RGB image shows a person."""

    name = "mediapipe-selfie-segmentation"

    def __init__(self, threshold: float = THRESHOLD) -> None:
        import mediapipe as mp

        self.threshold = float(threshold)
        self._model = started(lambda: mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=0))
        self._lock = threading.Lock()

    def mask(self, image: np.ndarray) -> np.ndarray:
        image = np.asarray(image)
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise FaceDetectionError(f"expected an (H, W, 3) uint8 RGB image, got {image.dtype} {image.shape}")
        with self._lock:
            probability = self._model.process(np.ascontiguousarray(image)).segmentation_mask
        if probability is None or probability.shape != image.shape[:2]:
            raise FaceDetectionError("the person segmenter returned no mask")
        person = probability > self.threshold
        if not person.any():
            raise FaceDetectionError("no person outline found")
        return person

    def close(self) -> None:
        self._model.close()
