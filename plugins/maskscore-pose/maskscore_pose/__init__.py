"""MaskScore's pose modality plugin: SOMA bones [78x3] + t[3], decoded by FK + skinning."""

from maskscore_core import Column, hookimpl

from maskscore_core.edits import instances as edits
from maskscore_core.plugin.modality_kit import NumbersModality, part_mask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation


class Pose(NumbersModality):
    """SOMA bone rotations and the root translation, stored in the table as numbers."""

    def encode(self, target, ctx):
        return representation.encode(target)


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset, instance)


@hookimpl
def register_modalities(register):
    register(Pose(
        name=representation.MODALITY, table="PoseEditReward", order=1, check_values=representation.check,
        error=representation.PoseError,
        input_columns=(Column("input_pose", "list<float>", "frame A's SOMA rotations [78x3] + t [3]"), CONDITIONING_IMAGE),
        candidate_column=Column("output_poses", "list<list<float>>", "candidate bone poses"),
        template="repose the {part} to frame B's expression",
        # No SOMA bone carries the brows, so a pose cannot express an eyebrow edit.
        task_table={part: "pose_change" for part in edits.MOTION_PARTS if part != "eyebrow"},
        ladder_levels=representation.LADDER_LEVELS,  # no rung 5: a pose carries no identity
    ))  # fmt: skip


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part, representation.mask(part))
