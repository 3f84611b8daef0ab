"""MaskScore's multimodal modality plugin: cross-modal agreement through the ANNY mesh, one
derivation path for the references and another for the candidates (see README.md). Hook
implementations only; the work lives in the modules."""

from pathlib import Path

from maskscore_core import hookimpl
from maskscore_core.records import Asset, PluginInfo

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
from .table import multimodal_row


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))


@hookimpl
def encode(modality, target, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=CrossModal(target=target))


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    if asset.modality == MODALITY:
        return decode_candidate(asset, instance, ctx)


@hookimpl
def decode_reference(modality, instance, which, ctx):
    if modality == MODALITY:
        if which not in ("a", "b"):
            raise MultimodalError(f"reference must be 'a' or 'b', got {which!r}")
        return _decode_reference(instance, which, ctx)


@hookimpl
def mask_part(modality, part, ctx):
    # Every path meets on the mesh, so the multimodal mask is the part's reference-mesh vertices.
    if modality == MODALITY:
        from maskscore_core import parts

        parts.check_active(part)
        return parts.part_vertex_ids(part)


@hookimpl
def write_asset(asset, directory, name, ctx):
    if asset.modality == MODALITY:
        return relative_to_root(write_folder(cross_modal(asset), Path(directory) / name, ctx), ctx)


@hookimpl
def read_asset(modality, value, root, ctx):
    if modality == MODALITY:
        return Asset(modality=MODALITY, data=read_folder(resolve(value, root), root, ctx), path=str(value))


@hookimpl
def reward_row(modality, instance, input_value, candidate_values, scores, dimension, root, ctx):
    if modality == MODALITY:
        return multimodal_row(instance, input_value, candidate_values, scores, dimension, root, ctx)
