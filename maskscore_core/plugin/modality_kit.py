"""Ready-made parts of a modality plugin, so that plugins do not write them again: the standard
reward row, assets kept as one file (or folder) each, a frame decoded as a candidate is, and a
part's mask on the reference mesh.

A plugin subclasses `TableModality` (values stored in the table itself), `NumbersModality`
(lists of floats) or `FileModality` (values are paths of files under the dataset root) instead
of `registration.Modality`, and overrides only what differs (docs/plugins.md).
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np

from maskscore_core.body import parts
from maskscore_core.dataset import reward_tables
from maskscore_core.plugin import manager
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE, Modality


def part_mask(part: str, native: Any = None) -> PartMask:
    """The mask `mask_part` returns: the metric's region of `part` on the reference mesh, and the
    modality's own mask (`native`; the part's reference-mesh vertices when None)."""
    return PartMask(region=parts.region_vertex_ids(part), native=parts.part_vertex_ids(part) if native is None else native)


class TableModality(Modality):
    """A modality whose row is the standard one: the first input column holds the input value,
    `conditioning_image` (when declared) the picture of frame A, the candidate column the
    candidate values, each as `to_column` stores it."""

    # The plugin's error class for a table value that names no readable asset.
    error: ClassVar[type[Exception]] = ValueError

    def to_column(self, value, root, what: str):
        """A value `write` returned, as the table stores it (`what` names it in errors)."""
        return str(value)

    def write(self, asset, directory, name, ctx):
        """The asset's data as the table stores it (values kept in the table itself)."""
        return self.to_column(asset.data, None, f"{self.name} asset {name}")

    def decode_reference(self, instance, which, ctx):
        """Frame A or B encoded and decoded exactly as a candidate is (the `decode_to_mesh` hook)."""
        asset = self.encode(instance.frame(which), ctx)
        return manager.call("decode_to_mesh", asset=asset, instance=instance, ctx=ctx)

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx) -> dict:
        columns = {self.input_columns[0].name: self.to_column(input_value, root, "input")}
        if CONDITIONING_IMAGE in self.input_columns:
            columns[CONDITIONING_IMAGE.name] = reward_tables.conditioning_image(instance, root, ctx)
        candidates = [self.to_column(v, root, f"candidate {i}") for i, v in enumerate(candidate_values)]
        return reward_tables.make_row(self.name, instance, columns, candidates, scores, dimension)


class NumbersModality(TableModality):
    """Values kept in the table itself, as one flat list of floats. `check_values` (declared: the
    representation's check, `(values, what=...)` -> array, raising `error`) guards both ways."""

    check_values: ClassVar[Callable[..., np.ndarray]]

    def to_column(self, value, root, what: str) -> list[float]:
        return [float(v) for v in np.asarray(self.check_values(value, what=what)).reshape(-1)]

    def read(self, value, root, ctx):
        return Asset(modality=self.name, data=self.check_values(value, what=f"{self.name} column value"))


class FileModality(TableModality):
    """Assets kept as one file each (`<name><suffixes[0]>`), or one folder (`<name>/` when the
    first suffix is `/<file>`); the table holds their paths relative to the dataset root."""

    @abc.abstractmethod
    def write_file(self, asset, path: Path, ctx) -> Path:
        """Write `asset` at `path` (a file or folder the base class named); returns it."""

    @abc.abstractmethod
    def read_file(self, path: Path, ctx):
        """The asset's data from `path`; an error of class `error` naming a missing or bad file."""

    def read_meta(self, path: Path, data, ctx) -> dict:
        """What `read` puts in the asset's meta beside the data `read_file` gave (nothing by default)."""
        return {}

    def write(self, asset, directory, name, ctx):
        suffix = self.suffixes[0]
        path = Path(directory) / (name if suffix.startswith("/") else f"{name}{suffix}")
        return reward_tables.relative_to_root(self.write_file(asset, path, ctx), ctx)

    def read(self, value, root, ctx):
        path = reward_tables.resolve(value, root, f"{self.name} table value", self.error)
        data = self.read_file(path, ctx)
        return Asset(modality=self.name, data=data, path=str(value), meta=self.read_meta(path, data, ctx))
