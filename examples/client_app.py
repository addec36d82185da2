"""A small app on graphmem's typed client: load a group chat, ask about it, cite the messages.

Start the API first (`graphmem serve`), then: `python examples/client_app.py [URL] [GROUP]`.
"""
import json
import os
import sys
from pathlib import Path

from graphmem.client import GraphMemClient

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
group = sys.argv[2] if len(sys.argv) > 2 else "client-demo"
chat = [json.loads(line) for line in Path(__file__).with_name("sample_chat.jsonl").open(encoding="utf-8")]
fields = ("id", "session", "speaker", "speaker_id", "text", "ts", "reply_to")

with GraphMemClient(url, api_key=os.environ.get("GRAPHMEM_API_KEY")) as gm:
    wrote = gm.append_messages(group, [{k: m[k] for k in fields if k in m} for m in chat], name="Trail trip")
    print(f"appended {wrote.messages_written} messages ({wrote.messages_skipped} were there already)")
    print("people:", ", ".join(p.name for p in gm.roster(group)))
    result = gm.ask(group, "Which trail did the family choose, and does Ben agree?")
    print("answer:", result.answer or "(no answer model set: the evidence below is what it would get)")
    said = {m["id"]: m for m in chat}
    for mid in result.message_ids[:5]:
        print(f"  [{mid}] {said[mid]['speaker']}: {said[mid]['text']}")
