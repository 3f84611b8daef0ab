"""The speech modality: waveforms, the face motion they drive, wav files, rows, bad input."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.contract import SpokenModalityContract
from maskscore_core.plugin.records import Asset, Subject, Target
from maskscore_core.plugin.testing import misordered_pairs, speaking_instance

MODALITY = "speech"


def _instance():
    return speaking_instance(MODALITY, "resynthesize the mouth to say play some music", key="unit-speech-0001")


class TestSpeechContract(SpokenModalityContract):
    """The ladder (`LADDER_LEVELS`): audio moves only the mouth, so there is no rung 4 (another
    part edited); on consistency rungs 1-3 level above rung 5. Rung 1 (frame B's phrase) > rung 2
    (two thirds of B's words) > rung 3 (one third) > rung 5 (another subject's voice, identified
    as theirs and decoded onto that subject's body).
    Seed 0's three subjects speak in en-us+belinda, en-us+aunty and en+travis (voices are dealt
    without replacement, see trials.subjects), which the speaker matcher tells apart."""

    modality = MODALITY
    bad_files = (
        ("missing.wav", {}, "not found"),
        ("corrupt.wav", {"corrupt.wav": b"RIFF\x00\x00junk"}, "not a readable wav"),
    )
    ladder_instances = 3
    ladder_seed = 0

    unit_instance = staticmethod(_instance)
    def check_ladders(self, ladders):
        from maskscore_speech.speaker_body import speaker_body

        out_of_order = {}
        for instance, candidates, scores in ladders:
            assert instance.other is not None and instance.other.subject.voice != instance.a.subject.voice
            # Rung 5 speaks in the other subject's voice, so it is decoded onto their body.
            assert speaker_body(candidates[-1].asset.data.samples, instance)[0] == instance.other.subject.subject_id
            assert scores[1].distances["if.activation"] < scores[-1].distances["if.activation"], instance.key
            misordered = misordered_pairs(MODALITY, scores)
            if misordered:
                out_of_order[instance.key] = misordered
            # The exact edit decodes as frame B's reference does (`decode_reference`): it scores 1.
            assert scores[0].instruction_following == 1.0, instance.key
        assert out_of_order == {}


def test_audio_is_16_bit_and_another_voice_moves_the_mouth_otherwise(ctx):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    assert asset.data.samples.dtype == np.int16 and asset.data.duration_s > 0.5
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    # The same words in another voice: other timings, so other activations.
    other_voice = attrs.evolve(instance.b, subject=attrs.evolve(instance.b.subject, voice="en-gb"))
    other = plugins.call("encode", MODALITY, modality=MODALITY, target=other_voice, ctx=ctx)
    other_acts = plugins.call("decode_to_mesh", MODALITY, asset=other, instance=instance, ctx=ctx).activations
    assert not np.allclose(other_acts, decoded.activations)
    # Decoding again after other audio went through the same aligner gives the very same result.
    again = plugins.call("decode_to_mesh", MODALITY, asset=asset, instance=instance, ctx=ctx)
    np.testing.assert_array_equal(again.activations, decoded.activations)
    np.testing.assert_array_equal(again.vertices, decoded.vertices)


def test_speech_lands_on_the_body_of_the_voice_it_is_in(ctx):
    """The voice says whose body speaks: frame A's subject (male voice) for A's voice whatever the
    words, the other subject (female voice) for theirs, a neutral body for a voice nobody has."""
    from maskscore_speech.speaker_body import UNKNOWN_SPEAKER, speaker_body

    instance = _instance()
    other_subject = Subject("s2", {"age": 0.8, "gender": 0.9, "weight": 0.7}, voice="en-us+f3")
    their_states = tuple(attrs.evolve(s, phenotype=dict(other_subject.phenotype)) for s in instance.a.states[:20])
    instance = attrs.evolve(instance, other=Target("other", other_subject, their_states, "call mom", fps=25.0))

    def spoken(target):
        return plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=ctx)

    assert speaker_body(spoken(instance.b).data.samples, instance)[0] == "s1"  # A's voice, B's words
    who, body = speaker_body(spoken(instance.other).data.samples, instance)
    assert who == "s2" and body == instance.other.states
    stranger = attrs.evolve(instance.b, subject=attrs.evolve(instance.b.subject, voice="en-us+f4"))
    who, body = speaker_body(spoken(stranger).data.samples, attrs.evolve(instance, other=None))
    assert who == UNKNOWN_SPEAKER
    assert all(s.phenotype == {} and s.accessories == () for s in body) and len(body) == len(instance.a.states)
    # On the mesh: the other subject's speech is rendered on their body, not frame A's.
    on_other = plugins.call("decode_to_mesh", MODALITY, asset=spoken(instance.other), instance=instance, ctx=ctx)
    on_a = plugins.call("decode_to_mesh", MODALITY, asset=spoken(instance.b), instance=instance, ctx=ctx)
    assert on_other.vertices.shape == on_a.vertices.shape
    assert np.abs(on_other.vertices - on_a.vertices).max() > 0.02  # another person: centimetres apart


def test_a_word_too_short_to_measure_a_voice_from_is_frame_a_speaking(ctx):
    """espeak-ng's male voices say "stop" with under 10 voiced frames: no voiceprint. Frame A's
    subject is then enrolled from another sentence in their voice, and the word itself is
    decoded onto frame A's body (it cannot rule frame A's subject out), not an error."""
    from maskscore_core.speech.voiceprint import VoiceprintError, voiceprint
    from maskscore_speech.speaker_body import speaker_body

    male = Subject("s1", {"age": 0.4, "gender": 0.1}, voice="en-us+klatt3")
    instance = attrs.evolve(
        _instance(),
        a=attrs.evolve(_instance().a, subject=male, transcript="stop"),
        b=attrs.evolve(_instance().b, subject=male),
    )
    other_subject = Subject("s2", {"age": 0.8, "gender": 0.9}, voice="en-us+aunty")
    instance = attrs.evolve(instance, other=Target("other", other_subject, instance.a.states, "call mom", fps=25.0))

    def spoken(target):
        return plugins.call("encode", MODALITY, modality=MODALITY, target=target, ctx=ctx).data.samples

    with pytest.raises(VoiceprintError, match="voiced frames"):
        voiceprint(spoken(instance.a))
    assert speaker_body(spoken(instance.a), instance) == ("s1", instance.a.states)
    assert speaker_body(spoken(instance.b), instance)[0] == "s1"  # enrolled from another sentence
    assert speaker_body(spoken(instance.other), instance)[0] == "s2"
    decoded = plugins.call("decode_to_mesh", MODALITY, asset=plugins.call("encode", MODALITY, modality=MODALITY, target=instance.a, ctx=ctx), instance=instance, ctx=ctx)
    assert decoded.activations.shape[0] == len(instance.b.states)


def test_wav_round_trip_is_deterministic(ctx, tmp_path):
    instance = _instance()
    asset = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    value = plugins.call("write_asset", MODALITY, asset=asset, directory=tmp_path / "assets", name="b", ctx=ctx)
    assert value == "assets/b.wav"
    again = plugins.call("encode", MODALITY, modality=MODALITY, target=instance.b, ctx=ctx)
    plugins.call("write_asset", MODALITY, asset=again, directory=tmp_path / "assets", name="b2", ctx=ctx)
    assert (tmp_path / "assets/b.wav").read_bytes() == (tmp_path / "assets/b2.wav").read_bytes()
    back = plugins.call("read_asset", MODALITY, modality=MODALITY, value=value, root=tmp_path, ctx=ctx)
    np.testing.assert_array_equal(back.data.samples, asset.data.samples)
    assert back.data.transcript == "play some music"


def test_bad_audio_is_named(ctx, tmp_path):
    samples = np.zeros(800, dtype=np.float64)
    samples[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        plugins.call("write_asset", MODALITY, asset=Asset(MODALITY, _waveform(samples)), directory=tmp_path, name="x", ctx=ctx)
    with pytest.raises(ValueError, match="1-D"):
        _waveform(np.zeros((2, 800)))
    with pytest.raises(ValueError, match="holds a Waveform"):
        plugins.call("decode_to_mesh", MODALITY, asset=Asset(MODALITY, "hello"), instance=_instance(), ctx=ctx)


def _waveform(samples):
    from maskscore_speech.representation import Waveform

    return Waveform(samples)
