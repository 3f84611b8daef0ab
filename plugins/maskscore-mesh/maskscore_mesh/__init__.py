"""MaskScore's mesh modality plugin: the root representation, reference-mesh vertices as .glb."""

from pathlib import Path

from maskscore_core import Column, Modality, hookimpl

from maskscore_core.edits import instances as edits
from maskscore_core.metric import foreign_mesh
from maskscore_core.plugin.records import Asset, PartMask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation, table

MODALITY = representation.MODALITY


class Mesh(Modality):
    """The body as ANNY's reference mesh; its look (vertex colours, light, backdrop) rides in the
    .glb. Candidates may be meshes of any topology (.glb, .ply, .obj: a model's output), scored by
    rendering their own triangles."""

    name = MODALITY
    table = "MeshEditReward"
    input_columns = (Column("input_mesh", "string", "path to frame A's mesh (.glb)"), CONDITIONING_IMAGE)
    candidate_column = Column("output_meshes", "list<string>", "paths to candidate meshes (.glb)")
    template = "edit the {part} to match frame B"
    # Every part, with the appearance task types: a .glb carries vertex colours (COLOR_0) and the
    # light and backdrop in the scene's extras.
    task_table = edits.with_appearance(edits.STATIC_TASKS)
    suffixes = (representation.SUFFIX,)
    order = 0

    def encode(self, target, ctx):
        return representation.encode(target)

    def decode_reference(self, instance, which, ctx):
        return representation.decode(representation.encode(instance.frame(which)))

    def write(self, asset, directory, name, ctx):
        if isinstance(asset.data, foreign_mesh.ForeignMesh):  # its own topology: its own triangles
            path = foreign_mesh.write(Path(directory) / f"{name}{representation.SUFFIX}", asset.data)
            return table.relative_to_root(path, ctx)
        path = representation.write(
            asset.data, Path(directory) / f"{name}{representation.SUFFIX}", asset.meta.get("appearance")
        )
        return table.relative_to_root(path, ctx)

    def read(self, value, root, ctx):
        path = table.resolve(value, root)
        data = representation.read(path)  # names a missing, corrupt or bad file first
        if isinstance(data, foreign_mesh.ForeignMesh) or path.suffix.lower() != representation.SUFFIX:
            return Asset(modality=MODALITY, data=data, path=str(value), meta={"appearance": None})
        look = representation.read_appearance(path)
        return Asset(modality=MODALITY, data=data, path=str(value), meta={"appearance": look})

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return table.reward_row(instance, input_value, candidate_values, scores, dimension, root, ctx)


@hookimpl
def register_modalities(register):
    register(Mesh())


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    return representation.decode(asset)


@hookimpl
def mask_part(modality, part, ctx):
    from maskscore_core.body import parts

    return PartMask(region=parts.region_vertex_ids(part), native=parts.part_vertex_ids(part))
