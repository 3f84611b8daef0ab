"""MaskScore's face-landmark detector: mediapipe Face Mesh (offline, 478 points with irises)
in the SpeakingFaces loader's landmark-detector slot, and the tie of its points to the ANNY mesh.

The slot finds it through the `maskscore.landmark_detectors` entry point; the image and video
modalities use it to read faces from pixels (see README.md)."""

from .detector import MIN_FACE_PX, FaceMeshDetector

__all__ = ["MIN_FACE_PX", "FaceMeshDetector"]
