"""MaskScore's keypoints modality plugin: fixed surface points on the mesh, applied to frame A."""

from pathlib import Path

from maskscore_core import Column, hookimpl, vocab

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.modality_kit import NumbersModality, part_mask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import keypoint_set, representation


class Keypoints(NumbersModality):
    """Surface points of the reference mesh, stored in the table as coordinates."""

    def encode(self, target, ctx):
        return representation.encode(target)

    def write(self, asset, directory, name, ctx):
        keypoint_set.write_sidecar(Path(directory))  # which surface points the columns hold
        return super().write(asset, directory, name, ctx)

    def read(self, value, root, ctx):
        return representation.from_column(value)  # with the keypoint set's faces and weights


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset, instance)


@hookimpl
def register_modalities(register):
    # Body parts only, without gaze: keypoints on an eye socket move by a fraction of a
    # millimetre, and an accessory added, removed or resized is carried by surface points only
    # roughly (its in-between rungs came out unordered).
    tasks = {part: task for part, task in edits.WITHOUT_GAZE.items() if part not in vocab.ACCESSORY_PARTS}
    register(Keypoints(
        name=representation.MODALITY, table="KeypointEditReward", order=2, task_table=tasks,
        input_columns=(Column("input_keypoints", "list<float>", "frame A's surface point coordinates"), CONDITIONING_IMAGE),
        candidate_column=Column("output_keypoints", "list<list<float>>", "candidate surface points"),
        template="refit the {part} landmarks to frame B", error=representation.KeypointError,
        check_values=representation.check,
    ))  # fmt: skip


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, representation.mask(part))  # names parts no keypoint lies on
