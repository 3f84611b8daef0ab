"""The run config keys the native editor reads, declared where it is registered (no torch here)."""

from __future__ import annotations

import attrs

from maskscore_core.plugin.context import setting


@attrs.frozen
class NativeEditorOptions:
    """The run config keys the editor reads (`ctx.config.options`); an unset one falls back to
    its environment variable, then to the default."""

    native_editor: str | None = setting(None, lambda v: v is None or (isinstance(v, str) and bool(v)),
                                        "a checkpoint directory", lambda v: v if v is None else str(v))  # fmt: skip
    native_editor_samples: int | None = setting(None, lambda v: v is None or (isinstance(v, int) and v >= 1),
                                                "a whole number of at least 1", int)  # fmt: skip
    native_editor_eta: float | None = setting(None, lambda v: v is None or (isinstance(v, float) and v >= 0),
                                              "a number of at least 0", float)  # fmt: skip
