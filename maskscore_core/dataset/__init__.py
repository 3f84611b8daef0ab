"""MaskScore's three datasets (bench, reward-train, rl-train) and the bench evaluation.

One concept per module: `splits` (which subjects are held out), `plan` (the build config and
its fixed shard plan), `shard` (one shard's data flow, committed atomically), `runner` (runs the
plan locally or on Ray, resumes), `leakage` (the held-out gate), `card` (README + content hash),
`reader` (rows back as instances and candidates), `protocol` (ladder pairs), `metrics`,
`evaluate` (the EditReward-Bench protocol with a result cache), `report`, `contact_sheet`.
"""
