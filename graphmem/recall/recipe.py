"""The recall pool's recipe: one typed config per stage, checked at construction.

A :class:`RecallRecipe` is composed of five stage configs, in the order the pool runs them:

- :class:`LexicalStage`: Lucene's candidates of the group re-scored with the group's own BM25
  statistics (:mod:`graphmem.recall.lexical`), the issue's terms and neighbour smoothing;
- :class:`DenseStage`: the dense ranking (question plus issue vector), optionally over a
  context window of NEXT neighbours;
- :class:`AnchorStage`: the sub-pools of the question's anchors (named persons, members, time)
  and the pool places reserved for them;
- :class:`FusionStage`: weighted reciprocal-rank fusion; the one home of the RRF constants;
- :class:`LearnedStage`: which rerankers (:mod:`graphmem.recall.rerank`) order the fused pool.

A combination in which a setting cannot take effect (a learned tail without the learned head,
smoothing without group-local BM25, ...) is refused with :class:`RecipeError` naming the
fields. The product builds one recipe, :data:`SPEAKERMEM_POOL`; a lab variant is another recipe
made from it with :meth:`RecallRecipe.evolve` (which validates again, unlike pydantic's
``model_copy``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from graphmem.core.errors import InvalidInputError

__all__ = [
    "FULLTEXT_CANDIDATES", "SEARCH_RRF_K", "AnchorStage", "DenseStage", "FusionStage", "LearnedStage",
    "LexicalStage", "RECIPE_VARIANTS", "RecallRecipe", "RecipeError", "SPEAKERMEM_POOL", "named_recipe",
]

FULLTEXT_CANDIDATES = 200
"""Lucene candidates of the group re-scored with the group-local BM25 (at least)."""


class RecipeError(InvalidInputError):
    """A recall recipe whose settings contradict each other (``field``: the first one named)."""


class _Stage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LexicalStage(_Stage):
    """The fulltext ranking.

    Attributes:
        depth: Lucene candidates of the group re-scored (and the ranking's depth).
        local_bm25: re-score them with the group's own statistics (False: Lucene's index-wide
            order, which moves when other groups are loaded).
        issue_terms: extra weight of Project's issue terms in the BM25 query (0: none).
        neighbour_share: share of the larger BM25 score of its NEXT neighbours a turn gains
            (:func:`graphmem.recall.lexical.smooth`; 0: none; only with ``local_bm25``).
    """

    depth: int = Field(default=FULLTEXT_CANDIDATES, ge=1)
    local_bm25: bool = True
    issue_terms: float = Field(default=0.5, ge=0)
    neighbour_share: float = Field(default=0.5, ge=0, le=1)


class DenseStage(_Stage):
    """The dense ranking.

    Attributes:
        depth: depth of the dense ranking over the group's messages.
        issue_vector: weight of the issue in the query vector: unit(q) + w * unit(issue) (0: the
            question alone).
        context_share: a turn's dense score is its cosine plus context_share x the mean cosine of
            its NEXT neighbours (0: the turn alone, no context window).
        context_depth: the context window re-scores the dense top context_depth and their NEXT
            neighbours (no scan of the whole group).
    """

    depth: int = Field(default=40, ge=1)
    issue_vector: float = Field(default=1.0, ge=0)
    context_share: float = Field(default=0.5, ge=0)
    context_depth: int = Field(default=80, ge=1)

    @property
    def context_window(self) -> bool:
        return self.context_share > 0


class AnchorStage(_Stage):
    """The anchors' sub-pools (SpeakerMem-R1 §3.3 Anchor) and their reserved places.

    Attributes:
        person_depth: depth of each named person's sub-pool rankings.
        person_budget: pool places reserved for each named person's best turns.
        member_budget: places reserved per member in "each / every / who never" questions.
        time_depth: depth of the time anchor's ranking (messages of named days, months, sessions).
        time_budget: pool places reserved for the time anchor's best turns.
        change_budget: for change questions, the earliest and latest of this many best turns are
            kept in the pool (0: none).
        person_exact_max: a named person with at most this many SOURCE relationships is scored
            exactly over all their messages.
        person_oversample: one with more, in a group with its own vector index, is read from it
            when that is less work: the group's max(4 k, oversample * k * group size / degree)
            nearest messages, the person's kept (>= 1).
    """

    person_depth: int = Field(default=20, ge=1)
    person_budget: int = Field(default=2, ge=0)
    member_budget: int = Field(default=1, ge=0)
    time_depth: int = Field(default=20, ge=1)
    time_budget: int = Field(default=2, ge=0)
    change_budget: int = Field(default=0, ge=0)
    person_exact_max: int = Field(default=500, ge=0)
    person_oversample: float = Field(default=2.0, ge=1)


class FusionStage(_Stage):
    """Weighted reciprocal-rank fusion: ``score = sum_r w_r / (rrf_k + rank_r)``.

    Attributes:
        depth: how deep the fulltext and dense rankings enter the fusion.
        w_fulltext, w_vector, w_person, w_member, w_time: the rankings' weights (w_member: each
            member's sub-pool in "each / every" questions). w_fulltext is 0.7 since the encoder
            carries graphmem's chat update: out of fold it lifts LoCoMo R@10 by 0.004 with
            SocialMem equal (thirteenth round, docs/lab/recall-rounds.md; 1.0 before, the
            ``fulltext-weight-1`` variant).
        rrf_k: the pool's constant; smaller lets a turn near the top of one ranking outrank one
            in the middle of all of them.
        head_n: with the context window on, the pool's first head_n come from the fusion with
            ``rrf_k`` and the context window, the rest from one with ``tail_rrf_k`` and each
            turn's own cosine (0: one fusion); the learned head re-ranks these places. The
            default S1_TOP_K: the excerpts without a model.
        tail_rrf_k: the constant of the second fusion (None: there is none; only with the
            dense context window).
        search_rrf_k: the constant of ``graphmem search``'s fusion of its fulltext and dense
            rankings (:func:`graphmem.recall.search.search_messages`; also the default of
            ``GRAPHMEM_RRF_K``, System 2's): the usual constant, which favours agreement.
    """

    depth: int = Field(default=40, ge=1)
    w_fulltext: float = Field(default=0.7, ge=0)
    w_vector: float = Field(default=1.0, ge=0)
    w_person: float = Field(default=0.5, ge=0)
    w_member: float = Field(default=0.0, ge=0)
    w_time: float = Field(default=1.0, ge=0)
    rrf_k: int = Field(default=20, ge=1)
    head_n: int = Field(default=10, ge=0)
    tail_rrf_k: int | None = Field(default=60, ge=1)
    search_rrf_k: int = Field(default=60, ge=1)


class LearnedStage(_Stage):
    """The rerankers of the fused pool (:mod:`graphmem.recall.rerank`).

    Attributes:
        head: re-rank the pool's first ``fusion.head_n`` places by the learned head score
            (False: the fusion's order).
        head_sentences: the head score also weighs each turn's rank and score gap in the turns
            ranked by their best sentence (``Message.sentence_embeddings``; weights
            ``head_sent.json``; False: ``head.json``, the sixth round's features); only with
            ``head``. Ninth round (docs/lab/recall-rounds.md).
        tail_places: the pool's last places chosen by the learned tail score among the pool's
            tail and the deeper candidates the reads returned (0: the fusion's); only with the
            learned head and the dense context window.
        sentence_load_max: the largest group (messages, by write position) whose sentence matrix
            (the tail's sentence ranking, :func:`graphmem.recall.cache.sentence_ranking`) a query
            loads while it waits (about 0.3 s for 650 messages); a larger one loads in the
            background.
    """

    head: bool = True
    head_sentences: bool = True
    tail_places: int = Field(default=10, ge=0)
    sentence_load_max: int = Field(default=5000, ge=0)


class RecallRecipe(_Stage):
    """How the System 1 recall pool is built, stage by stage (see the module docstring).

    Raises:
        RecipeError: (at construction) a setting that cannot take effect with the others.
    """

    lexical: LexicalStage = LexicalStage()
    dense: DenseStage = DenseStage()
    anchors: AnchorStage = AnchorStage()
    fusion: FusionStage = FusionStage()
    learned: LearnedStage = LearnedStage()

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            err = e.errors()[0]
            msg = str(err["msg"]).removeprefix("Value error, ")
            where = ".".join(str(p) for p in err["loc"]) or msg.split(":", 1)[0]
            text = msg if msg.startswith(where) else f"{where}: {msg}"
            raise RecipeError(f"recall recipe refused: {text}", field=where) from e

    @model_validator(mode="after")
    def _only_with(self) -> RecallRecipe:
        rules = (
            (self.lexical.neighbour_share > 0 and not self.lexical.local_bm25,
             "lexical.neighbour_share", "smoothing re-scores group-local BM25: only with lexical.local_bm25"),
            (self.fusion.tail_rrf_k is not None and not self.dense.context_window,
             "fusion.tail_rrf_k", "the second fusion uses the plain dense order beside the context window: "
                                  "only with dense.context_share > 0 (else tail_rrf_k=None)"),
            (self.learned.head and self.fusion.head_n <= 0,
             "learned.head", "the learned head re-ranks the first fusion.head_n places: only with head_n > 0"),
            (self.learned.head_sentences and not self.learned.head,
             "learned.head_sentences", "the sentence-aware head is a learned head: only with learned.head"),
            (self.learned.tail_places > 0 and not self.learned.head,
             "learned.tail_places", "the learned tail follows the learned head: only with learned.head"),
            (self.learned.tail_places > 0 and not self.dense.context_window,
             "learned.tail_places", "the learned tail's features were fitted with the context window: "
                                    "only with dense.context_share > 0"),
        )
        for broken, where, why in rules:
            if broken:
                raise ValueError(f"{where}: {why}")
        return self

    def evolve(self, **stages: dict[str, Any]) -> RecallRecipe:
        """This recipe with some stage fields changed, validated again.

        ``SPEAKERMEM_POOL.evolve(learned={"tail_places": 0})``; each keyword is a stage name
        with a dict of that stage's fields.

        Raises:
            RecipeError: an unknown stage or field, or a combination refused by the rules.
        """
        data = self.model_dump()
        for stage, update in stages.items():
            if stage not in data:
                raise RecipeError(f"recall recipe has no stage {stage!r}", field=stage)
            data[stage] = {**data[stage], **update}
        return RecallRecipe(**data)


SPEAKERMEM_POOL = RecallRecipe()
"""The product's recall pool: the one recipe every benchmark and every face uses (docs/query.md)."""

SEARCH_RRF_K = SPEAKERMEM_POOL.fusion.search_rrf_k
"""``search_messages``' default RRF constant (the product recipe's ``fusion.search_rrf_k``)."""


RECIPE_VARIANTS: dict[str, dict[str, dict[str, Any]]] = {
    "speakermem": {},
    "no-head-sentences": {"learned": {"head_sentences": False}},
    "no-learned-tail": {"learned": {"tail_places": 0}},
    "no-learned": {"learned": {"head": False, "head_sentences": False, "tail_places": 0}},
    "no-context": {"dense": {"context_share": 0.0}, "fusion": {"tail_rrf_k": None}, "learned": {"tail_places": 0}},
    "fulltext-weight-1": {"fusion": {"w_fulltext": 1.0}},
}
"""Named variants of :data:`SPEAKERMEM_POOL` for ablations (``graphmem eval run --recipe NAME``,
``bench/eval_retrieval.py --recipes``): name -> the stage fields changed (:meth:`RecallRecipe.evolve`).
``speakermem`` is the product's recipe; each ``no-...`` turns one stage (and what cannot run
without it) off; ``fulltext-weight-1`` is the fusion's weights before the thirteenth round."""


def named_recipe(name: str) -> RecallRecipe:
    """The recipe of a :data:`RECIPE_VARIANTS` name.

    Raises:
        RecipeError: an unknown name (the message lists the known ones).
    """
    if name not in RECIPE_VARIANTS:
        raise RecipeError(f"unknown recall recipe {name!r}; known: {', '.join(RECIPE_VARIANTS)}", field="recipe")
    return SPEAKERMEM_POOL.evolve(**RECIPE_VARIANTS[name])
