"""MaskScore's ARKit modality, from outside the core: face captures as Live Link Face records them.

A capture (CSV, `capture`) reaches the ANNY mesh through its blendshapes (ANNY's facial actions
under their ARKit names) and head angles (the Head bone), frame by frame like a video clip
(`face`). The plugin registers one Modality object and answers the two operation hooks for it.
"""

from __future__ import annotations

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl

from maskscore_core.edits import instances as edits

from maskscore_core.dataset import reward_tables
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from .capture import ArkitError, Capture, read_capture, write_capture
from .face import capture_of_states, decode_capture

MODALITY = "arkit"
SUFFIX = ".csv"


def _capture(asset) -> Capture:
    if not isinstance(asset.data, Capture):
        raise ArkitError(f"an arkit asset holds a Capture, got {type(asset.data).__name__}")
    return asset.data


class Arkit(Modality):
    """A face capture: 52 blendshapes and the head's yaw, pitch and roll per frame."""

    name = MODALITY
    table = "ArkitEditReward"
    input_columns = (Column("input_capture", "string", "path to frame A's face capture (.csv)"), CONDITIONING_IMAGE)
    candidate_column = Column("output_captures", "list<string>", "paths to candidate face captures (.csv)")
    template = "retarget the {part} of the face capture to frame B"
    task_table = {part: "temporal_edit" for part in edits.MOTION_PARTS}
    sequence = True
    suffixes = (SUFFIX,)

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=capture_of_states(target.states, target.fps))

    def decode_reference(self, instance, which, ctx):
        return decode_capture(self.encode(instance.frame(which), ctx).data, instance, ctx)

    def write(self, asset, directory, name, ctx):
        path = Path(directory) / f"{name}{SUFFIX}"
        write_capture(_capture(asset), path)
        return reward_tables.relative_to_root(path, ctx)

    def read(self, value, root, ctx):
        path = reward_tables.resolve(value, root, "a face capture table value", ArkitError)
        if path.suffix.lower() != SUFFIX:
            raise ArkitError(f"face capture {path} is not a {SUFFIX} file")
        return Asset(modality=MODALITY, data=read_capture(path), path=str(value))

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        columns = {"input_capture": str(input_value), "conditioning_image": reward_tables.conditioning_image(instance, root, ctx)}
        return reward_tables.make_row(MODALITY, instance, columns, [str(v) for v in candidate_values], scores, dimension)


@hookimpl
def register_modalities(register):
    register(Arkit())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_capture(_capture(asset), instance, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    actions = parts.part_actions(part)  # checks the part
    if not actions and part != "neck":
        raise parts.PartError(f"a face capture carries the face's actions and the head's turn; {part!r} has neither")
    return PartMask(region=parts.region_vertex_ids(part), native={"actions": actions, "head": part == "neck"})
