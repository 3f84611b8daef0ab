"""Speech and face activation: the machinery shared by the built-in trial source and the speech,
text and video plugins.

text --espeak-ng--> wav --pocketsphinx--> timed phones --visemes--> (T, 52) ARKit actions
--agreement--> SOMA face bone rotations, compared between two sequences.
Text without audio takes the dictionary path: `phone_timeline` gives default phone durations.
"""

from maskscore_core.speech import agreement
from maskscore_core.speech.alignment import align
from maskscore_core.speech.commands import load_commands
from maskscore_core.speech.errors import AlignmentError, AudioFileError, SpeechError, SynthesisError, UnknownWordError
from maskscore_core.speech.face_drive import audio_activations, text_activations
from maskscore_core.speech.phone import Phone
from maskscore_core.speech.phonemes import phone_durations, phone_timeline, text_phones
from maskscore_core.speech.synthesis import synthesize, voices
from maskscore_core.speech.visemes import activations_from_phones

__all__ = [
    "AlignmentError",
    "AudioFileError",
    "Phone",
    "SpeechError",
    "SynthesisError",
    "UnknownWordError",
    "activations_from_phones",
    "agreement",
    "align",
    "audio_activations",
    "load_commands",
    "phone_durations",
    "phone_timeline",
    "synthesize",
    "text_activations",
    "text_phones",
    "voices",
]
