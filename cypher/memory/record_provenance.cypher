// Provenance of one derived record: the verbatim messages it was written FROM.
// Parameters: $group_id (str); $entry_id (str).
// Returns, in conversation order: id, channel, speaker (display name), person_id, session,
//   turn (int), ts (str), text (the current text), turn_created (int), text_history (list[str],
//   the texts it had before its edits, oldest first; [] when never edited). No rows when the
//   record does not exist.
MATCH (d:Derived {group_id: $group_id, id: $entry_id})-[:FROM]->(m:Message)
OPTIONAL MATCH (m)-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.channel AS channel, m.speaker AS speaker, p.id AS person_id,
       m.session AS session, m.turn AS turn, m.ts AS ts, m.text AS text,
       m.turn_created AS turn_created, coalesce(m.text_history, []) AS text_history
ORDER BY turn_created
