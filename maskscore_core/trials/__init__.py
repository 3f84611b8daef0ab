"""Trial sources: the built-in ANNY source (subjects, clips) and the SpeakingFaces loader.

A trial is one clip of one subject, the undivided unit every modality derives from. Modules are
imported explicitly (`from maskscore_core.trials import anny_source`) so that loading one source
never pays for another.
"""
