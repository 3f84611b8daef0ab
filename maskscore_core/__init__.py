"""MaskScore: self-supervised, multimodal edit scoring by render-and-compare on the ANNY mesh.

Plugins import `hookimpl` and the objects they register from here; everything else lives in its
own module. Importing the package sets this process's malloc to keep freed buffers
(`maskscore_core.allocator`).
"""

# First, before any library starts threads of its own: one malloc arena for the process, and
# large freed buffers kept for the next row (`allocator`: a thread's arena, once made, stays).
from maskscore_core import allocator as _allocator

_allocator.keep_freed_buffers()

from maskscore_core.plugin.hookspecs import hookimpl  # noqa: E402
from maskscore_core.plugin.registration import Column, Editor, Modality, Scorer, Source, Trainer  # noqa: E402

__all__ = ["Column", "Editor", "Modality", "Scorer", "Source", "Trainer", "hookimpl"]
