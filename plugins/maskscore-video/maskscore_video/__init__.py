"""MaskScore's video modality plugin."""

from maskscore_core import hookimpl
from maskscore_core.records import PluginInfo

MODALITY = "video"


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))
