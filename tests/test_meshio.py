"""Mesh files on the reference topology: round trips keep vertex order; bad files say why."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.body.meshio import MeshFileError, read_vertices, write_mesh
from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh


@pytest.fixture(scope="module")
def vertices():
    expression = np.zeros(52)
    expression[get_reference_mesh().body.action_index("jawOpen")] = 0.5
    return get_reference_mesh().vertices([BodyState(expression=expression)])[0]


@pytest.mark.parametrize("suffix", [".glb", ".ply", ".obj"])
def test_round_trip_keeps_every_vertex_in_order(tmp_path, vertices, suffix):
    path = write_mesh(tmp_path / f"mesh{suffix}", vertices)
    back = read_vertices(path)
    assert back.shape == vertices.shape
    assert np.abs(back - vertices).max() < 1e-6  # float32 storage, same order


def test_bare_anny_mesh_gets_collapsed_accessory_slots(tmp_path, vertices):
    reference = get_reference_mesh()
    anny_only = vertices[: reference.anny_vertex_count]
    import trimesh

    path = tmp_path / "anny.ply"
    path.write_bytes(trimesh.Trimesh(anny_only, reference.body.faces, process=False).export(file_type="ply"))
    back = read_vertices(path)
    assert back.shape == (reference.vertex_count, 3)
    assert np.abs(back[: reference.anny_vertex_count] - anny_only).max() < 1e-6


def test_missing_empty_and_unsupported_files(tmp_path):
    with pytest.raises(MeshFileError, match="not found"):
        read_vertices(tmp_path / "absent.glb")
    (tmp_path / "empty.obj").write_bytes(b"")
    with pytest.raises(MeshFileError, match="empty"):
        read_vertices(tmp_path / "empty.obj")
    (tmp_path / "mesh.stl").write_bytes(b"solid x")
    with pytest.raises(MeshFileError, match="unsupported mesh format"):
        read_vertices(tmp_path / "mesh.stl")


@pytest.mark.parametrize("suffix, payload", [(".glb", b"glTF" + b"\x00" * 40), (".ply", b"ply\nformat ascii 1.0\nelement vertex 3\n")])
def test_corrupt_files_are_reported_as_unreadable(tmp_path, suffix, payload):
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(payload)
    with pytest.raises(MeshFileError, match="cannot read|no triangle mesh|no vertices"):
        read_vertices(path)


def test_wrong_vertex_count_is_named(tmp_path):
    path = tmp_path / "triangle.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(MeshFileError, match="3 vertices, but the reference mesh has"):
        read_vertices(path)


def test_non_finite_vertices_are_named(tmp_path, vertices):
    broken = vertices.copy()
    broken[11] = [np.nan, 0.0, np.inf]
    path = tmp_path / "nan.obj"
    import trimesh

    path.write_bytes(trimesh.Trimesh(broken, get_reference_mesh().faces, process=False).export(file_type="obj").encode())
    with pytest.raises(MeshFileError, match="NaN or infinite"):
        read_vertices(path)
    with pytest.raises(ValueError, match="NaN or infinite"):
        write_mesh(tmp_path / "nan.glb", broken)


def _export(path, vertices, faces):
    import trimesh

    data = trimesh.Trimesh(vertices, faces, process=False).export(file_type=path.suffix[1:])
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("suffix", [".glb", ".ply"])
def test_the_reference_triangles_in_any_order_or_winding_are_the_reference_topology(tmp_path, vertices, suffix):
    faces = get_reference_mesh().faces
    shuffled = np.random.default_rng(0).permutation(faces)[:, [0, 2, 1]]
    back = read_vertices(_export(tmp_path / f"shuffled{suffix}", vertices, shuffled))
    assert np.abs(back - vertices).max() < 1e-6


@pytest.mark.parametrize("suffix", [".glb", ".ply"])
def test_other_faces_on_the_reference_vertex_count_are_refused(tmp_path, vertices, suffix):
    faces = get_reference_mesh().faces.copy()
    faces[100] = faces[200]  # one triangle replaced: a different surface on the same vertices
    with pytest.raises(MeshFileError, match=r"triangles are not the reference topology's .*\(1 of the reference's are missing\)"):
        read_vertices(_export(tmp_path / f"other{suffix}", vertices, faces))
    with pytest.raises(MeshFileError, match="triangles are not the reference topology's"):
        read_vertices(_export(tmp_path / f"fewer{suffix}", vertices, faces[:-10]))


@pytest.mark.parametrize("scale, moved", [(1e6, 0.0), (100.0, 0.0), (1e-3, 0.0), (1.0, 50.0)])
def test_coordinates_no_body_can_have_are_refused(tmp_path, vertices, scale, moved):
    path = _export(tmp_path / "scaled.glb", vertices * scale + moved, get_reference_mesh().faces)
    with pytest.raises(MeshFileError, match=r"coordinates reach .* m from the origin .*was the mesh scaled"):
        read_vertices(path)


def test_a_body_of_the_reference_model_is_within_the_extent_bounds(vertices):
    from maskscore_core.body import meshio

    span = (vertices.max(axis=0) - vertices.min(axis=0)).max()
    assert meshio.MIN_SPAN_M * 10 < span < meshio.MAX_SPAN_M / 2 and np.abs(vertices).max() < meshio.MAX_REACH_M / 5
