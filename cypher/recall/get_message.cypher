// One whole message of one group by id (GET /groups/{id}/messages/{message_id}, MCP get_message).
// Parameters: $group_id (str); $message_id (str).
// Returns (no row for an unknown message): id, channel, speaker, person_id (str or null), session,
//   turn (int), ts, text (str, exactly as stored), turn_created (int), reply_to (str or null),
//   kind (str or null), edited (bool: the text was edited after it was first stored).
MATCH (m:Message {group_id: $group_id, id: $message_id})
OPTIONAL MATCH (m)-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.channel AS channel, m.speaker AS speaker, p.id AS person_id,
       m.session AS session, m.turn AS turn, m.ts AS ts, m.text AS text,
       m.turn_created AS turn_created, m.reply_to AS reply_to, m.kind AS kind,
       size(coalesce(m.text_history, [])) > 0 OR coalesce(m.edited, false) AS edited
