"""MaskScore: self-supervised, multimodal edit scoring by render-and-compare on the ANNY mesh.

Plugins import `hookimpl` from here; everything else lives in its own module.
"""

from .hookspecs import hookimpl

__all__ = ["hookimpl"]
