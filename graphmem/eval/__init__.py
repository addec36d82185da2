"""Evaluation (SpeakerMem-R1 §5.1, App. C, D, F, G, H, prompts I.7).

Pure metrics (no database, no model): :mod:`graphmem.eval.metrics` (token-F1, judge parsing,
binary accuracy, LoCoMo official F1, MeanQ/MeanN and the bootstrap CI, recall@k) and
:mod:`graphmem.eval.speaker_levenshtein` (the Writer's structural score).

Benchmark runs: :mod:`~graphmem.eval.benchmarks` (units, categories, gold evidence, group ids),
:mod:`~graphmem.eval.systems` (graphmem with its ablations, BM25, Embed, full context),
:mod:`~graphmem.eval.baselines` (the baselines' retrieval and answering),
:mod:`~graphmem.eval.judge` and :mod:`~graphmem.eval.prompts` (binary judge, SocialMem rubric),
:mod:`~graphmem.eval.runner` (resumable runs with per-question records),
:mod:`~graphmem.eval.report` (markdown report, summary JSON, PNG plots),
:mod:`~graphmem.eval.compare` (verdict agreement with published per-question records) and
:mod:`~graphmem.eval.published` (the paper authors' published figures, ``published.json``).
The command line is :mod:`graphmem.cli.eval`; the guide is ``docs/eval.md``.
"""
