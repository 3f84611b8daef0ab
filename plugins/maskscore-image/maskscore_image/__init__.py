"""MaskScore's image modality plugin: RGB pictures of the face, read back to the ANNY mesh through
a face-landmark detector and the landmark fit (see README.md). The Modality object and two
hooks; the work lives in the modules."""

import attrs

from maskscore_core import Column, hookimpl
from maskscore_core.body import parts
from maskscore_core.plugin.context import CoreOptions
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.records import Asset
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation
from .decode import decode_frames
from .representation import MODALITY, ImageError
from .shown import SHOWN_ACTIONS

# What the face-landmark detector reads back (jaw, lips, lids, the head's pose), and the
# detector's points each part is read from (mediapipe Face Mesh indices; the neck: the whole
# face). Not offered, as measured by benchmarks/bench_landmark_fit.py: the irides (ANNY's SOMA
# eyes are sockets; a gaze of 0.5 comes back as 0) and the eyebrows (drawn as a tint on bald
# skin, brows raised by 0.4-0.7 come back near 0).
VISIBLE_PARTS: dict[str, str] = {
    "mouth": "expression_change",
    "face": "expression_change",
    "neck": "pose_change",
}
PART_LANDMARK_GROUPS: dict[str, tuple[str, ...]] = {
    "mouth": ("lips_outer", "lips_inner", "chin"),
    "face": ("lips_outer", "lips_inner", "chin", "eye_a", "eye_b", "brow_a", "brow_b", "nose", "iris_a", "iris_b"),
    "neck": ("lips_outer", "lips_inner", "chin", "eye_a", "eye_b", "brow_a", "brow_b", "nose", "iris_a", "iris_b"),
}


class Image(FileModality):
    """One picture of the face from the frontal camera, drawn with the frame's look."""

    def encode(self, target, ctx):
        from maskscore_face_landmarks.pixels import picture

        pixels = picture(target.state, representation.resolution(ctx))
        return Asset(modality=MODALITY, data=pixels, meta={"label": target.label})

    def decode_reference(self, instance, which, ctx):
        """Frame A or B drawn as a picture and read back through the detector, as a candidate is:
        at the candidates' size where the scorer gives it (`ctx.config["pixel_references"]`),
        read as frame A's subject in the frame's own look and wardrobe (frame B may come from
        another trial, lit and dressed otherwise); nothing else of the frame is given."""
        from maskscore_face_landmarks.pixels import picture

        size = (ctx.config.options(CoreOptions).pixel_references if ctx is not None else None) or representation.resolution(ctx)
        frame = instance.frame(which).state
        pixels = picture(frame, int(size))
        subject = attrs.evolve(instance.a.state, appearance=frame.appearance, accessories=frame.accessories)
        return decode_frames([pixels], instance, ctx, [f"frame {which.upper()} of {instance.key}"], subject=subject)[0]

    def pixel_size(self, asset):
        """Every picture is read through the detector: its size."""
        return int(_pixels(asset).shape[0])

    def write_file(self, asset, path, ctx):
        return representation.write(_pixels(asset), path)  # .png, the first of SUFFIXES

    def read_file(self, path, ctx):
        return representation.read(path)


def _pixels(asset):
    if asset.data is None:
        raise ImageError(f"image asset {asset.path or asset.meta.get('label', '?')!r} holds no pixels")
    return representation.as_rgb(asset.data, f"image asset {asset.path or asset.meta.get('label', '?')}")


@hookimpl
def register_modalities(register):
    register(Image(
        name=MODALITY, table="ImageEditReward", suffixes=representation.SUFFIXES, error=ImageError,
        input_columns=(Column("input_image", "string", "path to frame A's picture (.png)"), CONDITIONING_IMAGE),
        candidate_column=Column("output_images", "list<string>", "paths to candidate pictures (.png, .jpg)"),
        template="edit the {part} in the picture to match frame B", task_table=VISIBLE_PARTS, shown_actions=SHOWN_ACTIONS,
        options=representation.ImageOptions,
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    where = asset.path or f"candidate {asset.meta.get('label', '?')} of {instance.key}"
    return decode_frames([_pixels(asset)], instance, ctx, [str(where)])[0]


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_face_landmarks.anchors import GROUPS

    parts.check_active(part)
    if part not in VISIBLE_PARTS:
        raise parts.PartError(
            f"the image modality reads the face through a landmark detector, which does not see the {part};"
            f" parts it sees: {', '.join(VISIBLE_PARTS)}"
        )
    landmarks = tuple(i for group in PART_LANDMARK_GROUPS[part] for i in GROUPS[group])
    return part_mask(part, {"landmarks": landmarks})


__all__ = ["Image", "ImageError", "decode_frames"]
