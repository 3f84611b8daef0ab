"""MaskScore's multimodal modality plugin: cross-modal agreement through the ANNY mesh, one
derivation path for the references and another for the candidates (see README.md). The Modality
object and two hooks; the work lives in the modules."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl

from maskscore_core.body import parts
from maskscore_core.edits import instances as edits
from maskscore_core.plugin.modality_kit import part_mask
from maskscore_core.plugin.records import Asset

from .representation import (
    MODALITY,
    CrossModal,
    MultimodalError,
    cross_modal,
    decode_candidate,
    decode_reference as _decode_reference,
    read_folder,
    relative_to_root,
    resolve,
    write_folder,
)
from .pairs import MultimodalOptions
from .table import multimodal_row


class Multimodal(Modality):
    """One edit result realised in another modality than the input's (`pairs`)."""

    def encode(self, target, ctx):
        return Asset(modality=MODALITY, data=CrossModal(target=target))

    def decode_reference(self, instance, which, ctx):
        if which not in ("a", "b"):
            raise MultimodalError(f"reference must be 'a' or 'b', got {which!r}")
        return _decode_reference(instance, which, ctx)

    def write(self, asset, directory, name, ctx):
        return relative_to_root(write_folder(cross_modal(asset), Path(directory) / name, ctx), ctx)

    def read(self, value, root, ctx):
        return Asset(modality=MODALITY, data=read_folder(resolve(value, root), root, ctx), path=str(value))

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return multimodal_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Multimodal(
        name=MODALITY, table="MultimodalEditReward", order=7, options=MultimodalOptions,
        input_columns=(Column("input_modality", "string", "source modality name"),
                       Column("output_modality", "string", "target modality name"),
                       Column("input_data", "string", "path to input")),
        candidate_column=Column("output_candidates", "list<string>", "paths to candidate outputs"),
        template="match the {part} across modalities to frame B",
        task_table={part: "cross_modal_compose" for part in edits.MOTION_PARTS},
        suffixes=("/manifest.json",),  # a folder of the two paths' files
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return decode_candidate(asset, instance, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    # Every path meets on the mesh, so the multimodal mask is the part's reference-mesh vertices.
    parts.check_active(part)
    return part_mask(part)
