"""Old-style plugins (plugin_info plus per-modality hooks), adapted to registered objects.

Only while the plugins move to the registration hooks: an old-style modality plugin for one of
the design's eight modalities becomes a `Modality` whose methods call that plugin's own hooks,
with the table, template and task table the core held for it before. Removed once every plugin
registers its objects (docs/plugins.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from . import registration

ORDER = ("mesh", "pose", "keypoints", "depth", "video", "speech", "text", "multimodal")
TEMPLATES = {
    "text": "change the command to {phrase}",
    "mesh": "edit the {part} to match frame B",
    "speech": "resynthesize the {part} to say {phrase}",
    "multimodal": "match the {part} across modalities to frame B",
    "keypoints": "refit the {part} landmarks to frame B",
    "depth": "reconstruct the {part} depth to match frame B",
    "video": "transition the {part} from frame A to frame B",
    "pose": "repose the {part} to frame B's expression",
}
SEQUENCE = ("video", "speech", "text")
CANDIDATES = {
    "text": "output_texts", "mesh": "output_meshes", "speech": "output_audios", "multimodal": "output_candidates",
    "keypoints": "output_keypoints", "depth": "output_depths", "video": "output_videos", "pose": "output_poses",
}  # fmt: skip


def _table_spec(name: str) -> dict:
    here = Path(__file__).resolve().parent
    folder = next((f for f in (here / "_schemas", here.parent / "schemas") if f.is_dir()), here)
    for path in sorted(folder.glob("*EditReward.json")):
        spec = json.loads(path.read_text())
        if spec["modality"] == name:
            return spec
    raise registration.RegistrationError(f"old-style modality {name!r} has no table; register a Modality object")


def _column(spec: dict) -> registration.Column:
    return registration.Column(spec["name"], spec["type"], spec.get("description", ""))


class LegacyModality(registration.Modality):
    """A design modality served by an old-style plugin's hooks."""

    plugin: str

    def _call(self, hook, **kwargs):
        from . import plugins

        return plugins.call(hook, self.name, **kwargs)

    def encode(self, target, ctx):
        return self._call("encode", modality=self.name, target=target, ctx=ctx)

    def decode_reference(self, instance, which, ctx):
        return self._call("decode_reference", modality=self.name, instance=instance, which=which, ctx=ctx)

    def write(self, asset, directory, name, ctx):
        return self._call("write_asset", asset=asset, directory=directory, name=name, ctx=ctx)

    def read(self, value, root, ctx):
        return self._call("read_asset", modality=self.name, value=value, root=root, ctx=ctx)

    def row(self, instance, input_value, candidate_values, scores, dimension, root, ctx):
        return self._call("reward_row", modality=self.name, instance=instance, input_value=input_value,
                          candidate_values=candidate_values, scores=scores, dimension=dimension, root=root, ctx=ctx)  # fmt: skip


def _task_table(name: str) -> dict:
    from . import edits, vocab

    return {
        "mesh": edits.with_appearance(edits.STATIC_TASKS),
        "depth": dict(edits.WITHOUT_GAZE),
        "keypoints": {p: t for p, t in edits.WITHOUT_GAZE.items() if p not in vocab.ACCESSORY_PARTS},
        "pose": {p: "pose_change" for p in edits.MOTION_PARTS if p != "eyebrow"},
        "multimodal": {p: "cross_modal_compose" for p in edits.MOTION_PARTS},
        "video": edits.with_appearance({p: "temporal_edit" for p in edits.MOTION_PARTS}),
        "speech": {"mouth": "speech_edit"},
        "text": {"mouth": "speech_edit"},
    }[name]


def design_attributes(name: str) -> dict:
    """The class attributes of the design modality `name`, as the core held them."""
    if name not in TEMPLATES:
        raise registration.RegistrationError(
            f"old-style modality {name!r} is not one of the design's; register a Modality object (docs/plugins.md)"
        )
    spec = _table_spec(name)
    columns = [_column(c) for c in spec["columns"]]
    candidate = next(c for c in columns if c.name == CANDIDATES[name])
    head = {c.name for c in registration.HEAD_COLUMNS + registration.TAIL_COLUMNS}
    return {
        "name": name, "table": spec["name"],
        "input_columns": tuple(c for c in columns if c.name not in head and c is not candidate),
        "candidate_column": candidate, "template": TEMPLATES[name], "task_table": _task_table(name),
        "sequence": name in SEQUENCE, "order": ORDER.index(name),
        "pairs_by": "words" if name in ("speech", "text") else "part",
    }  # fmt: skip


def _legacy_modality(name: str, plugin_name: str) -> registration.Modality:
    from . import plugins

    impl = plugins._own_impl(plugins.get_plugin_manager(), "ladder_levels", plugin_name)
    levels = impl.function(name) if impl is not None else None
    attributes = {**design_attributes(name), "plugin": plugin_name, "ladder_levels": levels}
    return type(f"Legacy{name.title()}", (LegacyModality,), attributes)()


def registered_object(kind: str, name: str, plugin_name: str):
    """The object an old-style plugin's plugin_info entry stands for."""
    if kind == "modality":
        return _legacy_modality(name, plugin_name)
    return registration.KINDS[kind](name)
