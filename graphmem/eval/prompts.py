"""Prompts of the evaluation: the binary judge, the SocialMem rubric and the baselines' answerer.

Written for graphmem after SpeakerMem-R1 App. I.7 (Prompt 6, binary judge; Prompt 7, SocialMem
scoring rubric): the same inputs, the same output contract (a last line ``Final: Correct`` or
``Final: Incorrect``; a JSON object ``{"score", "rationale"}``) and the same scoring rules, in
our own words. The baselines' answer prompt is a plain retrieval-augmented one; it ends in the
same abstention sentence as graphmem's answerer so that abstention questions (LoCoMo
adversarial, GroupMem abstention) are answered alike by every system.
"""

from __future__ import annotations

from graphmem.query.prompts import ABSTAIN

JUDGE_SYSTEM = """\
You judge, strictly, whether an agent's answer to a question agrees with the gold answer.
An answer that says the same thing in other words is correct; an answer that contradicts the
gold answer, misses its substance or credits it to the wrong person is not.
Start with a short paragraph of reasoning. Then give your judgment on a line of its own,
written exactly as one of:
Final: Correct
Final: Incorrect"""

JUDGE_USER = """\
Question: {question}
Gold Answer: {gold}
Agent Answer: {answer}"""

RUBRIC_SYSTEM = """\
You grade AI answers to questions about conversations in social groups.
You give each answer a score from 0.0 to 1.0 for factual correctness, and nothing else."""

RUBRIC_USER = """\
Grade the generated answer against the gold answer with a score from 0.0 to 1.0.

RULES THAT COME FIRST:
1. Length does not matter: a short correct answer scores exactly what a long one does. Do not
   reward quoted evidence and do not punish brevity. Core fact right -> 1.0.
2. Crediting a fact to the wrong person is always a critical error: 0.3 at most, however much
   else is right.
3. An answer saying there is not enough information, or that no memories were retrieved,
   scores 0.0.

General scale:
- 1.0: the core fact is right, credited to the right person, with every required part
- 0.7 to 0.9: the right answer with one minor part missing or slightly imprecise
- 0.4 to 0.6: the right direction but a wrong detail, a key element missing, or ambiguous
- 0.0 to 0.3: wrong person, wrong fact, a contradiction, or no answer

Rules by question type:
- Q1 and Q3: core fact with the right person -> 1.0. For Q3 the score is the fraction of the
  group's members whose positions are recalled correctly.
- Q4 (attribution): names the right speaker and not the foil -> 1.0; the right speaker but
  also the foil -> 0.7; wrong -> 0.0 to 0.3.
- Q5 (theory of mind): 1.0 needs both parts (the preference, and who revealed it through an
  observable action); one part -> 0.5.
- Q8 (temporal shift): old state +0.33, new state +0.33, trigger +0.33; both states without the
  trigger -> 0.7; one state -> 0.4.

Question type: {category}
Question: {question}
Gold answer: {gold}
Generated answer: {answer}

Reply with JSON only, nothing before it:
{{"score": <number from 0.0 to 1.0>, "rationale": "<one sentence>"}}"""

BASELINE_ANSWER_SYSTEM = f"""\
You answer from retrieved messages only: a question about a conversation among several people
comes with the messages retrieved for it, each tagged (speaker @ time, message id).
Credit every fact to the person who said it and keep different people's positions apart.
Sensible inference from the messages is allowed. If the answer could only be reached by
guessing, the messages do not hold it; then reply with exactly this sentence:
{ABSTAIN}
Be brief."""

BASELINE_ANSWER_USER = """\
Question: {question}

Retrieved messages:
{passages}

Answer the question using the retrieved messages."""

#: Markers a scripted test server routes on (each occurs in exactly one system prompt).
MARKERS = {
    "judge": "You judge, strictly, whether an agent's answer",
    "rubric": "You grade AI answers to questions about conversations in social groups",
    "baseline_answer": "You answer from retrieved messages only",
}
