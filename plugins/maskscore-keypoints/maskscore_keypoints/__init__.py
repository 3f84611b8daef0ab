"""MaskScore's keypoints modality plugin: fixed surface points on the mesh, applied to frame A."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl, vocab

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.records import PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import keypoint_set, representation, table

MODALITY = representation.MODALITY


class Keypoints(Modality):
    """Surface points of the reference mesh, stored in the table as coordinates."""

    name = MODALITY
    table = "KeypointEditReward"
    input_columns = (Column("input_keypoints", "list<float>", "frame A's surface point coordinates"), CONDITIONING_IMAGE)
    candidate_column = Column("output_keypoints", "list<list<float>>", "candidate surface points")
    template = "refit the {part} landmarks to frame B"
    # Body parts only, without gaze: keypoints on an eye socket move by a fraction of a
    # millimetre, and an accessory added, removed or resized is carried by surface points only
    # roughly (its in-between rungs came out unordered).
    task_table = {part: task for part, task in edits.WITHOUT_GAZE.items() if part not in vocab.ACCESSORY_PARTS}
    order = 2

    def encode(self, target, ctx):
        return representation.encode(target)

    def decode_reference(self, instance, which, ctx):
        return representation.decode(representation.encode(instance.frame(which)), instance)

    def write(self, asset, directory, name, ctx):
        keypoint_set.write_sidecar(Path(directory))
        return representation.to_column(asset.data)

    def read(self, value, root, ctx):
        return representation.from_column(value)

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Keypoints())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset, instance)


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    native = representation.mask(part)  # names parts no keypoint lies on
    return PartMask(region=parts.region_vertex_ids(part), native=native)
