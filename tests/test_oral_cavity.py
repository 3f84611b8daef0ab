"""The oral cavity: which triangles the mesh closes in at rest, and that pictures draw them dark."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.body import oral_cavity, parts
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.metric import appearance
from maskscore_core.metric.render import vertex_normals
from maskscore_core.plugin.records import Appearance, BodyState


def _cube(inward: bool) -> tuple[np.ndarray, np.ndarray]:
    """A closed 4 cm cube; its triangles wound so that the normals face out (or in)."""
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.float64) * 0.04
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = np.array([tri for a, b, c, d in quads for tri in ((a, b, c), (a, c, d))], dtype=np.int64)
    return corners, faces[:, ::-1].copy() if inward else faces


def test_a_surface_the_mesh_closes_in_is_enclosed_and_an_open_one_is_not():
    """Rays over each vertex's hemisphere: a cube's corners whose normals face in see only the
    cube; facing out, they see nothing; a flat sheet sees nothing either way."""
    everything = np.arange(8)
    corners, faces = _cube(inward=True)
    normal = vertex_normals(corners, faces)[0]
    assert normal @ (corners.mean(axis=0) - corners[0]) > 0  # this winding's normals face in
    assert list(oral_cavity.enclosed_vertices(corners, faces, everything)) == list(everything)
    corners, faces = _cube(inward=False)
    assert len(oral_cavity.enclosed_vertices(corners, faces, everything)) == 0
    sheet = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0.05, 0.05, 0]], dtype=np.float64)
    sheet_faces = np.array([[0, 1, 2], [1, 3, 2]])
    for winding in (sheet_faces, sheet_faces[:, ::-1].copy()):
        assert len(oral_cavity.enclosed_vertices(sheet, winding, np.arange(4))) == 0


def test_hemisphere_directions_are_fixed_unit_vectors_above_the_surface():
    directions = oral_cavity.hemisphere_directions(64)
    np.testing.assert_allclose(np.linalg.norm(directions, axis=1), 1.0)
    assert (directions[:, 2] > 0).all()
    assert np.array_equal(directions, oral_cavity.hemisphere_directions(64))


def test_the_cavity_lies_inside_the_mouth_and_shows_only_when_it_opens():
    """The cavity is some of the mouth's triangles; a frontal close-up at rest (lips closed)
    shows almost none of it, a wide-open mouth a dark hole."""
    from maskscore_core.body.anny_model import get_body_model
    from maskscore_core.metric.render import get_renderer
    from maskscore_face_landmarks.anchors import frontal_view
    from maskscore_face_landmarks.pixels import face_centre

    cavity = oral_cavity.cavity_face_mask()
    mouth = parts.part_face_mask("mouth")
    assert cavity.any() and not (cavity & ~mouth).any()
    assert cavity.sum() < mouth.sum()  # the lips are not in it

    renderer = get_renderer(frontal_view(128, face_centre(BodyState())))
    expression = np.zeros(len(get_body_model().action_names))
    expression[get_body_model().action_index("jawOpen")] = 0.8
    shown = {}
    for name, state in (("rest", BodyState()), ("open", BodyState(expression=expression))):
        result = renderer.render(get_reference_mesh().vertices([state])[0])
        ids = result.face_id[0]
        inside = result.coverage[0] & cavity[np.where(ids >= 0, ids, 0)]
        shown[name] = int(inside.sum())
        if name == "open":
            dark = appearance.shade(result, Appearance())[0][inside].mean(axis=0)
            lit = appearance.shade(result, Appearance(), dark_cavity=False)[0][inside].mean(axis=0)
            assert (dark < 0.5 * lit).all()  # drawn dark, where the lips' colour was before
    assert shown["rest"] < 0.1 * shown["open"] and shown["open"] > 50


def test_the_cavity_is_its_own_region_in_the_look_and_in_mesh_colours():
    regions = appearance.face_regions()
    cavity_region = appearance.PART_PRECEDENCE.index(appearance.ORAL_CAVITY)
    assert np.array_equal(regions == cavity_region, oral_cavity.cavity_face_mask())
    colours = appearance.vertex_albedo(Appearance())
    faces = get_reference_mesh().faces[oral_cavity.cavity_face_mask()]
    inside = colours[np.unique(faces)]
    np.testing.assert_allclose(inside, np.broadcast_to(appearance.PART_COLOUR[appearance.ORAL_CAVITY], inside.shape))


def test_the_committed_cavity_is_what_the_rays_find():
    """The cavity is read from maskscore_core/data/oral_cavity.json (the rays take seconds);
    computing it again gives the very same triangles."""
    assert np.array_equal(oral_cavity.compute_face_mask(), oral_cavity.cavity_face_mask())


def test_a_cavity_for_another_mesh_is_refused_by_name(tmp_path, monkeypatch):
    import json
    from importlib import resources

    bad = tmp_path / "oral_cavity.json"
    bad.write_text(json.dumps({"face_count": 12, "faces": [1, 2]}), encoding="utf-8")
    real_files = resources.files
    monkeypatch.setattr(oral_cavity.resources, "files", lambda package: tmp_path if package == "maskscore_core" else real_files(package))
    monkeypatch.setattr(oral_cavity, "CAVITY_FILE", "oral_cavity.json")
    oral_cavity.cavity_face_mask.cache_clear()
    try:
        with pytest.raises(oral_cavity.OralCavityError, match="oral_cavity.json: made for a mesh of 12 triangles"):
            oral_cavity.cavity_face_mask()
    finally:
        oral_cavity.cavity_face_mask.cache_clear()
