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

No model and no database. Usage: ``.venv/bin/python bench/train_rewards.py [teacher.jsonl]``.
Prints one row per (writer, network): mean R_valid and P over positions, the final state's
Φ_SL and R_chain, R_mem, and the mean per-position return r (eq. 9 without the QA term).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

from graphmem.train.evaluate import score_trajectory
from graphmem.train.rewards import position_return
from graphmem.train.state import canonical_completion
from graphmem.train.trajectories import networks, read_steps


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
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "examples/train/teacher.jsonl"
    nets = networks(read_steps(path))
    print(f"{'writer':10s} {'network':10s} {'R_valid':>8s} {'P':>7s} {'Φ_SL':>7s} {'R_chain':>8s} {'R_mem':>7s} {'r(eq.9)':>8s}  per-owner F_p (final)")
    for name, perturb in WRITERS.items():
        for gid, steps in nets.items():
            answers = iter([canonical_completion(perturb(s.actions, s)) for s in steps])
            rows = score_trajectory(steps, lambda prompt: (next(answers), "stop"))
            T = len(rows)
            returns = [position_return(r_valid=r["validity"]["value"], r_mem=r["r_mem"], penalty=r["penalty"],
                                       r_qa=None, t=r["t"], n_positions=T) for r in rows]
            last = rows[-1]
            rv = sum(r["validity"]["value"] for r in rows) / T
            pen = sum(r["penalty"] for r in rows) / T
            owners = last.get("per_owner", {})
            f_p = " ".join(f"{k}={v:.2f}" for k, v in sorted(owners.items()))
            print(f"{name:10s} {gid:10s} {rv:8.4f} {pen:7.3f} {last['phi_sl']:7.4f} {last['r_chain']:8.4f} "
                  f"{last['r_mem']:7.4f} {sum(returns) / T:8.4f}  {f_p}")


if __name__ == "__main__":
    main()
