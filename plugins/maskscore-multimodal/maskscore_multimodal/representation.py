"""The multimodal representation: one edit result, realised in another modality.

In memory a multimodal asset is a `CrossModal`: the modality-neutral content (the `Target` the
editor asked for) and, once known, its realisation in the row's output modality (an `Asset` of
that modality). Which modality that is depends on the instance (see `pairs`), which `encode`
and `write` do not see; so encoding keeps the Target, and the realisation is made when the
instance is known: at decode time, and when the reward row is written.

On disk an asset is a folder: `target.json` (the Target), `manifest.json` (format, and the
realised modality and the value its own modality's `write` returned) and the realised
files, written by that modality's plugin into the same folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import reward_tables
from maskscore_core.dataset.asset_manifest import read_manifest
from maskscore_core.dataset.reward_tables import relative_to_root  # noqa: F401 - the plugin writes table paths with it
from maskscore_core.plugin.records import Asset, Decoded, EditInstance, Target, converter, structure_error

from .pairs import PATHS, choose_pair

MODALITY = "multimodal"
FORMAT = "maskscore-multimodal/1"
MANIFEST = "manifest.json"
TARGET_FILE = "target.json"


class MultimodalError(ValueError):
    """A multimodal asset or folder that cannot be used."""


@attrs.frozen(eq=False)
class CrossModal:
    target: Target | None = None
    realised: Asset | None = None

    def __attrs_post_init__(self):
        if self.target is None and self.realised is None:
            raise MultimodalError("a multimodal asset needs a target or a realised asset")
        if self.realised is not None and self.realised.modality not in PATHS:
            raise MultimodalError(f"a multimodal asset cannot be realised as {self.realised.modality!r}")


def cross_modal(asset: Asset) -> CrossModal:
    if not isinstance(asset.data, CrossModal):
        raise MultimodalError(f"a multimodal asset holds a CrossModal, got {type(asset.data).__name__}")
    return asset.data


def realise(value: CrossModal, modality: str, ctx) -> Asset:
    """The asset in `modality`: the one already realised, else the target encoded by that
    modality's plugin."""
    if value.realised is not None and value.realised.modality == modality:
        return value.realised
    if value.target is None:
        raise MultimodalError(
            f"multimodal asset realised as {value.realised.modality!r} has no target to re-encode as {modality!r}"
        )
    return plugins.call("encode", modality, modality=modality, target=value.target, ctx=ctx)


def decode_candidate(asset: Asset, instance: EditInstance, ctx) -> Decoded:
    """Through the output path of the instance's pair."""
    pair = choose_pair(instance, ctx)
    inner = realise(cross_modal(asset), pair.output, ctx)
    return plugins.call("decode_to_mesh", inner.modality, asset=inner, instance=instance, ctx=ctx)


# Input paths that carry only what is said (`pairs` module docstring).
SPOKEN_PATHS: tuple[str, ...] = ("speech", "text")


def decode_reference(instance: EditInstance, which: str, ctx) -> Decoded:
    """Frame A or B through the input path of the instance's pair.

    A spoken input (speech, text) gives the frame's mouth as its clip moves it (the clip's face
    activations, on frame A's body, `spoken_reference`), not the speech or text plugin's own
    reference (the frame's words spoken and decoded): a multimodal row edits one frame, and its
    frames A and B are often two instants of one clip saying the same words, which would decode
    alike and leave nothing to calibrate on (instruction_following 0 for every rung)."""
    pair = choose_pair(instance, ctx)
    if pair.input in SPOKEN_PATHS:
        return spoken_reference(instance, which, ctx)
    return plugins.call("decode_reference", pair.input, modality=pair.input, instance=instance, which=which, ctx=ctx)


def spoken_reference(instance: EditInstance, which: str, ctx) -> Decoded:
    """The frame's mouth and jaw actions (what speech moves) driving frame A's body, decoded as
    the speech and text paths decode face activations (`spoken_mesh.decode_activations`)."""
    import numpy as np

    from maskscore_core.speech.spoken_mesh import decode_activations, sampled_frame_count

    target = instance.frame(which)
    return decode_activations(instance, np.stack([state.expression for state in target.states]), sampled_frame_count(ctx))


def write_folder(value: CrossModal, folder: Path, ctx) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"format": FORMAT, "target": None, "modality": None, "value": None}
    if value.target is not None:
        (folder / TARGET_FILE).write_text(json.dumps(converter.unstructure(value.target), sort_keys=True, indent=1))
        manifest["target"] = TARGET_FILE
    if value.realised is not None:
        manifest["modality"] = value.realised.modality
        manifest["value"] = plugins.call(
            "write_asset", value.realised.modality, asset=value.realised, directory=folder, name=value.realised.modality, ctx=ctx
        )
    (folder / MANIFEST).write_text(json.dumps(manifest, sort_keys=True, indent=1))
    return folder


def realise_folder(folder: Path, modality: str, root, ctx) -> None:
    """Make sure the folder holds its content realised in `modality` (the reward row needs it)."""
    value = read_folder(folder, root, ctx)
    if value.realised is None or value.realised.modality != modality:
        write_folder(CrossModal(target=value.target, realised=realise(value, modality, ctx)), folder, ctx)


def read_folder(folder: Path, root, ctx) -> CrossModal:
    manifest_path = folder / MANIFEST
    manifest = read_manifest(folder, MANIFEST, FORMAT, MultimodalError, "multimodal folder")
    target = None
    if manifest.get("target"):
        target_path = resolve(manifest["target"], folder)  # the name stays inside the folder
        if not target_path.is_file():
            raise MultimodalError(f"multimodal folder {folder} lacks its {manifest['target']}")
        try:
            target = converter.structure(json.loads(target_path.read_text()), Target)
        except Exception as err:  # corrupt JSON, NaN arrays, wrong shapes: all name the file
            raise MultimodalError(f"{target_path} is not a valid target: {structure_error(err)}") from None
    realised = None
    if manifest.get("modality"):
        modality = manifest["modality"]
        if modality not in PATHS:
            raise MultimodalError(f"{manifest_path}: {modality!r} is not a derivation path")
        realised = plugins.call("read_asset", modality, modality=modality, value=manifest["value"], root=root, ctx=ctx)
    return CrossModal(target=target, realised=realised)



def resolve(value, root) -> Path:
    """A table value back to a filesystem path (relative values are under the dataset root)."""
    return reward_tables.resolve(value, root, "a multimodal table value", MultimodalError)
