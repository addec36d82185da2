// Messages of one group in conversation order, for the Writer.
// Parameters: $group_id (str); $pending_only (bool, true = only messages no Segment covers yet).
// Returns, ordered by turn_created: id, channel, session, turn (int), ts (str), instant (float),
//   turn_created (int), text, speaker (display name), person_id (str), kind (str: "", "bot",
//   "system"), no_text (bool), edits (int, earlier texts kept: the text's version, which a
//   segment write compares, memory/lock_segment).
MATCH (m:Message {group_id: $group_id})
WHERE NOT coalesce($pending_only, false) OR NOT EXISTS { (m)<-[:COVERS]-(:Segment) }
OPTIONAL MATCH (m)-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.channel AS channel, m.session AS session, m.turn AS turn, m.ts AS ts,
       m.instant AS instant, m.turn_created AS turn_created, m.text AS text,
       m.speaker AS speaker, coalesce(p.id, m.speaker) AS person_id,
       coalesce(m.kind, '') AS kind, coalesce(m.no_text, false) AS no_text,
       size(coalesce(m.text_history, [])) AS edits
ORDER BY turn_created
