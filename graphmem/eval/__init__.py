"""Evaluation: answer metrics (:mod:`graphmem.eval.metrics`) and the Writer's structural score
(:mod:`graphmem.eval.speaker_levenshtein`). Pure Python; no database, no language model."""
