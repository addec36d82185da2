// Set the place of messages in the conversation (computed by graphmem.verbatim.ingest.plan_order).
// Parameters: $group_id (str); $rows (list of maps): id (str), turn_created (int, 0-based
//   position in the group's conversation order), turn (int, 0-based position in its session),
//   search_text (str, previous turn of the session + "speaker: text"), search_grams (str or null:
//   the bigram tokens of its unspaced-script runs, graphmem.core.text.gram_field; null removes it).
// Returns: updated (int).
UNWIND $rows AS row
MATCH (m:Message {group_id: $group_id, id: row.id})
USING INDEX m:Message(group_id, id)
SET m.turn_created = row.turn_created, m.turn = row.turn, m.search_text = row.search_text,
    m.search_grams = row.search_grams
RETURN count(m) AS updated
