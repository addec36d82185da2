"""Reward values (SpeakerMem-R1 eq. 7-9, 17-21) on the hand-written training networks.

Scores the teacher trajectories of ``examples/train/teacher.jsonl`` and four deliberately
wrong Writers built from them, each replayed through the in-memory Writer state (derive's
prompt, validation and write rules), against the teacher's states and chains:

- ``teacher``       the hand-written actions as they are;
- ``swap``          ADDs on person layers with owner != source filed under the source
                    (the attribution error the owner buckets are meant to catch);
- ``no-update``     every UPDATE written as an ADD with the old record's coordinates;
- ``noop``          a single NOOP at every position;
- ``repeat``        every answer emitted twice in one output (duplicates, no clean stop).

No model and no database. Usage: ``.venv/bin/python bench/train_rewards.py [--qa] [teacher.jsonl]``.
Prints one row per (writer, network): mean R_valid and P over positions, the final state's
Φ_SL and R_chain, R_mem, and the mean per-position return r (eq. 9 without the QA term).

``--qa`` (needs the local Neo4j) adds the terminal QA gain of each final state (eq. 8, 22) on
the shipped questions (``examples/train/questions.jsonl``) through ``ask`` and the judge, with
the *scripted* answerer and judge of ``tests/train_qa_script.py`` (no model: right exactly when
the evidence holds what the question needs), and the return r with the QA term.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

from graphmem.train.evaluate import score_trajectory
from graphmem.train.rewards import position_return
from graphmem.train.state import MemoryState, canonical_completion
from graphmem.train.trajectories import networks, read_steps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.scripted_llm / tests.train_qa_script for --qa


def swap(actions, step):
    out = []
    for a in actions:
        a = copy.deepcopy(a)
        if a.get("action") == "ADD" and a["layer"].startswith("per_speaker") and a["owner"] != a["source"]:
            a["owner"], a["source"] = a["source"], a["owner"]
        out.append(a)
    return out


def no_update(actions, step):
    roster = step.make_roster()
    heads = {h.id: h for h in step.pre_state}
    out = []
    for a in actions:
        if a.get("action") == "UPDATE" and a["entry_id"] in heads:
            h = heads[a["entry_id"]]
            a = {"action": "ADD", "owner": roster.label(h.owner), "source": roster.label(h.source),
                 "layer": h.layer, "utype": h.utype, "content": a["content"]}
        out.append(a)
    return out


WRITERS = {
    "teacher": lambda actions, step: actions,
    "swap": swap,
    "no-update": no_update,
    "noop": lambda actions, step: [{"action": "NOOP"}],
    "repeat": lambda actions, step: list(actions) + list(actions),
}


def main() -> None:
    parser = argparse.ArgumentParser(description="Reward values on the hand-written training networks.")
    parser.add_argument("teacher", nargs="?", type=Path, default=ROOT / "examples/train/teacher.jsonl")
    parser.add_argument("--qa", action="store_true", help="terminal QA gain with the scripted answerer/judge")
    opts = parser.parse_args()
    nets = networks(read_steps(opts.teacher))
    qa, closers = None, []
    if opts.qa:
        from graphmem.core.config import get_settings
        from graphmem.store.db import Store, open_driver, quiet_notifications
        from graphmem.core.embed import Embedder
        from graphmem.train.qa import QAGain, load_questions
        from tests.scripted_llm import ScriptedLLM
        from tests.train_qa_script import make_handler

        server = ScriptedLLM().start()
        server.handler = make_handler()
        quiet_notifications()
        driver = open_driver(get_settings())
        closers = [server.stop, driver.close]
        model = server.chat_model()
        qa = QAGain(Store(driver), Embedder.from_settings(get_settings()), model, model, load_questions(ROOT / "examples/train/questions.jsonl"),
                    settings=get_settings())
        print("QA: scripted answerer and judge (tests/train_qa_script.py), not a model")
    qa_head = f" {'R_QA':>6s} {'QA12':>5s} {'QA1':>5s} {'r+QA':>7s}" if qa else ""
    print(f"{'writer':10s} {'network':10s} {'R_valid':>8s} {'P':>7s} {'Φ_SL':>7s} {'R_chain':>8s} {'R_mem':>7s} "
          f"{'r(eq.9)':>8s}{qa_head}  per-owner F_p (final)")
    try:
        for name, perturb in WRITERS.items():
            for gid, steps in nets.items():
                _row(name, gid, steps, perturb, qa)
    finally:
        for close in closers:
            close()


def _row(name, gid, steps, perturb, qa) -> None:
    answers = iter([canonical_completion(perturb(s.actions, s)) for s in steps])
    first = steps[0]
    state = MemoryState(first.group_id, first.make_roster(), first.pre_state, segments_done=first.index - 1)
    rows = score_trajectory(steps, lambda prompt: (next(answers), "stop"), state)
    T = len(rows)
    returns = [position_return(r_valid=r["validity"]["value"], r_mem=r["r_mem"], penalty=r["penalty"],
                               r_qa=None, t=r["t"], n_positions=T) for r in rows]
    qa_text = ""
    if qa is not None:
        res = qa(steps, list(state.records.values()))
        with_qa = [position_return(r_valid=r["validity"]["value"], r_mem=r["r_mem"], penalty=r["penalty"],
                                   r_qa=res.gain, t=r["t"], n_positions=T) for r in rows]
        qa_text = f" {res.gain:+6.3f} {res.with_s2:5.2f} {res.s1_only:5.2f} {sum(with_qa) / T:7.4f}"
    last = rows[-1]
    rv = sum(r["validity"]["value"] for r in rows) / T
    pen = sum(r["penalty"] for r in rows) / T
    owners = last.get("per_owner", {})
    f_p = " ".join(f"{k}={v:.2f}" for k, v in sorted(owners.items()))
    print(f"{name:10s} {gid:10s} {rv:8.4f} {pen:7.3f} {last['phi_sl']:7.4f} {last['r_chain']:8.4f} "
          f"{last['r_mem']:7.4f} {sum(returns) / T:8.4f}{qa_text}  {f_p}", flush=True)


if __name__ == "__main__":
    main()

