"""MaskScore's learned reward model (stage 3 of the loop, docs/loop.md).

Registers the scorer `reward-model` (the three dimensions predicted from a pose candidate, its
frame A and the asked edit) and its trainer `reward-model` (`maskscore train reward`).
"""

from maskscore_core import hookimpl
from maskscore_core.plugin.registration import Scorer, Trainer

NAME = "reward-model"


@hookimpl
def register_scorers(register):
    register(Scorer(NAME, "MLP on a pose candidate's bones next to frame A's and the asked edit's"))


@hookimpl
def register_trainers(register):
    register(Trainer(NAME, "stage 3: the reward model on reward-train rows scored by render-compare"))


@hookimpl
def score(scorer, instance, candidates, ctx):
    from . import scorer as model

    return model.score(instance, candidates, ctx)


@hookimpl
def train(trainer, options, ctx):
    from . import training

    return training.run(options, ctx)
