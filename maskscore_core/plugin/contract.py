"""The contract every modality plugin's tests run: subclass `ModalityContract` in a test module.

    class TestContract(ModalityContract):
        modality = "depth"  # distribution: the one whose pyproject.toml is above the test file
        bad_files = [("nope.exr", {}, "does not exist"), ("bad.exr", {"bad.exr": b"junk"}, "OpenEXR")]

        def unit_instance(self):
            return unit_instance("depth", "reconstruct the mouth depth to match frame B", "depth_edit",
                                 face_state(), face_state(jawOpen=0.9))

The subclass inherits one test per promise a modality makes to the core: it works alone (and
nothing answers for it without it), one real round trip (encode, write, decode, score), the
frame-pair ladder recovered on the built-in trials, reward rows valid against the table's
schema, bad files rejected with a message, no answers for other modalities. Hooks for what
differs between modalities (`check_rows`, `check_ladders`, `ladder_filter`) add a plugin's own
assertions; they never replace the shared ones. The fixtures (`ctx`, `built_in_trials`, plugin
isolation) come from the core's pytest plugin (`maskscore_core.plugin.pytest_plugin`).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.plugin import manager as plugins

from maskscore_core.dataset import reward_tables

from maskscore_core.dataset import schemas
from maskscore_core.plugin.pytest_plugin import distribution_of
from maskscore_core.plugin.registration import CONDITIONING_IMAGE
from maskscore_core.plugin.testing import check_modality_plugin_alone, check_round_trip, modality_round_trip
from maskscore_core.body.parts import PartError
from maskscore_core.edits.instances import make_instances
from maskscore_core.edits.ladder import ladder_rungs


class ModalityContract:
    """Shared tests of one modality plugin (see module docstring). Class attributes configure it."""

    modality: str = ""
    distribution: str = ""  # "": the distribution whose pyproject.toml is above the test module
    # (value, {file name: bytes, or None for a folder}, message): read_asset(value) under a root
    # holding those files raises ValueError matching message.
    bad_files: tuple = ()
    # The frame-pair ladder: rungs the editor gives, instances drawn with default_rng(ladder_seed).
    rungs: tuple[int, ...] | None = None  # None: those the modality makes (`ladder.ladder_rungs`)
    ladder_instances: int = 4
    ladder_seed: int = 5
    round_trip_config: dict = {}
    # Whether the table stores what `write_asset` returned: the input's value in the first input
    # column and the candidate's in the candidate column (False where it stores something else,
    # e.g. text keeps the transcripts themselves).
    stores_written_values: bool = True

    def unit_instance(self):
        """A small EditInstance of this modality (frame B: the mouth moved)."""
        raise NotImplementedError(f"{type(self).__name__} must define unit_instance()")

    def _call(self, hook: str, **kwargs):
        return plugins.call(hook, self.modality, **kwargs)

    # -- works alone ---------------------------------------------------------------------------
    def test_works_alone_and_not_without_it(self, ctx, monkeypatch, request):
        """Loaded alone it provides its modality and `maskscore list-plugins` shows it with every
        modality hook; not loaded, nothing answers for the modality."""
        distribution = self.distribution or distribution_of(Path(request.node.path).resolve().parent)
        assert distribution, f"no pyproject.toml above {request.node.path} names the plugin's distribution"
        monkeypatch.setenv("MASKSCORE_LOAD_PLUGINS", distribution)
        plugins.reset()
        check_modality_plugin_alone(self.modality, distribution, monkeypatch, target=self.unit_instance().a, ctx=ctx)

    def test_other_modalities_are_not_answered(self, ctx):
        """Asked about a modality nobody registered, the core names it in NoPluginError: this
        plugin's hooks answer only for the modality it registered."""
        other = f"not-{self.modality}"
        with pytest.raises(plugins.NoPluginError, match=other):
            plugins.call("mask_part", other, modality=other, part="mouth", ctx=ctx)
        assert self._call("mask_part", modality=self.modality, part="mouth", ctx=ctx) is not None

    # -- one real round trip -------------------------------------------------------------------
    def test_round_trip(self, tmp_path):
        """Encode frames B and A, write them, decode them, score them (2 views of 32 px): frame B
        (the ideal edit) beats frame A on instruction_following, frame A keeps consistency."""
        check_round_trip(modality_round_trip(self.modality, tmp_path, dict(self.round_trip_config)))

    # -- reward rows ---------------------------------------------------------------------------
    def reward_rows(self, ctx, root: Path, scores=(0.8,)):
        """Frame A written as the input and frame B as the one candidate under root/assets, and
        a row of each dimension. Returns (instance, [input value, candidate value], rows)."""
        instance = self.unit_instance()
        if CONDITIONING_IMAGE in plugins.modality(self.modality).input_columns:
            reward_tables.render_conditioning_image(instance, root, ctx)  # as the dataset stage does
        values = []
        for target, name in ((instance.a, "input"), (instance.b, "rung1")):
            asset = self._call("encode", modality=self.modality, target=target, ctx=ctx)
            values.append(self._call("write_asset", asset=asset, directory=root / "assets", name=name, ctx=ctx))
        rows = [
            self._call("reward_row", modality=self.modality, instance=instance, input_value=values[0],
                       candidate_values=values[1:], scores=list(scores), dimension=dimension, root=root, ctx=ctx)
            for dimension in vocab.DIMENSIONS
        ]  # fmt: skip
        return instance, values, rows

    def test_reward_rows_validate_against_the_schema(self, ctx, tmp_path):
        """Rows have the table's columns in order, build an Arrow table, point at a written
        conditioning image (tables that have one); a score count or dimension that does not fit
        is refused."""
        instance, values, rows = self.reward_rows(ctx, tmp_path)
        table_name = schemas.table_for_modality(self.modality)
        assert all(list(row) == schemas.arrow_schema(table_name).names for row in rows)
        table = schemas.to_table(table_name, rows)
        assert table.column("dimension").to_pylist() == list(vocab.DIMENSIONS)
        if "conditioning_image" in rows[0]:
            assert (tmp_path / rows[0]["conditioning_image"]).is_file()
        modality = plugins.modality(self.modality)
        if modality.suffixes:  # files under the dataset root, named by the base class's rule
            suffix = modality.suffixes[0]
            assert values == [f"assets/{name}{'' if suffix.startswith('/') else suffix}" for name in ("input", "rung1")]
        if self.stores_written_values:
            assert table.column(modality.input_columns[0].name).to_pylist() == [values[0]] * len(rows)
            assert table.column(modality.candidate_column.name).to_pylist() == [[values[1]]] * len(rows)
        self.check_rows(table, values, instance, ctx)
        row_args = dict(modality=self.modality, instance=instance, input_value=values[0], candidate_values=values[1:],
                        root=tmp_path, ctx=ctx)  # fmt: skip
        rl_row = self._call("reward_row", scores=[], dimension="overall", **row_args)  # RL data: no scores
        assert schemas.to_table(table_name, [rl_row]).column("scores").to_pylist() == [[]]
        with pytest.raises(ValueError, match="2 scores for 1 candidates"):
            self._call("reward_row", scores=[0.9, 0.1], dimension="overall", **row_args)
        with pytest.raises(ValueError, match="unknown dimension"):
            self._call("reward_row", scores=[0.9], dimension="beauty", **row_args)

    def check_rows(self, table, values, instance, ctx) -> None:
        """The plugin's own column checks on the rows `reward_rows` made (values: what
        write_asset returned for the input and the candidate; files under ctx.workdir)."""

    # -- bad files -----------------------------------------------------------------------------
    def test_bad_files_are_rejected(self, ctx, tmp_path, bad_file):
        value, files, message = bad_file
        for name, content in files.items():
            path = tmp_path / name
            if content is None:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            self._call("read_asset", modality=self.modality, value=value, root=tmp_path, ctx=ctx)

    # -- the ladder ----------------------------------------------------------------------------
    def ladder_filter(self, instance, ctx) -> bool:
        """Whether the ladder test covers this built-in instance (all, unless overridden)."""
        return True

    @pytest.mark.slow
    def test_ladder_is_recovered_on_built_in_trials(self, ctx, built_in_trials):
        """The frame-pair editor's rungs, scored by render-compare, rank as the design expects
        (`check_ladders`) on the first built-in instances of this modality."""
        instances = make_instances(built_in_trials, self.modality, np.random.default_rng(self.ladder_seed), self.ladder_instances)
        ladders = []
        for instance in (i for i in instances if self.ladder_filter(i, ctx)):
            candidates = plugins.call("edit", "frame-pair", editor="frame-pair", modality=self.modality, instance=instance, ctx=ctx)
            assert [c.rung for c in candidates] == list(self.rungs or ladder_rungs(self.modality)), instance.key
            assert all(c.asset.modality == self.modality for c in candidates), instance.key
            scores = plugins.call("score", "render-compare", scorer="render-compare", instance=instance, candidates=candidates, ctx=ctx)
            ladders.append((instance, candidates, scores))
        assert ladders, f"no built-in {self.modality} instance passes ladder_filter"
        self.check_ladders(ladders)

    def check_ladders(self, ladders) -> None:
        """Default: on every instance, overall strictly decreases down the rungs."""
        for instance, _, scores in ladders:
            overall = [s.overall for s in scores]
            assert all(a > b for a, b in itertools.pairwise(overall)), f"{instance.key} ({instance.instruction.part}): {overall}"


class SpokenModalityContract(ModalityContract):
    """The contract of a modality that carries only what is said (speech, text): references are
    frame A's and B's words decoded as a candidate of frame A's voice is, on frame A's body, and
    only the mouth and jaw are parts. `unit_instance` must give frame A a clip of 30 frames and
    frame B a longer one."""

    def test_references_decode_as_candidates_do_on_frame_a_body(self, ctx):
        """Frame B's reference is frame B encoded and decoded like any candidate (the exact edit
        scores 1 against it), frame A's differs from it in the jaw."""
        instance = self.unit_instance()
        ref_a, ref_b = (
            self._call("decode_reference", modality=self.modality, instance=instance, which=which, ctx=ctx) for which in "ab"
        )
        asset = self._call("encode", modality=self.modality, target=instance.b, ctx=ctx)
        as_candidate = self._call("decode_to_mesh", asset=asset, instance=instance, ctx=ctx)
        np.testing.assert_array_equal(ref_b.activations, as_candidate.activations)
        assert len(ref_b.frames) == len(as_candidate.frames)
        for mine, theirs in zip(ref_b.frames, as_candidate.frames):
            np.testing.assert_array_equal(mine, theirs)
        assert max(np.abs(fa - fb).max() for fa, fb in zip(ref_a.frames, ref_b.frames)) > 2e-3  # the jaw
        with pytest.raises(ValueError, match="'a' or 'b'"):
            self._call("decode_reference", modality=self.modality, instance=instance, which="x", ctx=ctx)

    def test_frame_b_decodes_to_mouth_motion_on_frame_a_body(self, ctx):
        """Frame B encoded and decoded: mouth and jaw actions on the timeline of the longer clip,
        nothing else moving, the sampled frames' meshes beside them."""
        from maskscore_core.body.anny_model import get_body_model
        from maskscore_core.speech.spoken_mesh import DEFAULT_SAMPLED_FRAMES

        instance = self.unit_instance()
        asset = self._call("encode", modality=self.modality, target=instance.b, ctx=ctx)
        decoded = self._call("decode_to_mesh", asset=asset, instance=instance, ctx=ctx)
        acts, body = decoded.activations, get_body_model()
        assert acts.shape == (max(len(instance.a.states), len(instance.b.states)), 52)
        assert acts[:, body.action_index("jawOpen")].max() > 0.1  # the mouth moves
        assert not acts[:, body.action_index("eyeBlinkLeft")].any()  # only mouth and jaw
        assert len(decoded.frames) == DEFAULT_SAMPLED_FRAMES

    def test_masks_are_face_actions(self, ctx):
        assert "jawOpen" in self._call("mask_part", modality=self.modality, part="mouth", ctx=ctx).native
        with pytest.raises(ValueError, match="antenna"):
            self._call("mask_part", modality=self.modality, part="antenna", ctx=ctx)
        for part in ("ears", "irides", "eyebrow"):
            with pytest.raises(PartError, match="only the mouth and jaw"):
                self._call("mask_part", modality=self.modality, part=part, ctx=ctx)
