"""Built-in source plugin `speakingfaces`: trials from a local SpeakingFaces copy
(maskscore_core.trials.speakingfaces).

The `extract` hook's config dict maps onto `SpeakingFacesConfig`; `path` is the dataset root.
Outputs go under `<ctx.workdir>/sources/speakingfaces`; utterances that fail (a missing or
corrupt file, a clip too short) are listed with the file they name in
`<ctx.workdir>/sources/speakingfaces/speakingfaces/failures.json`, and the others load.
"""

from __future__ import annotations

from maskscore_core import Source, hookimpl

NAME = "speakingfaces"


@hookimpl
def register_sources(register):
    register(Source(NAME, "trials from a local SpeakingFaces copy"))


@hookimpl
def extract(source, config, ctx):
    from maskscore_core.trials.speakingfaces import SpeakingFacesConfig, load_trials

    options = SpeakingFacesConfig.from_dict(dict(config or {}))
    return load_trials(options.path, options, ctx.workdir / "sources" / NAME)
