"""Writer-R1: train the System 2 Writer (SFT, then speaker-conditioned GRPO).

``rewards`` is pure (numpy/scipy only); ``trajectories`` needs the store for ``collect``;
``sft``, ``grpo`` and ``evaluate`` need the optional extra ``graphmem[train]`` (transformers,
TRL, PEFT, datasets). Source: SpeakerMem-R1 §4 and App. E.
"""
