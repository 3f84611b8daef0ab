"""MaskScore's mesh modality plugin: the root representation, reference-mesh vertices as .glb."""

from maskscore_core import Column, hookimpl

from maskscore_core.edits import instances as edits
from maskscore_core.metric import foreign_mesh
from maskscore_core.plugin.modality_kit import FileModality, part_mask
from maskscore_core.plugin.registration import CONDITIONING_IMAGE

from . import representation

MODALITY = representation.MODALITY


class Mesh(FileModality):
    """The body as ANNY's reference mesh; its look (vertex colours, light, backdrop) rides in the
    .glb. Candidates may be meshes of any topology (.glb, .ply, .obj: a model's output), decoded by
    fitting ANNY to them from frame A's state (`maskscore_core.body.surface_fit`)."""

    def encode(self, target, ctx):
        return representation.encode(target)

    def write_file(self, asset, path, ctx):
        if isinstance(asset.data, foreign_mesh.ForeignMesh):  # its own topology: its own triangles
            return foreign_mesh.write(path, asset.data)
        return representation.write(asset.data, path, asset.meta.get("appearance"))

    def read_file(self, path, ctx):
        return representation.read(path)  # names a missing, corrupt or bad file first

    def read_meta(self, path, data, ctx):
        own = not isinstance(data, foreign_mesh.ForeignMesh) and path.suffix.lower() == representation.SUFFIX
        return {"appearance": representation.read_appearance(path) if own else None}


@hookimpl
def register_modalities(register):
    register(Mesh(
        name=MODALITY, table="MeshEditReward", order=0, suffixes=(representation.SUFFIX,),
        input_columns=(Column("input_mesh", "string", "path to frame A's mesh (.glb)"), CONDITIONING_IMAGE),
        candidate_column=Column("output_meshes", "list<string>", "paths to candidate meshes (.glb)"),
        template="edit the {part} to match frame B",
        # Every part, with the appearance task types: a .glb carries vertex colours (COLOR_0) and the
        # light and backdrop in the scene's extras.
        task_table=edits.with_appearance(edits.STATIC_TASKS),
    ))  # fmt: skip


@hookimpl
def decode_to_mesh(asset, instance, ctx):
    # A mesh of its own topology (a model's output) is decoded by fitting ANNY to it from frame A.
    return representation.decode(asset, instance.a.state if instance is not None else None)


@hookimpl
def mask_part(modality, part, ctx):
    return part_mask(part)  # the part's reference-mesh vertices
